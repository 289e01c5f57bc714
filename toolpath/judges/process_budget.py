"""The judge budget of the whole process: calls in flight, calls and tokens per minute, shared by every source of
judge calls (evaluations, online scoring, ``evaluateInstances``, MCP and UI runs).

Every model call a :class:`~toolpath.judges.client.Judge` sends passes :meth:`ProcessBudget.admit` first (cache hits
cost nothing and do not pass). A call is counted when it is sent, so the calls of one minute never pass the limit,
however many threads ask at once. Tokens are known only when a reply comes: a call is sent only while the minute's
tokens are under the limit, so the calls already in flight when it is reached can pass it by their own size (each
bounded by the judge's prompt limit).

When the minute's budget is spent, a call either waits for the minute to free a place (an evaluation the operator
started: it finishes later, never wrong) or is refused with the seconds after which to try again (a request: the
HTTP routes answer 429 with ``Retry-After``; online scoring skips the target and counts it).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum

from toolpath.errors import ConfigError

__all__ = ["BudgetLimits", "BudgetSpent", "ProcessBudget", "WhenSpent", "process_budget"]

WINDOW_SECONDS = 60.0
DEFAULT_IN_FLIGHT = 32


class WhenSpent(StrEnum):
    """What a call does when the minute's budget is spent."""

    WAIT = "wait"
    """Wait until the minute has room (an evaluation someone started)."""
    REFUSE = "refuse"
    """Refused at once, with when to try again (a request; online scoring)."""


@dataclass(frozen=True)
class BudgetLimits:
    """The process's judge limits; ``None``: no limit of that kind."""

    in_flight: int = DEFAULT_IN_FLIGHT
    """Model calls in flight at once, all sources together; more wait for a place."""
    calls_per_minute: int | None = None
    tokens_per_minute: int | None = None
    """Input + output tokens of the calls answered in the last minute."""

    def __post_init__(self) -> None:
        for name in ("in_flight", "calls_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is None and name != "in_flight":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"judge budget {name}: expected a whole number ≥ 1, got {value!r}")

    def divided(self, parts: int) -> BudgetLimits:
        """Each of ``parts`` processes' share (at least one of each), so that together they keep these limits."""
        return BudgetLimits(
            max(1, self.in_flight // parts),
            None if self.calls_per_minute is None else max(1, self.calls_per_minute // parts),
            None if self.tokens_per_minute is None else max(1, self.tokens_per_minute // parts),
        )


class BudgetSpent(Exception):
    """The minute's judge budget is spent; try again after :attr:`retry_after` seconds."""

    def __init__(self, what: str, limit: int, retry_after: float) -> None:
        self.what = what
        self.limit = limit
        self.retry_after = max(1, math.ceil(retry_after))
        super().__init__(
            f"judge budget spent: {limit} {what} per minute for this process; retry after {self.retry_after} s"
        )


@dataclass(frozen=True)
class BudgetState:
    """What the last minute has used, for ``/metrics`` and the pages."""

    calls: int
    tokens: int
    in_flight: int
    refused: int
    limits: BudgetLimits


class ProcessBudget:
    """The limits and the last minute's use; thread-safe. ``clock``: seconds, monotonic (a test's own)."""

    def __init__(self, limits: BudgetLimits | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._limits = limits or BudgetLimits()
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._token_total = 0
        self._in_flight = 0
        self._refused = 0
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def limits(self) -> BudgetLimits:
        return self._limits

    def configure(self, limits: BudgetLimits) -> None:
        """New limits from now on (a command's options); the last minute's use is kept."""
        with self._lock:
            self._limits = limits
            self._slots = weakref.WeakKeyDictionary()

    def state(self) -> BudgetState:
        with self._lock:
            self._forget(self._clock())
            return BudgetState(len(self._calls), self._token_total, self._in_flight, self._refused, self._limits)

    def take(self) -> None:
        """Count one call as sent now, or raise :class:`BudgetSpent` (nothing counted) when the minute is spent."""
        with self._lock:
            now = self._clock()
            self._forget(now)
            limits = self._limits
            if limits.calls_per_minute is not None and len(self._calls) >= limits.calls_per_minute:
                self._refused += 1
                raise BudgetSpent("calls", limits.calls_per_minute, self._calls[0] + WINDOW_SECONDS - now)
            if limits.tokens_per_minute is not None and self._token_total >= limits.tokens_per_minute:
                self._refused += 1
                raise BudgetSpent("tokens", limits.tokens_per_minute, self._free_tokens_at(limits) - now)
            self._calls.append(now)

    def check(self, calls: int) -> None:
        """Raise :class:`BudgetSpent` now if ``calls`` more calls would not fit in the minute (nothing counted):
        a request that knows how many calls it needs is refused before any work, not half-way."""
        with self._lock:
            now = self._clock()
            self._forget(now)
            limits = self._limits
            if limits.calls_per_minute is not None and len(self._calls) + calls > limits.calls_per_minute:
                if calls > limits.calls_per_minute:
                    raise ConfigError(
                        f"{calls} judge calls in one request: more than this process's {limits.calls_per_minute} "
                        "per minute"
                    )
                frees = self._calls[len(self._calls) + calls - limits.calls_per_minute - 1]
                self._refused += 1
                raise BudgetSpent("calls", limits.calls_per_minute, frees + WINDOW_SECONDS - now)
            if limits.tokens_per_minute is not None and self._token_total >= limits.tokens_per_minute:
                self._refused += 1
                raise BudgetSpent("tokens", limits.tokens_per_minute, self._free_tokens_at(limits) - now)

    def spent_tokens(self, tokens: int) -> None:
        """Count an answered call's input + output tokens."""
        if tokens <= 0:
            return
        with self._lock:
            now = self._clock()
            self._tokens.append((now, tokens))
            self._token_total += tokens
            self._forget(now)

    async def admit(self, when_spent: WhenSpent) -> None:
        """Count a call about to be sent (:meth:`take`); when the minute is spent, wait for room or raise
        :class:`BudgetSpent`, as ``when_spent`` says."""
        while True:
            try:
                self.take()
                return
            except BudgetSpent as spent:
                if when_spent is WhenSpent.REFUSE:
                    raise
                await asyncio.sleep(min(spent.retry_after, WINDOW_SECONDS))

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """A place among the calls in flight (on this event loop: the judges run on one for the process)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._slots.get(loop)
            if semaphore is None:
                semaphore = self._slots[loop] = asyncio.Semaphore(self._limits.in_flight)
        async with semaphore:
            with self._lock:
                self._in_flight += 1
            try:
                yield
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _forget(self, now: float) -> None:
        """Drop what is older than a minute (under the lock)."""
        start = now - WINDOW_SECONDS
        while self._calls and self._calls[0] <= start:
            self._calls.popleft()
        while self._tokens and self._tokens[0][0] <= start:
            self._token_total -= self._tokens.popleft()[1]

    def _free_tokens_at(self, limits: BudgetLimits) -> float:
        """When enough of the minute's tokens have aged out to be under the limit again (under the lock)."""
        assert limits.tokens_per_minute is not None
        total = self._token_total
        for at, tokens in self._tokens:
            total -= tokens
            if total < limits.tokens_per_minute:
                return at + WINDOW_SECONDS
        return self._clock() + WINDOW_SECONDS


_PROCESS = ProcessBudget()


def process_budget() -> ProcessBudget:
    """This process's judge budget (its limits set by the command that started it; none but calls in flight
    otherwise)."""
    return _PROCESS
