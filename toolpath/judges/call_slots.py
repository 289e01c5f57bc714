"""A bound on model calls in flight, shared by every run of the judges that hold it: the judges of one process
run on one event loop (:func:`toolpath.judges.client._judge_loop`), so one semaphore per loop bounds the calls of
all their threads together (an online evaluator's ``concurrency``, whatever its workers)."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from toolpath.errors import ConfigError

__all__ = ["CallSlots"]


class CallSlots:
    """At most ``limit`` model calls in flight at once among the judges that share these slots; more wait."""

    def __init__(self, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ConfigError(f"judge calls in flight: expected a whole number ≥ 1, got {limit!r}")
        self.limit = limit
        self._lock = threading.Lock()
        self._in_flight = 0
        self._most = 0
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def in_flight(self) -> int:
        """Calls holding a slot now."""
        with self._lock:
            return self._in_flight

    @property
    def most_in_flight(self) -> int:
        """The most calls that held a slot at once so far."""
        with self._lock:
            return self._most

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for one call (waiting for one to free when all are taken)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limit)
        async with semaphore:
            with self._lock:
                self._in_flight += 1
                self._most = max(self._most, self._in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self._in_flight -= 1
