"""The UI's login sessions: what its cookie names, kept on the server, so that a session can expire and be revoked.

A login (the ``?token=`` link) opens a session under a new random id; the cookie holds that id and nothing else.
The table keeps only a hash of each id, when it was opened and when it was last used: a session ends when it has
not been used for ``idle_seconds``, ``lifetime_seconds`` after it was opened whatever its use, at logout, or when
``max_sessions`` newer ones push it out (the oldest goes first).

The table is SQLite: in this process's memory (``toolpath ui``: a restart logs everyone out), or in a file the
processes serving one port share (``toolpath collect --ui --workers N``: a login at one worker is a login at all,
a logout at one a logout at all).
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from toolpath.errors import ConfigError

DEFAULT_IDLE_SECONDS = 12 * 3600.0
DEFAULT_LIFETIME_SECONDS = 7 * 86400.0
DEFAULT_MAX_SESSIONS = 1000
_ID_BYTES = 32
_LONGEST_ID = 100
"""A cookie value longer than this is no id of ours (``token_urlsafe(32)`` is 43 characters): not even hashed."""


@dataclass(frozen=True)
class SessionPolicy:
    """How long a login lasts: ``idle_seconds`` without a request, ``lifetime_seconds`` at most; ``max_sessions``
    kept at once. ``options`` names each value as the user gave it, for the errors."""

    idle_seconds: float = DEFAULT_IDLE_SECONDS
    lifetime_seconds: float = DEFAULT_LIFETIME_SECONDS
    max_sessions: int = DEFAULT_MAX_SESSIONS
    options: tuple[str, str, str] = ("idle_seconds", "lifetime_seconds", "max_sessions")

    def __post_init__(self) -> None:
        idle, lifetime, most = self.options
        for name, value in ((idle, self.idle_seconds), (lifetime, self.lifetime_seconds)):
            if not value > 0 or value == float("inf"):
                raise ConfigError(f"{name}: must be a finite time above zero, not {value!r}")
        if self.idle_seconds > self.lifetime_seconds:
            raise ConfigError(f"{idle}: longer than {lifetime}, so it would never end a session; give a shorter one")
        if isinstance(self.max_sessions, bool) or not isinstance(self.max_sessions, int) or self.max_sessions < 1:
            raise ConfigError(f"{most}: must be a whole number of at least 1, not {self.max_sessions!r}")


class LoginSessions:
    """The open sessions, in memory (``path=None``) or in the SQLite file ``path`` (made if missing). ``clock``
    gives the time in seconds (wall time: the processes sharing a file agree on it)."""

    def __init__(
        self,
        policy: SessionPolicy | None = None,
        *,
        path: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy or SessionPolicy()
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None  # opened at first use: in the process that serves

    def open(self, replacing: str | None = None) -> str:
        """A new session's id; the session ``replacing`` names (the cookie a login came with) ends: each login
        gets an id of its own, never one the browser already held."""
        sid = secrets.token_urlsafe(_ID_BYTES)
        now = self.clock()
        with self._transaction() as db:
            self._forget_expired(db, now)
            if replacing is not None:
                db.execute("DELETE FROM sessions WHERE digest = ?", (_digest(replacing),))
            (count,) = db.execute("SELECT count(*) FROM sessions").fetchone()
            excess = count - self.policy.max_sessions + 1
            if excess > 0:  # the oldest logins make room
                db.execute(
                    "DELETE FROM sessions WHERE digest IN (SELECT digest FROM sessions ORDER BY opened, seen LIMIT ?)",
                    (excess,),
                )
            db.execute("INSERT INTO sessions (digest, opened, seen) VALUES (?, ?, ?)", (_digest(sid), now, now))
        return sid

    def check(self, sid: str) -> bool:
        """Whether ``sid`` names an open session; if so it was used now (its idle time starts again)."""
        if not sid or len(sid) > _LONGEST_ID:
            return False
        now = self.clock()
        policy = self.policy
        with self._transaction() as db:
            used = db.execute(
                "UPDATE sessions SET seen = ? WHERE digest = ? AND opened > ? AND seen > ?",
                (now, _digest(sid), now - policy.lifetime_seconds, now - policy.idle_seconds),
            )
            return used.rowcount == 1

    def revoke(self, sid: str) -> None:
        """End the session ``sid`` (logout); nothing happens when there is none."""
        if sid and len(sid) <= _LONGEST_ID:
            with self._transaction() as db:
                db.execute("DELETE FROM sessions WHERE digest = ?", (_digest(sid),))

    def count(self) -> int:
        """The sessions still held (expired ones are dropped at the next login)."""
        with self._transaction() as db:
            (count,) = db.execute("SELECT count(*) FROM sessions").fetchone()
            return int(count)

    def prepare(self) -> None:
        """Make the table (and its file) now: before the processes that share it start, so that none of them
        waits on another's first use."""
        with self._transaction():
            pass

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _forget_expired(self, db: sqlite3.Connection, now: float) -> None:
        policy = self.policy
        db.execute(
            "DELETE FROM sessions WHERE opened <= ? OR seen <= ?",
            (now - policy.lifetime_seconds, now - policy.idle_seconds),
        )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, under this process's lock (one connection serves every thread)."""
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")  # other processes sharing the file wait (up to the connection's timeout)
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            target = ":memory:" if self.path is None else str(self.path)
            # autocommit mode: each transaction is an explicit BEGIN IMMEDIATE ... COMMIT
            db = sqlite3.connect(target, timeout=10, isolation_level=None, check_same_thread=False)
            if self.path is not None:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # a throw-away file: losing it at a crash logs people out
            db.execute(
                "CREATE TABLE IF NOT EXISTS sessions"
                " (digest BLOB PRIMARY KEY, opened REAL NOT NULL, seen REAL NOT NULL)"
            )
            self._db = db
        return self._db


def _digest(sid: str) -> bytes:
    """What the table keeps of an id: its hash, so that the table (a file, with ``--workers``) holds no cookie."""
    return hashlib.sha256(sid.encode("utf-8", "replace")).digest()
