"""The write lock of a SQLite store's ingest, shared by every process that writes the file.

A SQLite file has one write lock; a writer that finds it taken polls for it (sleeping ever longer between tries),
so two collector processes writing one file lose much of their time asleep. Ingest writers instead queue here,
on an advisory lock of a file beside the database (``flock``: the kernel wakes the next waiter the moment the
lock is let go), and in this process on a thread lock first, as ``flock`` is held per open file, not per thread.
Online jobs' claims and results queue here too. SQLite's own lock still decides who writes (pruning goes straight
to it); this only makes these writers take turns without sleeping. A thread whose waits are bounded
(:mod:`toolpath.store.lock_waits`) waits for this process's other writers no longer than its bound; the wait for
other processes' turns (``flock``) is not: a process holds it for one write at a time.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from toolpath.store.lock_waits import NoTimeLeft, wait_bound

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: the thread lock alone
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = "-toolpath-write.lock"


class WriteLock:
    """A context manager: this process's threads, then every process, one at a time."""

    def __init__(self, database: str | None) -> None:
        self._threads = threading.Lock()
        self._path = f"{database}{LOCK_SUFFIX}" if database and fcntl is not None else None
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        bound = wait_bound()  # a caller with a deadline waits for this process's other writers no longer
        if not self._threads.acquire(timeout=-1 if bound is None else bound.lock_wait):
            raise NoTimeLeft("this process's other writers held the store's write lock longer than this write may wait")
        try:
            if self._path is not None:
                if self._fd is None:
                    self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError:  # a folder that refuses the lock file: SQLite's lock alone, as before
            self._path = None
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self._path is not None and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def close(self) -> None:
        """Let go of the lock file (the lock itself is let go by every ``with``), unless a write of this process
        still waits for its turn (a stop that left it past its deadline): never wait for it here."""
        if not self._threads.acquire(blocking=False):
            return
        try:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        finally:
            self._threads.release()


def sqlite_file(database: str | None) -> str | None:
    """The file of a SQLite URL's database part, or ``None`` for an in-memory one."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return str(Path(database).resolve())


@contextlib.contextmanager
def database_file_lock(database: str | None) -> Iterator[None]:
    """An advisory lock (``flock``) across processes for rare whole-store work (creating or migrating the schema),
    taken on the folder that holds the database file: it leaves no file of its own, and never meets SQLite's own
    (``fcntl``) locks. Never on the database file itself: closing any descriptor of that file drops every ``fcntl``
    lock this process's SQLite connections hold on it, among them the shared lock that keeps another process from
    deleting the write-ahead log in use here (this process's later commits would then go to a log nobody else
    reads). Without ``fcntl``, or for an in-memory database, no lock."""
    if database is None or fcntl is None:
        yield
        return
    try:
        fd = os.open(os.path.dirname(database) or ".", os.O_RDONLY)
    except OSError:  # a folder that refuses it: SQLite reports that when it opens the file
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # lets go of the lock
