"""The Errors and Tools pages' reads, on SQLite and PostgreSQL alike: failures grouped by type × tool × agent with
counts, first and last times and the latest failure's span; per tool and agent, calls, errors and the latency's
percentiles (interpolated as percentile_cont does, computed by window functions on SQLite); per model, tokens and
reported cost; each over a time window, with evaluations' turns left out or not."""

from __future__ import annotations

import pytest

from tests.helpers.failure_store import AGES, MINUTE, MS, TIMEOUT, UNTYPED, FailureStore
from toolpath.store.error_groups import error_groups
from toolpath.store.model_usage import model_totals
from toolpath.store.tool_stats import CallOrder, calls_of_tool, tool_stats
from toolpath.store.turn_window import Window
from toolpath.ui.usage_view import USAGE_KEYS

KEYS = ("gen_ai.tool.name", "tool.name")
EVALUATION = "toolpath.evaluation"


@pytest.fixture
def filled(store):
    return FailureStore(store).fill()


def since(filled: FailureStore, minutes: float) -> Window:
    return Window(since_ns=filled.now - int(minutes * MINUTE))


def grouped(filled: FailureStore, window: Window) -> list[tuple[str, str | None, str | None, int]]:
    return [(g.kind, g.tool, g.agent, g.count) for g in error_groups(filled.store, window, tool_name_keys=KEYS).groups]


def test_failures_grouped_by_type_tool_and_agent(filled):
    found = error_groups(filled.store, Window(), tool_name_keys=KEYS)
    assert [(g.kind, g.tool, g.agent, g.count) for g in found.groups] == [
        ("TimeoutError", "fetch_weather", "forecaster", 4),
        ("RuntimeError", None, "planner", 2),
        ("KeyError", None, "planner", 1),  # the count-1 groups, the latest first: 5 min ago
        ("TimeoutError", "fetch_weather", "planner", 1),  # 10 min
        ("", None, "planner", 1),  # 3 h: its text names no type
        ("ValueError", "fetch_weather", "forecaster", 1),  # 2 d
    ]
    assert not found.more
    timeouts, budget, _, _, untyped, _ = found.groups
    assert timeouts.last_ns == filled.now - 5 * MINUTE + MS  # call 0, the latest
    assert timeouts.first_ns == filled.now - (AGES[19 % 5] * MINUTE + 19 * 10**9) + MS  # call 19
    assert timeouts.latest_error == TIMEOUT
    assert (timeouts.invocation_id, timeouts.span_id) == (filled.latest_timeout_turn, filled.latest_timeout_span)
    assert budget.span_id == filled.budget_turn_span and budget.latest_error == "RuntimeError: out of budget"
    assert untyped.latest_error == UNTYPED and untyped.span_id is None  # no spans stored: no span to link


def test_the_window_and_evaluations(filled):
    assert sum(c for *_, c in grouped(filled, Window())) == 10
    hidden = Window(hide_evaluation=True, evaluation_attribute=EVALUATION)
    assert ("KeyError", None, "planner", 1) not in grouped(filled, hidden)
    assert sum(c for *_, c in grouped(filled, hidden)) == 9
    assert grouped(filled, since(filled, 15)) == [
        ("TimeoutError", "fetch_weather", "forecaster", 1),
        ("KeyError", None, "planner", 1),
        ("TimeoutError", "fetch_weather", "planner", 1),
    ]  # equal counts: the latest first (the call started 1 ms into its turn, as old as the KeyError's)
    assert sum(c for *_, c in grouped(filled, since(filled, 60))) == 5
    assert sum(c for *_, c in grouped(filled, since(filled, 1440))) == 7
    assert sum(c for *_, c in grouped(filled, since(filled, 7 * 1440))) == 9
    until = Window(until_ns=filled.now - 7 * 1440 * MINUTE)
    assert grouped(filled, until) == [("TimeoutError", "fetch_weather", "forecaster", 1)]  # call 19, 30 d ago


def test_a_cap_keeps_the_most_frequent(filled):
    found = error_groups(filled.store, Window(), cap=2)
    assert [g.count for g in found.groups] == [4, 2] and found.more


