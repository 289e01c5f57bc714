"""The sessions list ordered by a value of each session's turns (turns, failures, latency, calls, tokens, cost) is
read in one grouped pass: the pages equal the order of the correlated subquery per session it replaced, on SQLite
and PostgreSQL, and PostgreSQL's plan has no subquery per session whatever the planner estimates (the subquery
per session read every usage row once per session before the store was analysed)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from sqlalchemy import Float, case, event, func, insert, literal, select
from sqlalchemy.sql.elements import ColumnElement

from toolpath.store import schema as t
from toolpath.store import turn_usage
from toolpath.store.session_filter import SessionFilter
from toolpath.store.session_order import SessionSort, ordered_session_page
from toolpath.store.store import Store
from toolpath.store.usage import ModelPrice

PRICES = {"priced": ModelPrice("priced", 2.0, 8.0), "cheap": ModelPrice("cheap", 0.5, 1.0)}
GROUPED = ["turns", "failures", "latency", "calls", "tokens", "cost"]


def _fill(store: Store) -> None:
    """31 sessions: one without turns, turns without calls or model calls, failed turns without latency, models
    priced, unpriced and reporting their cost, equal values (ties by id)."""
    with store.engine.begin() as conn:
        for k in range(31):
            sid = f"s{k:03d}"
            conn.execute(insert(t.sessions).values(session_id=sid, agent_name=f"a{k % 3}", first_started_at=k,
                                                   last_started_at=1000 - k))  # fmt: skip
            for j in range(k % 6 if k else 0):
                iid, trace = f"{sid}-{j}", f"{k:016x}{j:016x}"
                failed = (k * j) % 4 == 1
                conn.execute(insert(t.invocations).values(
                    invocation_id=iid, session_id=sid, trace_id=trace, agent_name=f"a{k % 3}", prompt="p",
                    response="r", intermediate_responses=[], latency_seconds=None if failed else (k + j) % 5 / 2,
                    failure=int(failed), started_at=k * 10 + j, attributes={}))  # fmt: skip
                for c in range((k + j) % 3):
                    conn.execute(insert(t.tool_calls).values(invocation_id=iid, position=c, name="f", args={}))
                for m in range((k + j) % 3):
                    model = ["priced", "cheap", "unknown", "reported"][(k + j + m) % 4]
                    attributes: dict[str, Any] = {"gen_ai.request.model": model,
                                                  "gen_ai.usage.input_tokens": (k * 37 + j) % 50,
                                                  "gen_ai.usage.output_tokens": (k + m) % 7}  # fmt: skip
                    if model == "reported":
                        attributes["gen_ai.usage.cost.total"] = (k % 4) / 1000
                    conn.execute(insert(t.spans).values(
                        trace_id=trace, span_id=f"{m:016x}", name="chat", kind=0, start_time=m, status_code=0,
                        attributes=attributes, events=[], resource={}))  # fmt: skip
        turn_usage.backfill(conn)  # the rows above bypass the write path: their usage kept as migration 0011 does


def _correlated(key: SessionSort, prices: Mapping[str, ModelPrice]) -> ColumnElement[Any]:
    """Each session's value as the list read it before: a correlated subquery on ``sessions``."""
    s, inv, calls, used = t.sessions, t.invocations, t.tool_calls, t.turn_usage
    mine = inv.c.session_id == s.c.session_id
    match key:
        case SessionSort.TURNS:
            return select(func.count()).select_from(inv).where(mine).scalar_subquery()
        case SessionSort.FAILURES:
            return select(func.count()).select_from(inv).where(mine, inv.c.failure > 0).scalar_subquery()
        case SessionSort.LATENCY:
            return select(func.max(inv.c.latency_seconds)).where(mine).scalar_subquery()
        case SessionSort.CALLS:
            joined = calls.join(inv, inv.c.invocation_id == calls.c.invocation_id)
            return select(func.count()).select_from(joined).where(mine).scalar_subquery()
        case SessionSort.TOKENS:
            tokens = func.coalesce(func.sum(inv.c.input_tokens + inv.c.output_tokens), 0)
            return select(tokens).where(mine).scalar_subquery()
    priced = case(
        *(
            (used.c.model == name, used.c.input_tokens * (p.input_per_million / 1e6)
             + used.c.output_tokens * (p.output_per_million / 1e6))
            for name, p in prices.items()
        ),
        else_=literal(None, Float),
    )  # fmt: skip
    per_row = case((used.c.reported == 1, used.c.cost), else_=priced)
    joined = used.join(inv, inv.c.invocation_id == used.c.invocation_id)
    return select(func.sum(per_row)).select_from(joined).where(mine).scalar_subquery()


