"""Issue 48's debugging day at scale: a store of ``--turns`` turns built through ``toolpath collect``, the ten
debugging tasks done in headless Chromium over it, and each page's load time beside a floor.

    python benchmarks/bench_debugging_day.py [--turns 100000] [--store sqlite|postgresql] [--senders 2]
                                             [--repeats 3] [--sample-rate 0.05]

The store (tests/helpers/debugging_day.py): sessions of 5 turns over six days, each turn an agent span naming its
user, a model call with tokens (every seventh reporting its cost) and one to four tool calls (a slow tool, a tool
failing half its calls with an exception, a rarer failing one), every 20th turn failed; a turn capped by the
collector's ``--max-tool-calls``, a trace of 313 spans, an expensive turn and a turn with a rare word in a tool
result. ``--senders`` processes post it as OTLP/HTTP protobuf exports of up to 512 spans in the order spans end
(32 turns going on at once, traces split across exports) to a real ``toolpath collect`` on 127.0.0.1 scoring a
``--sample-rate`` of the turns online (two computed metrics); the write rate is the turns and spans over the time
from the first export to the last answered (an answer means its spans and turns are committed). Two eval runs a
day apart, the newer regressed, are then written to the store.

The UI is served on 127.0.0.1 and one headless Chromium does the ten tasks of tests/helpers/debugging_tasks.py
(each printed with its time, or the assertion that failed: the script then exits 1). Each page is then loaded
``--repeats`` times in that Chromium (the time from asking for it to its load event, median) and asked over HTTP
(the server's time for the HTML, median). Floors: the same load of a page that reads nothing from the store (the
eval sets page, no eval set) and one pass over the turns (``SELECT COUNT(*), SUM(input_tokens) FROM
invocations``) timed in Python. The machine's load averages are printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_sessions_scale import median_ms
from tests.helpers.debugging_day import BASELINE, BIG, NEWER, SEARCHED, Built, Day, build, hex_id
from tests.helpers.debugging_tasks import TASKS
from tests.helpers.ui import browser, serve_ui
from toolpath.store.store import Store


def pages(day: Day) -> list[tuple[str, str]]:
    n = day.latest_failing_charge()
    return [
        ("first page", "/sessions"),
        ("filtered: an agent's failed sessions", "/sessions?agent=agent-1&failures=1"),
        ("cost sort", "/sessions?sort=cost&order=desc"),
        ("text search: a word of one tool result", f"/sessions?q={SEARCHED}"),
        ("text search: a word of 1 prompt in 4", "/sessions?q=garage"),
        ("a user's sessions", "/sessions?user=user-7"),
        ("the last hour", "/sessions?last=1h"),
        ("Tools", "/tools"),
        ("Tools, one tool's calls", "/tools?tool=charge_card"),
        ("Errors", "/errors"),
        ("compare", f"/compare?run={BASELINE}&run={NEWER}"),
        ("a span's link", f"/session?id={day.session(n)}&span={hex_id(day.tool_span(n, 'charge_card'))}"),
        (f"a trace of {len(day.spans(day.special(BIG)))} spans", f"/session?id={BIG}"),
        ("Online, 7 days", "/online?days=7"),
        ("runs", "/runs"),
    ]


def do_tasks(page: object, url: str, day: Day) -> list[str]:
    """The ten tasks, each printed with its time; the names of those that failed."""
    failed = []
    for task in TASKS:
        began = time.perf_counter()
        try:
            task.run(page, url, day)
        except Exception:  # the benchmark reports every task, then exits non-zero
            failed.append(task.name)
            print(f"  {task.name:<40} FAILED after {time.perf_counter() - began:.1f} s")
            print("    " + traceback.format_exc(limit=3).replace("\n", "\n    "))
        else:
            print(f"  {task.name:<40} ok in {time.perf_counter() - began:.1f} s")
    return failed


def load_times(page: object, store: Store, url: str, day: Day, repeats: int) -> None:
    from sqlalchemy import text

    def scan() -> object:
        with store.engine.connect() as conn:
            return conn.execute(text("SELECT COUNT(*), SUM(input_tokens) FROM invocations")).all()

    def server(address: str) -> None:
        with urllib.request.urlopen(address, timeout=120) as answer:
            answer.read()

    print(f"  {'page':<44}{'Chromium load':>14}{'server':>9}")
    print(f"  {'floor: one pass over the turns (SQL)':<44}{'':>14}{median_ms(scan, repeats):>6.0f} ms")
    for label, path in [("floor: a page that reads no store (/evalsets)", "/evalsets"), *pages(day)]:
        address = url + quote(path, safe="/?=&")
        loaded = median_ms(lambda address=address: page.goto(address), repeats)  # type: ignore[attr-defined]
        answered = median_ms(lambda address=address: server(address), repeats)
        print(f"  {label:<44}{loaded:>11.0f} ms{answered:>6.0f} ms   {path}")


def load() -> str:
    """The machine's load averages (1, 5 and 15 minutes)."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def run(label: str, folder: Path, store_url: str | None, args: argparse.Namespace) -> bool:
    print(f"load average at the start: {load()}", flush=True)
    day = Day.of(args.turns)
    built: Built = build(folder, day, store_url, senders=args.senders, sample_rate=args.sample_rate)
    print(f"{label}: {day.turns:,} turns ({built.spans:,} spans) through toolpath collect in {built.seconds:.1f} s: "
          f"{day.turns / built.seconds:,.0f} turns/s, {built.spans / built.seconds:,.0f} spans/s "
          f"({args.senders} sender(s)); {built.scores:,} online scores")  # fmt: skip
    store = Store(built.store_url)
    try:
        with serve_ui(store, folder / "evalsets") as url, browser() as chromium:
            page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
            print("the ten debugging tasks, in Chromium:")
            failed = do_tasks(page, url, day)
            print(f"each page, median of {args.repeats}:")
            load_times(page, store, url, day, args.repeats)
    finally:
        store.close()
    print(f"load average at the end: {load()}")
    if failed:
        print(f"{label}: {len(failed)} task(s) failed: {', '.join(failed)}")
    return not failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sample-rate", type=float, default=0.05)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if args.store == "sqlite":
            passed = run("SQLite", folder, None, args)
        else:
            from tests.helpers.pgserver import PostgresServer

            server = PostgresServer.find()
            if server is None:
                sys.exit("PostgreSQL: not installed here (apt-get install -y postgresql)")
            with server.running() as url:
                passed = run("PostgreSQL", folder, url, args)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
