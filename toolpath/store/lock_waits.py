"""How long a thread's store writes may wait for a lock, when its caller bounds it.

By default a write waits for the database's write lock as the engine does: SQLite's busy timeout (30 s), as long as
it takes on PostgreSQL. A caller that must not wait that long (the collector's spool drain, which tries again
later, and must stop by its shutdown deadline) bounds the writes of its thread inside :func:`bounded`: each lock
wait at most ``most`` seconds, and none past ``deadline()`` (a :func:`time.monotonic` instant, ``None`` while
there is none). :meth:`toolpath.store.store.Store.durable_write` applies the bound as each write transaction
starts: SQLite's ``busy_timeout``; PostgreSQL's ``lock_timeout``, and once there is a deadline its
``statement_timeout`` too. A write that finds no time left is not started (:class:`NoTimeLeft`); a wait that runs
out raises what the driver raises for a locked database or a cancelled statement. Either way, to the caller the
store is unavailable for now. PostgreSQL's settings end with the transaction; SQLite's busy timeout is set back
after it, and a connection that cannot be set back is discarded, its failure never raised over the write's own
error or its commit (:func:`toolpath.store.engine.changed_settings`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from toolpath.errors import InternalSignal

_bounds = threading.local()
LEAST_WAIT = 0.001
"""A bound is never less than a millisecond (SQLite and PostgreSQL read 0 as "no bound")."""


class NoTimeLeft(InternalSignal):
    """The thread's deadline has passed: the write was not started."""


@dataclass(frozen=True, slots=True)
class Bound:
    """What a write starting now may spend."""

    lock_wait: float
    """Seconds it may wait for a lock."""
    statement: float | None
    """Seconds a statement may run, lock waits included (``None``: no deadline, as long as it takes)."""


@dataclass(frozen=True, slots=True)
class _Limits:
    most: float
    deadline: Callable[[], float | None]


@contextlib.contextmanager
def bounded(most: float, deadline: Callable[[], float | None] = lambda: None) -> Iterator[None]:
    """Inside the ``with``, this thread's writes wait for a lock at most ``most`` seconds, and none goes on past
    ``deadline()`` (read as each write starts)."""
    previous = getattr(_bounds, "limits", None)
    _bounds.limits = _Limits(most, deadline)
    try:
        yield
    finally:
        _bounds.limits = previous


def wait_bound() -> Bound | None:
    """What a write this thread starts now may spend (``None``: no bound); raises :class:`NoTimeLeft` when the
    thread's deadline has passed."""
    limits: _Limits | None = getattr(_bounds, "limits", None)
    if limits is None:
        return None
    deadline = limits.deadline()
    if deadline is None:
        return Bound(max(limits.most, LEAST_WAIT), None)
    left = deadline - time.monotonic()
    if left <= 0:
        raise NoTimeLeft("the deadline has passed: no write is started")
    return Bound(max(min(limits.most, left), LEAST_WAIT), max(left, LEAST_WAIT))


def time_left() -> bool:
    """Whether this thread may still start a write (always, unless its deadline has passed)."""
    try:
        wait_bound()
    except NoTimeLeft:
        return False
    return True