def test_tool_latency_percentiles_and_errors(filled):
    found = tool_stats(filled.store, Window())
    rows = {(r.tool, r.agent): r for r in found.rows}
    assert list(rows) == [("fetch_weather", "forecaster"), ("book_table", "planner"), ("fetch_weather", "planner")]
    weather = rows[("fetch_weather", "forecaster")]
    assert (weather.calls, weather.errors, weather.timed) == (20, 5, 20)
    assert weather.error_rate == pytest.approx(0.25)
    # 10, 20, ..., 200 ms: the median between 100 and 110, the 95th percentile 5 % of the way from 190 to 200
    assert weather.p50 == pytest.approx(0.105) and weather.p95 == pytest.approx(0.1905) and weather.max == 0.2
    assert weather.slowest is not None and weather.slowest.seconds == pytest.approx(0.2)
    assert weather.latest_failure is not None and weather.latest_failure.invocation_id == filled.latest_timeout_turn
    table = rows[("book_table", "planner")]
    assert (table.calls, table.errors, table.timed) == (3, 0, 2)  # one call has no times
    assert table.p50 == pytest.approx(0.2) and table.p95 == pytest.approx(0.29) and table.max == pytest.approx(0.3)
    assert table.latest_failure is None
    planner = rows[("fetch_weather", "planner")]
    assert planner.p50 == pytest.approx(0.065) and planner.p95 == pytest.approx(0.0785)
    assert planner.latest_failure is not None and planner.latest_failure.error == TIMEOUT


def test_tool_stats_in_a_window(filled):
    rows = {(r.tool, r.agent): r for r in tool_stats(filled.store, since(filled, 60)).rows}
    assert list(rows) == [("fetch_weather", "forecaster"), ("fetch_weather", "planner")]
    weather = rows[("fetch_weather", "forecaster")]
    # calls 0, 1, 5, 6, 10, 11, 15, 16: 10, 20, 60, 70, 110, 120, 160, 170 ms
    assert (weather.calls, weather.errors) == (8, 2) and weather.p50 == pytest.approx(0.09)
    assert weather.max == pytest.approx(0.17)


def test_a_tools_calls(filled):
    slowest = calls_of_tool(filled.store, Window(), "fetch_weather", CallOrder.SLOWEST, limit=3)
    assert [c.seconds for c in slowest] == pytest.approx([0.2, 0.19, 0.18])
    failed = calls_of_tool(filled.store, Window(), "fetch_weather", CallOrder.LATEST_FAILED)
    assert [c.agent for c in failed] == [
        "forecaster",
        "planner",
        "forecaster",
        "forecaster",
        "forecaster",
        "forecaster",
    ]
    assert [c.error for c in failed].count(TIMEOUT) == 5
    mine = calls_of_tool(filled.store, Window(), "fetch_weather", CallOrder.LATEST_FAILED, agent="planner")
    assert [(c.agent, c.seconds) for c in mine] == [("planner", pytest.approx(0.08))]
    assert calls_of_tool(filled.store, Window(), "book_table", CallOrder.LATEST_FAILED) == []


def test_model_tokens_and_reported_cost(filled):
    totals = {(t.model, t.reported): t for t in model_totals(filled.store, USAGE_KEYS, Window())}
    assert set(totals) == {("gemini-x", False), ("gemini-y", True)}
    x, y = totals[("gemini-x", False)], totals[("gemini-y", True)]
    assert (x.calls, x.input_tokens, x.output_tokens, x.cost) == (2, 200, 20, None)
    assert (y.calls, y.input_tokens, y.output_tokens) == (1, 50, 5) and y.cost == pytest.approx(0.02)
    recent = model_totals(filled.store, USAGE_KEYS, since(filled, 60))
    assert sorted((t.model, t.input_tokens) for t in recent) == [("gemini-x", 100), ("gemini-y", 50)]


def test_a_value_that_is_no_number_counts_as_absent(store):
    """A token count written as text: left out on both databases, where a cast would fail PostgreSQL's query."""
    from toolpath.store.spanrecord import SpanRecord

    store.write([], [SpanRecord("a" * 32, "b" * 16, None, "chat", 3, 10**18, 10**18 + 1, 0, None,
                                {"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": "lots",
                                 "gen_ai.usage.output_tokens": 7})])  # fmt: skip
    [only] = model_totals(store, USAGE_KEYS, Window())
    assert (only.model, only.input_tokens, only.output_tokens, only.calls) == ("m", 0, 7, 1)
