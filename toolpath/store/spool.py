"""A crash-safe waiting room for prepared spans: ``toolpath collect --spool DIR``.

Without a spool the collector answers an export after its spans and invocations are committed to the store, so an
exporter, which sends one batch at a time and waits for the answer, waits for the whole write. With one, an export
is answered once its spans, decoded and redacted, are committed to a SQLite file of this process's own in ``DIR``
(synced to disk, as a store commit is); a thread of the collector then writes them to the store in arrival order
and removes them from the spool in the same breath. A collector killed after an answer has lost nothing: the next
one to open the folder stores what is left. What waits is bounded (``max_bytes``: a full spool refuses, and the
exporter retries later; a batch larger than the bound alone is never spooled: the collector writes it to the
store before it answers), and what is on disk there is what would be stored: redacted.

Each process claims files of its own in the folder, by a lock held as long as it runs (``spool-N.lock`` beside
``spool-N.sqlite``). It adds to the first it claims and drains every one it claims, the others' first, so files that
processes no longer running left (fewer ``--workers`` than last time, at start; a collector stopped since, through
:meth:`Spool.claim_left`) are drained by whoever claims them, then removed. Records are written with
:mod:`marshal`, which keeps every value a span can hold exactly (``NaN``, bytes, large integers) and runs no code
when read.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import marshal
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolpath.errors import ConfigError, InternalSignal
from toolpath.private_files import create_private, warn_if_shared
from toolpath.store.engine import SQLITE_SIDE_FILES
from toolpath.store.spanrecord import FIELDS, SpanRecord

if TYPE_CHECKING:
    from toolpath.store.store import Store

logger = logging.getLogger("toolpath.store.spool")
DEFAULT_SPOOL_BYTES = 1024 * 1024 * 1024
_SCHEMA = "CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY, spans INTEGER NOT NULL, body BLOB NOT NULL)"
_META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_PREFIX = "spool-"
_WAIT_FOR_LOCK_MS = 10_000
_WAL_KEPT_BYTES = 4 * 1024 * 1024
"""The write-ahead log is cut back to this after a checkpoint (SQLite keeps it at its largest otherwise)."""
_SHRINK_OVER_BYTES = 32 * 1024 * 1024
"""A file emptied by the drain is compacted when it is larger than this (SQLite keeps freed pages otherwise): after
a burst or an outage, not after every few exports."""


def check_spool_folder(folder: Path) -> None:
    """A :class:`ConfigError` naming ``--spool`` when ``folder`` cannot be a spool (checked before anything is
    created): it must be a folder, or be creatable in a folder that exists, and be writable."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--spool {folder}: not a folder")
    where = folder if folder.exists() else folder.parent
    if not where.is_dir():
        raise ConfigError(f"--spool {folder}: its parent folder {where} does not exist")
    if not os.access(where, os.W_OK | os.X_OK):
        raise ConfigError(f"--spool {folder}: {where} is not writable")


class SpoolFull(InternalSignal):
    """What waits in the spool is at its bound: the exporter should retry later."""


class TooBigToSpool(InternalSignal):
    """The batch alone is larger than the spool's bound: it never fits, so it is written to the store directly
    (nothing was spooled)."""


@dataclass(frozen=True, slots=True)
class Batch:
    """Batches of one spool file taken together: their spans, in arrival order, and where they end."""

    file: _SpoolFile
    last_id: int
    spans: int
    bytes: int
    records: list[SpanRecord]
    unreadable: int
    """Spans of batches that could not be read back (a damaged file): left out, counted."""


def spool_owner(store: Store) -> str:
    """The store a spool's spans are for, as its files record it: the URL (password hidden), a SQLite file's path
    made absolute, so that collectors of different stores sharing a folder never write each other's spans."""
    url = store.engine.url
    if store.dialect == "sqlite":
        return f"sqlite:///{store.database_file or url.database or ':memory:'}"
    return url.render_as_string(hide_password=True)


