"""Redaction against detect-secrets: time on adversarial input, and coverage of the redaction corpus.

    pip install detect-secrets     # the peer, measured only (not a dependency of toolpath)
    python benchmarks/bench_redact.py [--mb 10] [--timeout 20] [--no-peer]

Part 1, time. Each input is one string of ``--mb`` MB (one line: a tool result or a log blob the way a redactor
gets it) made of one unit repeated, each unit the prefix of some rule (``a@``, ``sk-``, ``password=``…) so that a
rule that is not linear shows it, plus a realistic mix (the corpus's texts among prose). Rows, in seconds:

  floor: re scan      ``re.search`` of a character the input does not hold (one pass of the regex engine)
  floor: str.count    ``str.count("@")`` (one pass in C)
  toolpath            ``Redactor().text(input)``
  detect-secrets      every plugin's ``analyze_string(input)``, consumed, one after another (the keyword plugin
                      with both its default and its config-file expressions); a plugin still running after
                      ``--timeout`` s is stopped, shown as ``>T``, and named
  slowest plugin      the plugin that took longest on that input

Part 2, coverage. Over ``tests/fixtures/secrets/corpus.toml``: a secret form is covered when replacing what a
tool finds removes the secret from its text (detect-secrets: every value any plugin's ``analyze_string`` yields;
toolpath: ``Redactor().text``), and a clean text is touched when a tool finds anything in it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.secrets_corpus import load  # noqa: E402
from toolpath.redact import Redactor  # noqa: E402

UNITS = {
    "plain letters": "a",
    "a@ (e-mail starts)": "a@",
    "x@y. (e-mail domains)": "x@y.",
    "sk- (key prefixes)": "sk-",
    "AKIA (glued prefixes)": "AKIA",
    "Bearer (schemes)": "Bearer ",
    "://a: (URL user info)": "://a:",
    "password= (assignments)": "password=",
    "passwordpassword (keys, no value)": "password",
    "'token': ' (quoted pairs)": "'token': '",
    "eyJ (JWT starts)": "eyJ",
    "-----BEGIN … PRIVATE KEY----- (no END)": "-----BEGIN RSA PRIVATE KEY-----\n",
    "4111 (card digits)": "4111 ",
    "\\u0041 (JSON escapes)": "\\u0041",
    "aws secret 'x (AWS context)": "aws secret 'x",
}
MIX = "mixed: the corpus among prose"


def adversarial(name: str, size: int) -> str:
    if name == MIX:
        secrets, clean = load()
        prose = "The agent called get_weather for Paris and passed the answer on, as requested. "
        unit = "\n".join(line for s, c in zip(secrets, clean * 5, strict=False) for line in (prose, s.text, c.text))
    else:
        unit = UNITS[name]
    return (unit * (size // len(unit) + 1))[:size]


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def peer_plugins() -> list[tuple[str, Callable[[str], list[str]]]]:
    """detect-secrets' plugins as callables yielding what each finds in a string."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP

    plugins: list[tuple[str, Callable[[str], list[str]]]] = []
    for name, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        plugin = cls()
        plugins.append((name, lambda text, p=plugin: list(p.analyze_string(text))))
        if name == "Secret Keyword":
            config = CONFIG_DENYLIST_REGEX_TO_GROUP
            plugins.append((f"{name} (config files)", lambda text, p=plugin, c=config: list(p.analyze_string(text, c))))
    return plugins


def _peer_child(name: str, size: int, first: int, out: Any) -> None:
    text = adversarial(name, size)
    for index, (plugin, find) in enumerate(peer_plugins()[first:], start=first):
        out.send((index, plugin, None))  # started
        out.send((index, plugin, timed(lambda f=find: f(text))))


def peer_times(name: str, size: int, timeout: float) -> Iterator[tuple[str, float | None]]:
    """Each plugin's seconds on the input (``None``: stopped after ``timeout``), each in a child process that is
    killed when a plugin runs too long, then started again past it."""
    count, first = len(peer_plugins()), 0
    while first < count:
        receive, send = mp.Pipe(duplex=False)
        child = mp.Process(target=_peer_child, args=(name, size, first, send), daemon=True)
        child.start()
        running, started, deadline = "", first, None
        while True:
            if not receive.poll(None if deadline is None else max(0.0, deadline - time.monotonic())):
                child.kill()
                child.join()
                yield running, None
                first = started + 1
                break
            index, plugin, seconds = receive.recv()
            if seconds is None:
                running, started, deadline = plugin, index, time.monotonic() + timeout
                continue
            yield plugin, seconds
            deadline = None
            if index == count - 1:
                child.join()
                first = count
                break


