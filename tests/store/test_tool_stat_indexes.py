"""The Tools page read from the indexes of migration 0014 (toolpath.store.stat_indexes) says what the straightforward
computation says, on SQLite and PostgreSQL: per tool and agent over every call (several agents, a sub-agent's calls,
failures, untimed calls, equal latencies, a call naming no agent, a failed call without a start), per model over
every span (model calls outside any turn, both conventions, values that are no number); the queries use the
indexes; and the migration fills them for a store written before it, and goes back."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import event

from toolpath.model import Invocation, ToolCall
from toolpath.store import migrate, stat_indexes
from toolpath.store.model_usage import ModelTotals, model_totals
from toolpath.store.session_list import Reader
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.store.tool_stats import (
    PERCENTILES,
    CallOrder,
    CallRef,
    ToolStat,
    _indexed_counts,
    calls_of_tool,
    tool_stats,
)
from toolpath.store.turn_usage import USAGE_KEYS
from toolpath.store.turn_window import Window

T0 = 1_780_000_000 * 10**9
MS = 1_000_000
JOINED = Window(since_ns=-(2**62))
"""Every turn, as a window: the figures read with the turns (the computation before the indexes)."""


def call(name: str, start_ms: int | None, took_ms: int | None, agent: str | None, error: str | None = None) -> ToolCall:
    start = None if start_ms is None else T0 + start_ms * MS
    end = None if took_ms is None or start is None else start + took_ms * MS
    return ToolCall(name=name, args={}, error=error, start_time=start, end_time=end, agent_name=agent)


def turn(n: int, agent: str, calls: list[ToolCall]) -> Invocation:
    return Invocation(invocation_id=f"turn-{n:02d}", session_id=f"s{n % 3}", agent_name=agent, prompt=f"p{n}",
                      tool_calls=calls, started_at=datetime.fromtimestamp((T0 + n * 10**9) / 1e9, UTC))  # fmt: skip


def turns() -> list[Invocation]:
    out = []
    for n in range(24):
        agent = ("planner", "forecaster")[n % 2]
        calls = [
            call("lookup", n * 100, (n * 37) % 50 + 5, agent),
            call("lookup", n * 100 + 1, 60 if n in (5, 17) else None, agent),  # two equal slowest; untimed calls
            call(
                "fetch",
                n * 100 + 2,
                10 + n,
                "sub" if n % 3 == 0 else agent,  # a sub-agent's calls
                "TimeoutError: slow" if n % 4 == 1 else None,
            ),
            call("legacy", n * 100 + 3, 20 + n % 5, agent if n % 5 else None),  # the turn's agent counts
        ]
        if n % 6 == 0:
            calls.append(call("late", None if n == 12 else n * 100 + 4, 7, agent, "ValueError: no"))  # no start
            calls.append(call("late", n * 100 + 5, 9, agent))
        if n == 9:
            calls.append(ToolCall(name="lookup", args={}, start_time=T0 + 50 * MS, end_time=T0, agent_name=agent))
        out.append(turn(n, agent, calls))
    return out


def spans() -> list[SpanRecord]:
    def span(n: int, attributes: dict[str, Any], trace: int = 1) -> SpanRecord:
        return SpanRecord(f"{trace:032x}", f"{n:016x}", None, "chat", 3, T0 + n * MS, T0 + n * MS + 5, 0, None,
                          attributes)  # fmt: skip

    found = [
        span(n, {"gen_ai.request.model": ("m1", "m2")[n % 2], "gen_ai.usage.input_tokens": n,
                 "gen_ai.usage.output_tokens": 2 * n})
        for n in range(1, 30)
    ]  # fmt: skip
    return [
        *found,
        span(40, {"gen_ai.response.model": "m1", "gen_ai.request.model": "m2", "gen_ai.usage.cost.total": 0.25}),
        span(
            41,
            {
                "gen_ai.request.model": "m1",
                "gen_ai.usage.cost.input": 0.1,
                "gen_ai.usage.cost.output": 0.2,
                "gen_ai.usage.input_tokens": 7,
            },
        ),
        span(42, {"llm.token_count.prompt": 11, "llm.token_count.completion": 3}),  # no model named
        span(43, {"gen_ai.request.model": "m2", "gen_ai.usage.input_tokens": "12", "llm.token_count.prompt": 4}),
        span(44, {"gen_ai.request.model": "m2", "gen_ai.usage.input_tokens": True}),  # no number: not a call
        span(45, {"gen_ai.tool.name": "lookup", "note": "gen_ai.usage.input_tokens"}),  # a tool span, no turn's
        span(46, {"gen_ai.request.model": "m3", "gen_ai.usage.output_tokens": 5}, trace=2),  # another trace
    ]


@pytest.fixture
def filled(store: Store) -> Store:
    store.write(turns(), spans())  # the spans' traces are no turn's: every model call is outside any turn
    return store


def _number(value: Any) -> float | None:
    return value if type(value) in (int, float) else None


def reference_models(store: Store) -> list[ModelTotals]:
    """Per model and whether the calls reported a cost, computed in Python from every span's attributes."""
    with store.engine.connect() as conn:
        found = [row[0] for row in conn.exec_driver_sql("SELECT attributes FROM spans")]
    groups: dict[tuple[str | None, bool], list[Any]] = {}
    for attributes in found:
        values = json.loads(attributes) if isinstance(attributes, str) else attributes
        given = [next((v for k in keys if (v := _number(values.get(k))) is not None), None)
                 for keys in (USAGE_KEYS.input_tokens, USAGE_KEYS.output_tokens)]  # fmt: skip
        cost = _number(values.get(USAGE_KEYS.cost_total))
        parts = [p for k in USAGE_KEYS.cost_parts if (p := _number(values.get(k))) is not None]
        cost = sum(parts) if cost is None and parts else cost
        if given == [None, None] and cost is None:
            continue
        model = next((values[k] for k in USAGE_KEYS.model if k in values), None)
        group = groups.setdefault((model, cost is not None), [0, 0, 0, None])
        group[0] += 1
        group[1] += given[0] or 0
        group[2] += given[1] or 0
        group[3] = cost if group[3] is None else group[3] + cost
    return [ModelTotals(m, r, n, t_in, t_out, cost) for (m, r), (n, t_in, t_out, cost) in groups.items()]


