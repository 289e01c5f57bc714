"""A collector process's turns at its store: exports first, online scoring in the gaps between them.

An export holds a turn while it is decoded and stored (:meth:`toolpath.collector.ingestor.Ingestor.admitted`), and
so does the spool's writer; online scoring in the same process takes one for its reading, computing and writing.
Scoring takes a turn only in a gap between exports: none holding or waiting for a turn, and none ended for
:data:`QUIET_SECONDS` (the moment between one export of a stream and the next is no gap). While exports arrive
faster than they are stored the agents' spans go first, and scoring catches up in the gaps (its backlog and lag
say how far behind it is). So that
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
QUIET_SECONDS = 0.05
"""How long after an export ends a scorer waits for the next before it takes a turn: more than a sender's round
trip on a network, so a stream of exports keeps its turns."""


class Turns:
    """``count`` turns (a semaphore's ``acquire``/``release`` and ``with``, for exports), and
    :meth:`yielding` for the work that gives way to them."""

    def __init__(self, count: int, yield_seconds: float = YIELD_SECONDS, quiet_seconds: float = QUIET_SECONDS) -> None:
        if count < 1:
            raise ValueError("turns: at least one")
        self._ready = threading.Condition(threading.Lock())
        self._free = count
        self._exports_waiting = 0
        self._exports_holding = 0
        self._export_ended = 0.0
        """When the last export gave its turn back (``time.monotonic()``)."""
        self._scorers_due = 0
        """Scorers that waited ``yield_seconds``: the turns that free go to them first."""
        self.yield_seconds = yield_seconds
        self.quiet_seconds = quiet_seconds
        self.yielded = 0
        """Turns a scorer waited for behind exports (a count, for the tests and the metrics)."""

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """An export's turn: the next one free, before any scorer's but one that has waited ``yield_seconds``."""
        with self._ready:
            if self._free > self._scorers_due:
                self._free -= 1
                self._exports_holding += 1
                return True
            if not blocking:
                return False
            self._exports_waiting += 1
            try:
                taken = self._ready.wait_for(lambda: self._free > self._scorers_due, timeout)
                if taken:
                    self._free -= 1
                    self._exports_holding += 1
                return taken
            finally:
                self._exports_waiting -= 1
                self._ready.notify_all()  # a scorer waiting for no export to wait looks again

    def release(self) -> None:
        """An export's turn given back."""
        with self._ready:
            self._exports_holding -= 1
            self._export_ended = time.monotonic()
            self._free += 1
            self._ready.notify_all()

    def _gap(self) -> float:
        """0 when a scorer may take a free turn now, else how long until it may (no export holding or waiting a
        turn, none ended for ``quiet_seconds``); under the condition's lock."""
        if self._free <= self._scorers_due or self._exports_waiting or self._exports_holding:
            return float("inf")
        return max(0.0, self._export_ended + self.quiet_seconds - time.monotonic())

    def __enter__(self) -> Turns:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()

    @contextmanager
    def yielding(self) -> Iterator[None]:
        """A scorer's turn: taken in a gap between exports, or once ``yield_seconds`` have passed."""
        until = time.monotonic() + self.yield_seconds
        with self._ready:
            waited = False
            while (gap := self._gap()) > 0:
                left = until - time.monotonic()
                if left <= 0:  # waited long enough: the next turn that frees is this scorer's
                    self._scorers_due += 1
                    try:
                        self._ready.wait_for(lambda: self._free > 0)
                    finally:
                        self._scorers_due -= 1
                    break
                waited = True
                self._ready.wait(min(left, gap))
            self._free -= 1
            if waited:
                self.yielded += 1
        try:
            yield
        finally:
            with self._ready:
                self._free += 1
                self._ready.notify_all()
