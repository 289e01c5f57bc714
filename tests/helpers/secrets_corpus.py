"""The redaction corpus (``tests/fixtures/secrets/corpus.toml``): the secrets toolpath promises to redact and the
texts it must leave alone, and the promise table of SECURITY.md made from it.

    python -m tests.helpers.secrets_corpus --write    # SECURITY.md's table, made again from the corpus
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import FIXTURES

CORPUS = FIXTURES / "secrets" / "corpus.toml"
SECURITY = Path(__file__).resolve().parents[2] / "SECURITY.md"
BEGIN = (
    "<!-- redaction promises: made from tests/fixtures/secrets/corpus.toml by"
    " `python -m tests.helpers.secrets_corpus --write` -->"
)
END = "<!-- end of redaction promises -->"


@dataclass(frozen=True)
class Secret:
    family: str
    form: str
    text: str
    """The secret in context."""
    secret: str
    """What must disappear."""
    keep: tuple[str, ...]
    """What must stay."""
    key: str | None
    """An object key whose value is secret whole."""

    @property
    def id(self) -> str:
        return f"{self.family}: {self.form}"


@dataclass(frozen=True)
class Clean:
    text: str
    why: str


def _joined(parts: list[str | dict[str, object]]) -> str:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            repeat, times = part["repeat"], part["times"]
            assert isinstance(repeat, str) and isinstance(times, int), part
            out.append(repeat * times)
    return "".join(out)


def load() -> tuple[list[Secret], list[Clean]]:
    data = tomllib.loads(CORPUS.read_text(encoding="utf-8"))
    secrets = []
    for entry in data["secret"]:
        secret = _joined(entry["secret"])
        text = entry["text"].replace("{secret}", secret)
        assert secret in text, entry["form"]
        secrets.append(Secret(entry["family"], entry["form"], text, secret, tuple(entry.get("keep", ())),
                              entry.get("key")))  # fmt: skip
    return secrets, [Clean(entry["text"], entry["why"]) for entry in data["clean"]]


def _markdown(text: str) -> str:
    """``text`` as Markdown shows it literally (``sk_live_`` is no emphasis)."""
    for char in "\\`*_[]<|":
        text = text.replace(char, "\\" + char)
    return text


def promise_table(secrets: list[Secret], clean: list[Clean]) -> str:
    """SECURITY.md's table: each family and its forms, in the corpus's order, then what stays."""
    families: dict[str, list[str]] = {}
    for s in secrets:
        families.setdefault(s.family, []).append(_markdown(s.form))
    rows = [f"| {family} ({len(forms)}) | {'; '.join(forms)} |" for family, forms in families.items()]
    reasons = list(dict.fromkeys(_markdown(c.why) for c in clean))
    return "\n".join(
        [
            BEGIN,
            f"| redacted ({len(secrets)} forms) | each form tested alone, as a JSON string and inside JSON text |",
            "|---|---|",
            *rows,
            "",
            f"Left as they are ({len(clean)} texts tested): {'; '.join(reasons)}.",
            END,
        ]
    )


def security_table() -> str:
    """The table as SECURITY.md has it now."""
    text = SECURITY.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def write() -> None:
    text = SECURITY.read_text(encoding="utf-8")
    SECURITY.write_text(text.replace(security_table(), promise_table(*load())), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    write()