def reference_tools(store: Store) -> list[ToolStat]:
    """Per tool and agent (the call's, else its turn's), computed in Python from every call's row."""
    sql = ("SELECT c.name, COALESCE(c.agent_name, i.agent_name), c.invocation_id, c.position, "
           "COALESCE(c.start_time, i.started_at), c.start_time, c.end_time, c.error "
           "FROM tool_calls c JOIN invocations i ON i.invocation_id = c.invocation_id")  # fmt: skip
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(sql).all()
    groups: dict[tuple[str, str], list[Any]] = {}
    for tool, agent, invocation_id, position, at, start, end, error in rows:
        took = end - start if start is not None and end is not None and end >= start else None
        groups.setdefault((tool, agent), []).append((took, at, invocation_id, position, error))
    out = []
    for (tool, agent), calls in groups.items():
        timed = sorted(c[0] for c in calls if c[0] is not None)
        failed = [c for c in calls if c[4] is not None]
        slowest = max((c for c in calls if c[0] is not None), key=lambda c: c[:4], default=None)
        latest = max(failed, key=lambda c: c[1:4], default=None)

        percentiles = [percentile(timed, p) / 1e9 if timed else None for p in PERCENTILES]
        out.append(
            ToolStat(
                tool,
                agent,
                len(calls),
                len(failed),
                len(timed),
                *percentiles,
                timed[-1] / 1e9 if timed else None,
                ref(tool, agent, slowest),
                ref(tool, agent, latest),
            )
        )
    return sorted(out, key=lambda r: (-r.calls, r.tool, r.agent or ""))