class _SpoolFile:
    def __init__(self, path: Path, lock_fd: int, owner: str) -> None:
        self.path = path
        self.lock_fd = lock_fd
        if not create_private(path):  # made 0600 before SQLite opens it: its -wal and -shm take its mode
            warn_if_shared([path, *(f"{path}{suffix}" for suffix in SQLITE_SIDE_FILES)], "spans waiting for the store")
        self.conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=_WAIT_FOR_LOCK_MS / 1000
        )
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")  # an answered export is on disk, as a store commit is
            self.conn.execute(f"PRAGMA journal_size_limit={_WAL_KEPT_BYTES}")  # a big export's log stays small
            self.conn.execute(_SCHEMA)
            self.conn.execute(_META)
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('store', ?)", (owner,))  # a new file: ours
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('fields', ?)", (",".join(_WRITTEN),))
            meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
            self.owner: str = meta["store"]
            self.fields: tuple[str, ...] = tuple(meta["fields"].split(","))
            """What its records hold, in order: :data:`_WRITTEN` unless another version of toolpath wrote it."""
            spans, size = self.conn.execute(
                "SELECT COALESCE(SUM(spans), 0), COALESCE(SUM(LENGTH(body)), 0) FROM batches"
            ).fetchone()
        except sqlite3.Error as exc:
            self.conn.close()
            raise ConfigError(
                f"--spool {path.parent}: {path.name} cannot be used ({exc}); move it elsewhere to start without it"
            ) from None
        self.lock = threading.Lock()
        self.spans: int = spans
        self.bytes: int = size

    def shrink(self) -> None:
        """Give back to the disk what an emptied file still holds (call with :attr:`lock` held)."""
        pages, size = (self.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size"))
        if pages * size > _SHRINK_OVER_BYTES:
            try:
                self.conn.execute("VACUUM")  # nothing in it: quick
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:  # a full disk: kept as it is, tried again when next emptied
                logger.warning("toolpath: spool %s could not be compacted: %s", self.path, exc)

    def remove(self) -> None:
        self.conn.close()
        for suffix in ("", *SQLITE_SIDE_FILES):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path.with_suffix(".lock"))
        os.close(self.lock_fd)

    def close(self) -> None:
        self.conn.close()
        os.close(self.lock_fd)


