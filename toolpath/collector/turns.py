"""A collector process's turns at its store: exports first, online scoring in the gaps between them.

An export holds a turn while it is decoded and stored (:meth:`toolpath.collector.ingestor.Ingestor.admitted`), and
so does the spool's writer; online scoring in the same process takes one for its reading, computing and writing.
Scoring takes a turn only when no export is waiting for one: while exports arrive faster than they are stored the
agents' spans go first, and scoring catches up in the gaps (its backlog and lag say how far behind it is). So that
a collector that never has a gap still scores, a scorer that has waited ``yield_seconds`` takes the next turn that
frees: at least one batch per scoring thread in that time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

YIELD_SECONDS = 1.0
"""The longest a scorer waits behind exports before it takes the next free turn."""


class Turns:
    """``count`` turns (a semaphore's ``acquire``/``release`` and ``with``, for exports), and
    :meth:`yielding` for the work that gives way to them."""

    def __init__(self, count: int, yield_seconds: float = YIELD_SECONDS) -> None:
        if count < 1:
            raise ValueError("turns: at least one")
        self._ready = threading.Condition(threading.Lock())
        self._free = count
        self._exports_waiting = 0
        self._scorers_due = 0
        """Scorers that waited ``yield_seconds``: the turns that free go to them first."""
        self.yield_seconds = yield_seconds
        self.yielded = 0
        """Turns a scorer waited for behind exports (a count, for the tests and the metrics)."""

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """An export's turn: the next one free, before any scorer's but one that has waited ``yield_seconds``."""
        with self._ready:
            if self._free > self._scorers_due:
                self._free -= 1
                return True
            if not blocking:
                return False
            self._exports_waiting += 1
            try:
                taken = self._ready.wait_for(lambda: self._free > self._scorers_due, timeout)
                if taken:
                    self._free -= 1
                return taken
            finally:
                self._exports_waiting -= 1
                self._ready.notify_all()  # a scorer waiting for no export to wait looks again

    def release(self) -> None:
        with self._ready:
            self._free += 1
            self._ready.notify_all()

    def __enter__(self) -> Turns:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()

    @contextmanager
    def yielding(self) -> Iterator[None]:
        """A scorer's turn: taken when one is free and no export waits, or once ``yield_seconds`` have passed."""
        until = time.monotonic() + self.yield_seconds
        with self._ready:
            waited = False
            while not (self._free > self._scorers_due and self._exports_waiting == 0):
                left = until - time.monotonic()
                if left <= 0:  # waited long enough: the next turn that frees is this scorer's
                    self._scorers_due += 1
                    try:
                        self._ready.wait_for(lambda: self._free > 0)
                    finally:
                        self._scorers_due -= 1
                    break
                waited = True
                self._ready.wait(left)
            self._free -= 1
            if waited:
                self.yielded += 1
        try:
            yield
        finally:
            self.release()
