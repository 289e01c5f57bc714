"""The running collector says, every minute, what an operator sizes with: spans stored per second, CPU per span,
the store's commit latency and the online backlog."""

from __future__ import annotations

import time

from tests.helpers.builders import otlp_json
from tests.helpers.collector import Collector
from toolpath.collector.sizing import CommitTimes, SizingReporter


class Ticks:
    def __init__(self) -> None:
        self.now, self.cpu, self.spans = 100.0, 5.0, 0

    def clock(self) -> float:
        return self.now

    def used(self) -> float:
        return self.cpu


def test_an_intervals_figures():
    ticks = Ticks()
    commits = CommitTimes()
    reporter = SizingReporter(
        lambda *_, **__: None, lambda: ticks.spans, commits, lambda: 7, every=60, clock=ticks.clock, cpu=ticks.used
    )
    ticks.now, ticks.cpu, ticks.spans = 160.0, 5.6, 12_000
    for ms in range(1, 101):  # 100 commits of 1 to 100 ms
        commits.add(ms / 1000)
    sizing = reporter.measure()
    assert (sizing.seconds, sizing.spans, sizing.spans_per_second) == (60.0, 12_000, 200.0)
    assert round(sizing.cpu_us_per_span, 3) == 50.0  # 0.6 s of CPU over 12,000 spans
    assert (sizing.commits, sizing.commit_p50_ms, sizing.commit_p99_ms) == (100, 50.0, 99.0)
    assert sizing.online_backlog == 7
    line = sizing.line()
    assert (
        line
        == "sizing: 200 spans/s over 60 s, 50 µs CPU per span, commit p50 50.0 ms, p99 99.0 ms (100); online backlog 7"
    )
    assert sizing.fields()["sizing_spans_per_second"] == 200.0
    ticks.now += 60  # a quiet minute: nothing stored, nothing committed, said as such
    quiet = reporter.measure()
    assert quiet.line() == "sizing: 0 spans/s over 60 s, no span, no commit; online backlog 7"


def test_collect_says_its_sizing_every_interval(tmp_path):
    collector = Collector(tmp_path, None, "--sizing-every", "1", "--workers", "1").start()
    try:
        for n in range(5):
            assert collector.post(otlp_json(f"{n + 1:032x}", tool_calls=3), "application/json")[0] == 200
        time.sleep(2.5)
    finally:
        collector.stop()
    out = collector.process.stdout.read() if collector.process and collector.process.stdout else ""
    lines = [line for line in (collector.first_line + out).splitlines() if line.startswith("sizing:")]
    assert lines, out
    assert any("spans/s" in line and "commit p50" in line for line in lines), lines


def test_a_clean_stop_of_one_process_leaves_nothing_in_the_wal(tmp_path):
    collector = Collector(tmp_path, None, "--workers", "1").start()
    try:
        assert collector.post(otlp_json("9" * 32, tool_calls=3), "application/json")[0] == 200
    finally:
        collector.stop()
    wal = collector.db.with_name(collector.db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert collector.store().counts()["invocations"] == 1