class Spool:
    """The spool files this process claimed in ``folder``: :meth:`put` from any thread, :meth:`take` and
    :meth:`done` from one draining thread."""

    def __init__(self, folder: Path, max_bytes: int = DEFAULT_SPOOL_BYTES, owner: str = "") -> None:
        """``owner``: the store the spans are for (:func:`spool_owner`); files of the folder written for another
        store are left alone (logged), for a collector of that store."""
        self.folder = folder
        self.max_bytes = max_bytes
        self.owner = owner
        self._counts = threading.Lock()
        self.arrived = threading.Event()
        """Set by every :meth:`put`: the drain waits on it when the spool is empty."""
        self._unusable: set[int] = set()
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            self._files = self._claim()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"--spool {folder}: cannot use it ({exc})") from None
        self._own = self._files[0]

    def _numbers(self) -> list[int]:
        return sorted(
            int(p.stem[len(_PREFIX) :])
            for p in self.folder.glob(f"{_PREFIX}*.sqlite")
            if p.stem[len(_PREFIX) :].isdigit()
        )

    def claim_left(self) -> int:
        """Claim the files of the folder that processes stopped since this one started left (another collector on
        the folder, a worker not restarted): drained from now on, the empty ones removed. Returns the spans
        claimed. A file that cannot be opened is left where it is (logged once)."""
        held = {f.path.name for f in self._files}
        added: list[_SpoolFile] = []
        for number in self._numbers():
            if f"{_PREFIX}{number}.sqlite" in held or number in self._unusable:
                continue
            try:
                file = self._try(number)
            except (ConfigError, OSError) as exc:
                self._unusable.add(number)
                logger.error("toolpath: %s", exc)
                continue
            if file is None:
                continue
            if file.spans:
                added.append(file)
            else:
                file.remove()
        if added:
            with self._counts:
                self._files = [*self._files, *added]
        return sum(f.spans for f in added)

    def _claim(self) -> list[_SpoolFile]:
        """Every file of the folder no other process holds, oldest first, then (when none was free) a new one."""
        numbers = self._numbers()
        claimed: list[_SpoolFile] = []
        try:
            for number in numbers:
                if (file := self._try(number)) is not None:
                    claimed.append(file)
            own = next((f for f in claimed if f.fields == _WRITTEN), None)  # another version's: drained, not fed
            n = (numbers[-1] + 1) if numbers else 0
            while own is None:
                own = self._try(n)
                n += 1
        except BaseException:
            for file in claimed:  # let go of what was claimed before the failure
                file.close()
            raise
        others = [f for f in claimed if f is not own]
        for file in others:  # left empty by a process no longer running: nothing to drain, nothing to keep
            if not file.spans:
                file.remove()
        return [own, *(f for f in others if f.spans)]

    def _try(self, n: int) -> _SpoolFile | None:
        lock_path = self.folder / f"{_PREFIX}{n}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino != os.stat(lock_path).st_ino:  # removed by its drainer while we waited
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError):
            os.close(fd)
            return None
        try:
            file = _SpoolFile(self.folder / f"{_PREFIX}{n}.sqlite", fd, self.owner)
        except BaseException:
            os.close(fd)  # and its lock with it: the error says why the spool cannot be used
            raise
        if file.owner != self.owner:
            if not file.spans:  # nothing in it for anyone
                file.remove()
                return None
            if n not in self._unusable:
                self._unusable.add(n)
                logger.warning("toolpath: spool %s holds spans for the store %s, not %s: left for a collector of "
                               "that store", file.path, file.owner, self.owner)  # fmt: skip
            file.close()
            return None
        return file

    @property
    def pending_spans(self) -> int:
        """Spans waiting to be stored, in every file this process drains."""
        return sum(f.spans for f in self._files)

    @property
    def pending_bytes(self) -> int:
        return sum(f.bytes for f in self._files)

    def put(self, records: list[SpanRecord]) -> None:
        """Commit ``records`` to this process's file (synced); :class:`SpoolFull` when what waits would pass
        ``max_bytes``, :class:`TooBigToSpool` when ``records`` alone would (they would never fit: waiting for room
        could starve them while smaller batches keep coming). A value :mod:`marshal` cannot write raises
        ``ValueError``. Nothing is written when it raises."""
        body = marshal.dumps([_fields(r) for r in records])
        if len(body) > self.max_bytes:
            raise TooBigToSpool(f"{len(body):,} bytes, over the spool's bound of {self.max_bytes:,}")
        own = self._own
        with self._counts:
            waiting = self.pending_bytes
            if waiting + len(body) > self.max_bytes:
                raise SpoolFull(f"the spool holds {waiting:,} bytes, its bound is {self.max_bytes:,}")
            own.bytes += len(body)  # counted before the write, so that puts at once cannot pass the bound
            own.spans += len(records)
        try:
            with own.lock:
                own.conn.execute("INSERT INTO batches (spans, body) VALUES (?, ?)", (len(records), body))
        except BaseException as exc:
            with self._counts:
                own.bytes -= len(body)
                own.spans -= len(records)
            if isinstance(exc, sqlite3.Error):  # a full disk, an I/O error: refused, and the exporter retries
                logger.warning("toolpath: spool %s cannot be written: %s", own.path, exc)
                raise SpoolFull(f"the spool cannot be written ({exc})") from None
            raise
        self.arrived.set()

    def take(self, max_spans: int) -> Batch | None:
        """The oldest waiting batches of one file, up to ``max_spans`` spans (at least one batch), or ``None``
        when nothing waits. They stay in the spool until :meth:`done`. Files other processes left come first:
        all they hold is older than what this one adds, and its own file, fed while it drains, may never empty."""
        files = self._files
        for file in [*(f for f in files if f is not self._own), self._own]:
            bodies: list[tuple[int, int, bytes]] = []
            spans = 0
            with (
                file.lock,
                contextlib.closing(file.conn.execute("SELECT id, spans, body FROM batches ORDER BY id")) as rows,
            ):
                for row_id, count, body in rows:
                    if bodies and spans + count > max_spans:
                        break
                    bodies.append((row_id, count, body))
                    spans += count
            if not bodies:
                continue
            records: list[SpanRecord] = []
            unreadable = 0
            for row_id, count, body in bodies:  # read back outside the lock: puts go on meanwhile
                try:
                    if file.fields == _WRITTEN:
                        records.extend(SpanRecord(*fields) for fields in marshal.loads(body))
                    else:  # by name: a field this version lacks is dropped, one it added takes its default
                        records.extend(SpanRecord(**_known(file.fields, values)) for values in marshal.loads(body))
                except (ValueError, EOFError, TypeError) as exc:
                    logger.error("toolpath: spool %s, batch %d cannot be read back (%s): left out", file.path,
                                 row_id, exc)  # fmt: skip
                    unreadable += count
            size = sum(len(body) for _, _, body in bodies)
            return Batch(file, bodies[-1][0], spans, size, records, unreadable)
        return None

    def done(self, batch: Batch) -> None:
        """``batch`` is stored: remove it (and a claimed file of another process's, once it is empty)."""
        file = batch.file
        with file.lock:
            file.conn.execute("DELETE FROM batches WHERE id <= ?", (batch.last_id,))
            with self._counts:
                file.spans -= batch.spans
                file.bytes -= batch.bytes
                emptied = not file.spans
            if emptied and file is self._own:
                file.shrink()
        if emptied and file is not self._own:
            self._files = [f for f in self._files if f is not file]  # a new list: readers of the old one go on
            file.remove()

    def close(self) -> None:
        """Let the files go (what waits stays for the next process)."""
        for file in self._files:
            file.close()
        self._files = []


_WRITTEN = FIELDS
"""The fields of a written record, in order; a file records them, so that one written by another version of
toolpath is read back by name."""


def _fields(record: SpanRecord) -> tuple[Any, ...]:
    """``record``'s values in the order of :data:`_WRITTEN` (spelled out: faster than a getter by names)."""
    return (
        record.trace_id,
        record.span_id,
        record.parent_span_id,
        record.name,
        record.kind,
        record.start_time,
        record.end_time,
        record.status_code,
        record.status_message,
        record.attributes,
        record.events,
        record.resource,
        record.scope,
    )


def _known(names: tuple[str, ...], values: Any) -> dict[str, Any]:
    return {name: value for name, value in zip(names, values, strict=True) if name in _WRITTEN}