def ref(tool: str, agent: str, c: Sequence[Any] | None) -> CallRef | None:
    if c is None:
        return None
    return CallRef(tool, agent, c[2], c[3], c[1], None if c[0] is None else c[0] / 1e9, c[4])


def percentile(ordered: list[int], p: float) -> float:
    h = (len(ordered) - 1) * p
    low = int(h)
    second = ordered[min(low + 1, len(ordered) - 1)]
    return ordered[low] + (h - low) * (second - ordered[low])


def same_models(found: list[ModelTotals], expected: list[ModelTotals]) -> None:
    """Equal, each group's summed cost to the last few bits (floating-point sums follow the rows' order)."""
    key = lambda t: (t.model or "", t.reported)  # noqa: E731
    found, expected = sorted(found, key=key), sorted(expected, key=key)
    assert [(t.model, t.reported, t.calls, t.input_tokens, t.output_tokens) for t in found] == [
        (t.model, t.reported, t.calls, t.input_tokens, t.output_tokens) for t in expected
    ]
    assert [t.cost for t in found] == [pytest.approx(t.cost, rel=1e-12) if t.cost else t.cost for t in expected]


@pytest.fixture
def statements(filled: Store) -> Iterator[list[str]]:
    """The SQL the store runs meanwhile."""
    ran: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        ran.append(statement)

    event.listen(filled.engine, "before_cursor_execute", record)
    yield ran
    event.remove(filled.engine, "before_cursor_execute", record)


def test_the_tools_figures_from_the_indexes_are_the_straightforward_ones(filled):
    indexed = tool_stats(filled, Window())
    assert indexed == tool_stats(filled, JOINED)
    assert indexed.rows == reference_tools(filled)
    with filled.engine.connect() as conn:
        counted, _, joined = _indexed_counts(conn, Reader.of_connection(conn))
    assert joined == ["late", "legacy"]  # a call naming no agent; a failed call without a start
    assert {(r.tool, r.agent) for r in counted} == {
        ("lookup", "planner"),
        ("lookup", "forecaster"),
        ("fetch", "planner"),
        ("fetch", "forecaster"),
        ("fetch", "sub"),
    }
    rows = {(r.tool, r.agent): r for r in indexed.rows}
    lookup = rows["lookup", "forecaster"]
    assert (lookup.calls, lookup.timed) == (25, 14)  # its untimed calls, and one ending before it starts
    assert lookup.slowest is not None and lookup.slowest.invocation_id == "turn-17"  # of two at 60 ms, the later
    assert rows["fetch", "sub"].errors == 2 and rows["fetch", "sub"].latest_failure is not None
    late = rows["late", "planner"].latest_failure  # a failed call without a start is as late as its turn (12 s)
    assert late is not None and late.invocation_id == "turn-12"  # not turn-18's, started 1.8 s in


@pytest.mark.parametrize("order", list(CallOrder))
def test_a_tools_calls_from_the_indexes_are_the_joined_ones(filled, order):
    for tool, agent in [("lookup", None), ("lookup", "forecaster"), ("fetch", None), ("fetch", "sub"),
                        ("legacy", None), ("legacy", "planner"), ("late", None), ("absent", None)]:  # fmt: skip
        indexed = calls_of_tool(filled, Window(), tool, order, agent=agent, limit=4)
        assert indexed == calls_of_tool(filled, JOINED, tool, order, agent=agent, limit=4), (tool, agent)
    slowest = calls_of_tool(filled, Window(), "lookup", CallOrder.SLOWEST, limit=2)
    assert [(c.invocation_id, c.seconds) for c in slowest] == [("turn-17", 0.06), ("turn-05", 0.06)]


