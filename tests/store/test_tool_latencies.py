"""The Tools page's per-tool figures on both databases: percentiles interpolated as PostgreSQL's
``percentile_cont`` (SQLite's own aggregate must agree with it), the slowest call of equal latencies the latest,
untimed calls counted but not timed, and a tool of no timed call with no latency at all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from toolpath.model import Invocation, ToolCall
from toolpath.store.tool_stats import tool_stats
from toolpath.store.turn_window import Window

T0 = 1_780_000_000 * 10**9
MS = 1_000_000


def call(name: str, start_ms: int, took_ms: int | None, error: str | None = None) -> ToolCall:
    start = T0 + start_ms * MS
    end = None if took_ms is None else start + took_ms * MS
    return ToolCall(name=name, args={"at": start_ms}, error=error, start_time=start, end_time=end)


def turn(n: int, calls: list[ToolCall]) -> Invocation:
    return Invocation(invocation_id=f"turn-{n}", session_id="s", agent_name="bot", prompt=f"p{n}", tool_calls=calls,
                      started_at=datetime.fromtimestamp((T0 + n * 10**9) / 1e9, UTC))  # fmt: skip


def test_percentiles_ties_and_untimed_calls(store):
    store.write([
        turn(0, [call("lookup", 0, 10), call("lookup", 1, 40), call("probe", 2, None)]),
        turn(1, [call("lookup", 3, 20), call("lookup", 4, 40, "TimeoutError: slow"), call("probe", 5, None)]),
        turn(2, [call("lookup", 6, 30), call("lookup", 7, None)]),
    ])  # fmt: skip
    rows = {row.tool: row for row in tool_stats(store, Window()).rows}
    lookup = rows["lookup"]
    assert (lookup.calls, lookup.errors, lookup.timed) == (6, 1, 5)
    assert lookup.p50 == pytest.approx(0.030) and lookup.p95 == pytest.approx(0.040)
    assert lookup.max == pytest.approx(0.040)
    assert lookup.slowest is not None  # two calls took 40 ms: the later one
    assert (lookup.slowest.invocation_id, lookup.slowest.position, lookup.slowest.error) == (
        "turn-1", 1, "TimeoutError: slow")  # fmt: skip
    probe = rows["probe"]
    assert (probe.calls, probe.timed, probe.p50, probe.p95, probe.max, probe.slowest) == (2, 0, None, None, None, None)


@pytest.mark.parametrize(("tooks", "p50", "p95"), [([7], 7, 7), ([10, 20, 30, 40], 25, 38.5), ([5, 1, 3], 3, 4.8)])
def test_the_interpolation_is_percentile_conts(store, tooks, p50, p95):
    store.write([turn(0, [call("t", n, took) for n, took in enumerate(tooks)])])
    [row] = tool_stats(store, Window()).rows
    assert row.p50 == pytest.approx(p50 / 1000) and row.p95 == pytest.approx(p95 / 1000)
