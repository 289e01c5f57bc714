"""Files' permission bits, and a process umask set for the length of a test."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

UMASKS = [0o022, 0o000]
"""The usual umask (files 0644 unless asked otherwise) and none at all (0666)."""


def mode_of(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    """This process's umask is ``mask`` inside the block (it is the whole process's: tests run one at a time)."""
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)
