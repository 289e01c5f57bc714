"""The figures an operator sizes a deployment with (docs/scale.md), said by the running collector every minute:
spans stored per second, the process's CPU time per stored span, the store's commit latency (p50 and p99 of the
minute's writes) and the online backlog (jobs waiting). One line a minute, in text or as a JSON log record's fields.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["CommitTimes", "Sizing", "SizingReporter"]

DEFAULT_EVERY_SECONDS = 60


class CommitTimes:
    """The durations of the store's write transactions since the last look (the newest 8,192 of them): appended by
    the writing threads, taken by the reporter."""

    def __init__(self, most: int = 8192) -> None:
        self._times: deque[float] = deque(maxlen=most)
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        self._times.append(seconds)  # deque.append is atomic: no lock on the write path

    def take(self) -> list[float]:
        with self._lock:
            taken = list(self._times)
            self._times.clear()
        return taken


@dataclass(frozen=True)
class Sizing:
    """One interval's figures."""

    seconds: float
    spans: int
    spans_per_second: float
    cpu_us_per_span: float | None
    """The whole process's CPU time (every thread: decoding, redaction, rebuilding, SQL, scoring) per stored span."""
    commits: int
    commit_p50_ms: float | None
    commit_p99_ms: float | None
    online_backlog: int | None
    """Online jobs waiting (``None``: no online scoring)."""

    def line(self) -> str:
        cpu = f"{self.cpu_us_per_span:.0f} µs CPU per span" if self.cpu_us_per_span is not None else "no span"
        commits = (
            f"commit p50 {self.commit_p50_ms:.1f} ms, p99 {self.commit_p99_ms:.1f} ms ({self.commits})"
            if self.commit_p99_ms is not None and self.commit_p50_ms is not None
            else "no commit"
        )
        backlog = f"; online backlog {self.online_backlog}" if self.online_backlog is not None else ""
        return f"sizing: {self.spans_per_second:.0f} spans/s over {self.seconds:.0f} s, {cpu}, {commits}{backlog}"

    def fields(self) -> dict[str, Any]:
        return {f"sizing_{key}": value for key, value in asdict(self).items()}


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(share * len(ordered) + 0.999999) - 1))]


class SizingReporter:
    """Every ``every`` seconds, ``report(line, fields)`` with the interval's :class:`Sizing`. ``spans()``: the spans
    stored so far; ``commits``: the write durations; ``backlog()``: online jobs waiting (``None``: no online)."""

    def __init__(
        self,
        report: Callable[..., None],
        spans: Callable[[], int],
        commits: CommitTimes,
        backlog: Callable[[], int | None] = lambda: None,
        *,
        every: float = DEFAULT_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = time.process_time,
    ) -> None:
        self.report, self.spans, self.commits, self.backlog = report, spans, commits, backlog
        self.every, self.clock, self.cpu = every, clock, cpu
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = (self.clock(), self.cpu(), self.spans())

    def measure(self) -> Sizing:
        """The figures since the last measure (or the start)."""
        now, cpu, spans = self.clock(), self.cpu(), self.spans()
        then, cpu_then, spans_then = self._last
        self._last = (now, cpu, spans)
        seconds, stored = max(now - then, 1e-9), spans - spans_then
        times = self.commits.take()
        try:
            backlog = self.backlog()
        except Exception:  # a store that does not answer now: said as unknown, the next minute asks again
            backlog = None
        return Sizing(
            seconds,
            stored,
            stored / seconds,
            (cpu - cpu_then) / stored * 1e6 if stored else None,
            len(times),
            percentile(times, 0.5) * 1000 if times else None,
            percentile(times, 0.99) * 1000 if times else None,
            backlog,
        )

    def start(self) -> SizingReporter:
        self._thread = threading.Thread(target=self._run, name="toolpath-sizing", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            sizing = self.measure()
            self.report(sizing.line(), **sizing.fields())