def seconds(value: float | None, timeout: float) -> str:
    return f">{timeout:.0f}" if value is None else f"{value:.3f}"


def time_part(size: int, timeout: float, peer: bool) -> None:
    print(f"\n## Time on {size / 1e6:.0f} MB, one string (seconds)\n")
    header = "| input | floor: re scan | floor: str.count | toolpath |"
    print(header + (" detect-secrets, all plugins | slowest plugin |" if peer else ""))
    print("|---" * (header.count("|") - 1 + (2 if peer else 0)) + "|")
    absent = re.compile("\x00")
    for name in [*UNITS, MIX]:
        text = adversarial(name, size)
        floor_re = timed(lambda t=text: absent.search(t))
        floor_count = timed(lambda t=text: t.count("@"))
        ours = timed(lambda t=text: Redactor().text(t))
        row = f"| {name} | {floor_re:.4f} | {floor_count:.4f} | {ours:.3f} |"
        if peer:
            found = list(peer_times(name, size, timeout))
            stopped = [plugin for plugin, s in found if s is None]
            total = sum(s for _, s in found if s is not None)
            slowest = max(found, key=lambda f: float("inf") if f[1] is None else f[1])
            shown = f">{total + timeout * len(stopped):.0f} ({len(stopped)} stopped)" if stopped else f"{total:.3f}"
            row += f" {shown} | {slowest[0]}: {seconds(slowest[1], timeout)} |"
        print(row, flush=True)


def covered(text: str, secret: str, found: list[str]) -> bool:
    for value in sorted({v for v in found if v}, key=len, reverse=True):
        text = text.replace(value, "\x00")
    return secret not in text


def coverage_part(peer: bool) -> None:
    secrets, clean = load()
    redactor = Redactor()
    ours = [s for s in secrets if s.secret not in redactor.text(s.text)]
    ours_touched = [c for c in clean if redactor.text(c.text) != c.text]
    print(f"\n## Coverage of the corpus ({len(secrets)} secret forms, {len(clean)} clean texts)\n")
    print("| | secret forms covered | clean texts touched |\n|---|---|---|")
    print(f"| toolpath | {len(ours)} of {len(secrets)} | {len(ours_touched)} of {len(clean)} |")
    if not peer:
        return
    plugins = peer_plugins()

    def finds(text: str) -> list[str]:
        return [value for _, find in plugins for value in find(text)]

    theirs = [s for s in secrets if covered(s.text, s.secret, finds(s.text))]
    touched = [c for c in clean if finds(c.text)]
    print(f"| detect-secrets 1.5, every plugin | {len(theirs)} of {len(secrets)} | {len(touched)} of {len(clean)} |")
    by_family: dict[str, list[int]] = {}
    for s in secrets:
        counts = by_family.setdefault(s.family, [0, 0, 0])
        counts[0] += 1
        counts[1] += s in ours
        counts[2] += s in theirs
    print("\n| family | forms | toolpath | detect-secrets |\n|---|---|---|---|")
    for family, (total, mine, peers) in by_family.items():
        print(f"| {family} | {total} | {mine} | {peers} |")
    print("\nclean texts detect-secrets finds something in:", json.dumps([c.text for c in touched], ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=10, help="size of each adversarial input, in MB")
    parser.add_argument("--timeout", type=float, default=20, help="seconds a detect-secrets plugin may take")
    parser.add_argument("--no-peer", action="store_true", help="toolpath and the floors only")
    args = parser.parse_args()
    peer = not args.no_peer
    if peer:
        try:
            import detect_secrets  # noqa: F401
        except ImportError:
            sys.exit("pip install detect-secrets (or --no-peer)")
    coverage_part(peer)
    time_part(int(args.mb * 1_000_000), args.timeout, peer)


if __name__ == "__main__":
    main()
