"""When a SQLite commit waits for the disk.

A SQLite store commits with ``synchronous=FULL`` (:data:`~toolpath.store.engine.SQLITE_SYNCHRONOUS`): in WAL mode,
each commit appends its pages to the log (``<file>-wal``) and syncs it before it lets the write lock go, so every
other writer waits for that disk flush too — half of an ingest's time under the lock. Two kinds of write need less:

- *durable after the lock* (ingest): committed with ``synchronous=NORMAL`` (pages appended, no sync), then the log
  synced once the write lock is let go and before the caller returns. What was committed is on disk when the
  caller answers, as with FULL; the next writer no longer waits for it, and writers syncing at once share a flush.
- *redoable* (online claims and results): committed with ``NORMAL`` and not synced: a power cut may lose them, and
  then the work is redone. The log keeps commits in order, so the next sync makes them durable too, and a
  process that dies (``kill -9``) loses nothing: the pages are the kernel's once written.

Both also checkpoint less often. A commit that leaves more than ``wal_autocheckpoint`` pages in the log copies them
into the database file and syncs both files before it returns, with the write lock still held. At the collector's
rates (an export of 512 spans appends some 850 pages: its rows and the index pages they land on) SQLite's 1,000
pages meant a checkpoint every export or two, into a file growing past gigabytes, while every other writer waited:
over 100-second runs with online scoring on, 16,400–16,900 spans/s. With 10,000 pages (a log of about 40 MB
before a checkpoint), a page written many times between checkpoints is copied once and the files are synced a
tenth as often: 19,100–21,200 spans/s in the same minutes (20,000 and 40,000 pages gained nothing more).

The connection is set back to FULL and SQLite's checkpoint interval before it returns to the pool, or discarded.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection

from toolpath.store.engine import SQLITE_AUTOCHECKPOINT, SQLITE_SYNCHRONOUS, changed_settings

RELAXED = "NORMAL"
CHECKPOINT_PAGES = 10_000
"""The log's pages after which a relaxed commit checkpoints (see above)."""


@contextlib.contextmanager
def relaxed(conn: Connection) -> Iterator[None]:
    """``synchronous=NORMAL`` and a checkpoint every :data:`CHECKPOINT_PAGES` on this SQLite connection for the
    ``with``, outside any transaction."""
    during = [f"PRAGMA synchronous={RELAXED}", f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}"]
    after = [f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}", f"PRAGMA wal_autocheckpoint={SQLITE_AUTOCHECKPOINT}"]
    with changed_settings(conn, during, after, "synchronous and wal_autocheckpoint"):
        yield


def wal_file(engine: Any, database_file: str | None) -> str | None:
    """The log a SQLite file's commits append to, when it is in WAL mode (else ``None``: its commits sync as
    they are)."""
    if database_file is None:
        return None
    with engine.connect() as conn:
        mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
    return f"{database_file}-wal" if str(mode).lower() == "wal" else None


def sync_file(path: str) -> None:
    """Flush ``path`` to disk. A log that is gone was checkpointed into the database, which SQLite synced first."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        (getattr(os, "fdatasync", None) or os.fsync)(fd)
    finally:
        os.close(fd)
