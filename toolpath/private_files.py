"""Files toolpath creates are its user's alone: mode 0600 whatever the umask.

A SQLite store holds recorded prompts, answers and tool results, and the key of the store's pseudonyms; a spool
holds spans waiting for the store; an exported file (``--output``, ``--html``, an eval set, eval history) holds
what the store holds. Each is created here, readable and writable by its owner only: :func:`create_private` makes
an empty file for SQLite to open (SQLite gives a database's ``-wal`` and ``-shm`` files the database file's mode),
:func:`write_private` writes a whole file through a temporary file renamed into place, so that a full disk or a
crash leaves the old file or the new one, never a truncated one.

A file that already exists keeps its mode: it is its owner's choice, never changed behind their back. When other
users may read it, :func:`warn_if_shared` says so in one warning line naming the files and their modes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from toolpath.errors import OutputError

logger = logging.getLogger("toolpath.private_files")

PRIVATE_MODE = 0o600
"""Read and write for the owner, nothing for the group or others."""
SHARED_BITS = 0o077
"""The group's and others' bits: a file with any of them set is open to more than its owner."""
_TEMPORARY_PREFIX = ".toolpath-"
_NAME_KEPT = 200
"""Characters of the target's name the temporary file's name ends with (its suffix, for loaders that look at it),
short enough that the whole name stays under the 255 most file systems allow."""

_warned: set[str] = set()
_warned_lock = threading.Lock()


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` empty with mode 0600 unless it exists; ``True`` when it was created here. A file that exists
    is left as it is (another process may have made it a moment ago)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_MODE)  # a umask that takes the owner's bits away cannot leave it unreadable
    finally:
        os.close(fd)
    return True


def shared_mode(path: str | os.PathLike[str]) -> int | None:
    """``path``'s permission bits when the group or others have any of them, else ``None`` (private, or absent,
    or not a regular file: a terminal or a pipe is not ours to judge)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    mode = stat.S_IMODE(info.st_mode)
    return mode if mode & SHARED_BITS else None


def warn_if_shared(paths: Iterable[str | os.PathLike[str]], what: str) -> None:
    """One warning line naming those of ``paths`` other users may read, with their modes (``what``: what they
    hold, said in the line); nothing when all are private. Each file is named once a process."""
    found: list[str] = []
    for path in paths:
        mode = shared_mode(path)
        if mode is None:
            continue
        key = os.path.realpath(path)
        with _warned_lock:
            if key in _warned:
                continue
            _warned.add(key)
        found.append(f"{os.fspath(path)} (mode {mode:04o})")
    if found:
        one = len(found) == 1
        logger.warning(
            "toolpath: other users may read %s, which %s %s: chmod 600 makes %s private (toolpath creates its files "
            "0600 and leaves the mode of an existing one as it is)",
            ", ".join(found),
            "holds" if one else "hold",
            what,
            "it" if one else "them",
        )


def write_private(
    path: str | os.PathLike[str],
    text: str,
    *,
    what: str = "prompts, answers and scores toolpath wrote",
    warn_shared: bool = True,
    check: Callable[[Path], object] | None = None,
) -> None:
    """Write ``text`` (UTF-8) to ``path``, whole or not at all: into a temporary file beside it (mode 0600), synced,
    then renamed over ``path``. A new file is 0600; a file that exists keeps its mode (with ``warn_shared``, a
    warning names it when other users may read it: :func:`warn_if_shared`, ``what`` saying what it holds).
    ``check`` is called with the temporary file before it replaces ``path`` (its error leaves ``path`` as it was).

    A symbolic link is followed (its target is replaced). Without ``check``, a path that is not a regular file
    (``/dev/stdout``, a pipe) is written in place, as is a file whose folder lets no temporary file be made beside
    it; with ``check``, those are errors."""
    import tempfile  # where a file is written: a store opened to read pays nothing for it

    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        _write_in_place(path, text, check, "is not a regular file")
        return
    if info is not None and warn_shared:
        warn_if_shared([path], what)
    target = Path(os.path.realpath(path))
    mode = PRIVATE_MODE if info is None else stat.S_IMODE(info.st_mode)
    try:
        fd, temporary = tempfile.mkstemp(
            prefix=_TEMPORARY_PREFIX, suffix=f"-{target.name[-_NAME_KEPT:]}", dir=target.parent
        )
    except PermissionError:
        if info is None:
            raise
        _write_in_place(path, text, check, "is in a folder that takes no new file")
        return
    except OSError as exc:  # no space (or no inode) left for a new file
        raise _not_written(path, exc, _left(info)) from exc
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(text)
                out.flush()
                os.fchmod(out.fileno(), mode)
                os.fsync(out.fileno())
        except OSError as exc:
            raise _not_written(path, exc, _left(info)) from exc
        if check is not None:
            check(Path(temporary))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _write_in_place(path: str | os.PathLike[str], text: str, check: Callable[[Path], object] | None, why: str) -> None:
    """``path`` exists: written as it is, its mode kept (no temporary file, so no ``check`` either)."""
    if check is not None:
        raise OSError(f"{os.fspath(path)} {why}: it cannot be checked before it is written")
    try:
        with open(path, "w", encoding="utf-8", newline="") as out:
            out.write(text)
    except OSError as exc:
        raise _not_written(
            path, exc, "it may hold part of the text (it is not a regular file: written in place)"
        ) from exc


def _not_written(path: str | os.PathLike[str], exc: OSError, left: str) -> OutputError:
    """The error for a write to ``path`` the system refused part-way (``exc``: no space left, a file-size limit);
    ``left``: what became of ``path``."""
    error = OutputError(f"{os.fspath(path)}: not written ({exc.strerror or exc}); {left}")
    error.errno = exc.errno
    return error


def _left(info: os.stat_result | None) -> str:
    """What a refused write through a temporary file left at the path: the file it had, or none."""
    return "it is as it was" if info is not None else "no file was made"