def _reference(store: Store, key: SessionSort, descending: bool, agent: str | None) -> list[tuple[str, Any]]:
    s = t.sessions
    value = _correlated(key, PRICES)
    ordered = value.desc().nulls_last() if descending else value.asc().nulls_last()
    query = select(s.c.session_id, value).order_by(ordered, s.c.session_id)
    if agent is not None:
        query = query.where(s.c.agent_name == agent)
    with store.engine.connect() as conn:
        return [(row[0], row[1]) for row in conn.execute(query)]


def _pages(store: Store, key: SessionSort, descending: bool, agent: str | None) -> Iterator[str]:
    number = 1
    while True:
        found = ordered_session_page(store, SessionFilter(agent=agent), key, descending=descending, page=number,
                                     limit=7, prices=PRICES)  # fmt: skip
        yield from (row["session_id"] for row in found.page.rows)
        if not found.more:
            return
        number += 1


@pytest.mark.parametrize("key", GROUPED)
def test_pages_follow_the_correlated_order_on_sqlite_and_postgresql(store, key):
    _fill(store)
    for descending in (True, False):
        for agent in (None, "a1"):
            want = _reference(store, SessionSort(key), descending, agent)
            assert len(want) == (31 if agent is None else 10)
            assert list(_pages(store, SessionSort(key), descending, agent)) == [sid for sid, _ in want]
            if agent is None:  # the filler's cases are there: sessions without a value, and ties
                assert any(v is None for _, v in want) == (key in ("latency", "cost"))
                assert len({v for _, v in want}) < len(want)


def _rows_read(plan: dict[str, Any], into: dict[str, int]) -> dict[str, int]:
    """Per table, the rows its scans in ``plan`` (EXPLAIN ANALYZE's JSON node) read, every loop counted."""
    if relation := plan.get("Relation Name"):
        removed = plan.get("Rows Removed by Filter", 0) + plan.get("Rows Removed by Index Recheck", 0)
        rows = plan["Actual Rows"] + removed
        into[relation] = into.get(relation, 0) + rows * plan["Actual Loops"]
    for child in plan.get("Plans", []):
        _rows_read(child, into)
    return into


@pytest.mark.parametrize("key", GROUPED)
def test_postgresql_plans_no_query_per_session_whatever_its_estimates(postgres_url, key):
    store = Store(postgres_url)
    try:
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"TRUNCATE {', '.join([*t.metadata.tables, 'turn_text'])}")
        _fill(store)
        statements: list[tuple[str, Any]] = []

        def seen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
            statements.append((statement, parameters))

        event.listen(store.engine, "before_cursor_execute", seen)
        ordered_session_page(store, SessionFilter(), SessionSort(key), descending=True, limit=5, prices=PRICES)
        event.remove(store.engine, "before_cursor_execute", seen)
        statement, parameters = next((s, p) for s, p in statements if "per_session" in s)
        with store.engine.connect() as conn:
            cursor = conn.connection.cursor()
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", parameters)
            plan = cursor.fetchone()[0][0]["Plan"]
            sizes = {name: conn.execute(select(func.count()).select_from(t.metadata.tables[name])).scalar_one()
                     for name in ("sessions", "invocations", "tool_calls", "turn_usage")}  # fmt: skip
        read = _rows_read(plan, {})
        assert "SubPlan" not in str(plan)  # no plan per session: the shape that was slow without statistics
        # each table's rows are reached: a table this small may be read again inside a nested loop, as the planner
        # likes, but never once per session by a subquery (above)
        assert set(read) >= {"sessions"} and all(name in sizes for name in read), (read, sizes)
    finally:
        store.close()