def test_the_cap_keeps_the_most_called_either_way(filled):
    for window in (Window(), JOINED):
        capped = tool_stats(filled, window, cap=3)
        assert capped.more and capped.rows == reference_tools(filled)[:3]


def test_the_models_figures_are_every_spans(filled):
    same_models(model_totals(filled, USAGE_KEYS, Window()), reference_models(filled))
    assert {t.model for t in model_totals(filled, USAGE_KEYS, Window())} == {"m1", "m2", "m3", None}
    late = model_totals(filled, USAGE_KEYS, Window(since_ns=T0 + 40 * MS))
    assert sorted((t.model or "", t.calls) for t in late) == [("", 1), ("m1", 2), ("m2", 1), ("m3", 1)]


def test_the_all_time_reads_use_the_indexes(filled, statements):
    if filled.dialect != "sqlite":
        pytest.skip("PostgreSQL plans by its statistics: the figures are compared above")
    tool_stats(filled, Window())
    model_totals(filled, USAGE_KEYS, Window())
    with filled.engine.connect() as conn:
        reads = [s for s in statements if s.lstrip().startswith("SELECT") and "invocations" not in s]
        params = {"?": ("lookup", "planner", 1)}
        plans = []
        for sql in reads:
            marks = sql.count("?")
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params["?"][:marks]).all()
            plans.append(" / ".join(row[-1] for row in plan))
    assert len(plans) >= 3
    for plan in plans:  # each call or span read by one of the indexes, none read whole
        assert any(
            name in plan for name in (stat_indexes.TIMES_INDEX, stat_indexes.FAILED_INDEX, stat_indexes.USAGE_INDEX)
        ), plan


def test_failed_calls_of_a_window_are_still_read_by_its_turns(filled):
    """A query that states ``error IS NOT NULL`` alone (the Errors page's) is not offered the failed calls' index,
    which would have SQLite read every failed call of the store rather than the window's turns."""
    if filled.dialect != "sqlite":
        pytest.skip("PostgreSQL plans by its statistics")
    sql = ("SELECT tool_calls.name FROM tool_calls JOIN invocations ON invocations.invocation_id = "
           "tool_calls.invocation_id WHERE tool_calls.error IS NOT NULL AND invocations.started_at >= ?")  # fmt: skip
    with filled.engine.connect() as conn:
        plan = " / ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", (T0,)).all())
    assert stat_indexes.FAILED_INDEX not in plan and "ix_invocations_started" in plan, plan


def test_migration_0014_indexes_a_store_written_before_it_and_goes_back(store_url):
    store = Store(store_url, create=False)
    store.upgrade("0013")
    store.write(turns(), spans())
    store.close()
    upgraded = Store(store_url)
    made = {stat_indexes.TIMES_INDEX, stat_indexes.FAILED_INDEX}
    assert indexes(upgraded) == (made | {stat_indexes.USAGE_INDEX} if upgraded.dialect == "sqlite" else made)
    assert tool_stats(upgraded, Window()).rows == reference_tools(upgraded)
    same_models(model_totals(upgraded, USAGE_KEYS, Window()), reference_models(upgraded))
    with upgraded.engine.begin() as conn:
        command.downgrade(migrate.alembic_config(conn), "0013")
    assert indexes(upgraded) == set()
    assert tool_stats(upgraded, JOINED).rows == reference_tools(upgraded)
    upgraded.close()


def indexes(store: Store) -> set[str]:
    """The names of the indexes of 0014 the store has."""
    if store.dialect == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type = 'index'"
    else:
        sql = "SELECT indexname FROM pg_indexes WHERE tablename IN ('spans', 'tool_calls')"
    with store.engine.connect() as conn:
        found = {row[0] for row in conn.exec_driver_sql(sql)}
    return found & {stat_indexes.TIMES_INDEX, stat_indexes.FAILED_INDEX, stat_indexes.USAGE_INDEX}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("fresh_postgres")
