"""The sessions list in an order other than newest first: the whole filtered set ordered in the database by a
session's turns, failures, tool calls, slowest turn, tokens, cost, time, id or agent, a page at a time (an offset
into that order), so that the first row is the store's first by that column, not the page's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Float, FromClause, Subquery, TextClause, case, func, literal, select, text
from sqlalchemy.sql.elements import ColumnElement

from toolpath.store import browse, session_filter, session_list
from toolpath.store import schema as t
from toolpath.store.browse import SessionPage
from toolpath.store.session_filter import SessionFilter
from toolpath.store.session_list import Condition, Reader
from toolpath.store.store import Store
from toolpath.store.usage import ModelPrice


class SessionSort(StrEnum):
    """What the sessions list can be ordered by (the ``sort`` parameter of ``/sessions``)."""

    TIME = "time"
    """Last active."""
    SESSION = "session"
    AGENT = "agent"
    TURNS = "turns"
    FAILURES = "failures"
    CALLS = "calls"
    """Tool calls."""
    LATENCY = "latency"
    """The slowest turn that finished."""
    TOKENS = "tokens"
    """Input plus output tokens of the session's model calls."""
    COST = "cost"
    """Reported by the calls, else their tokens priced by the price table."""


TEXT_SORTS = frozenset({SessionSort.SESSION, SessionSort.AGENT})
"""Orders by text: ascending unless asked otherwise (the others start with the largest)."""


def _priced(prices: Mapping[str, ModelPrice]) -> ColumnElement[Any]:
    """A usage row's cost: the one its calls reported, else their tokens priced by ``prices`` now (none without a
    price)."""
    used = t.turn_usage
    priced: ColumnElement[Any] = literal(None, Float)
    if prices:
        priced = case(
            *(
                (
                    used.c.model == name,
                    used.c.input_tokens * (price.input_per_million / 1e6)
                    + used.c.output_tokens * (price.output_per_million / 1e6),
                )
                for name, price in prices.items()
            ),
            else_=None,
        )
    return case((used.c.reported == 1, used.c.cost), else_=priced)


COUNTS = frozenset({SessionSort.TURNS, SessionSort.FAILURES, SessionSort.CALLS, SessionSort.TOKENS})
"""Sorts whose value is 0, not none, for a session without turns (or calls, or model calls)."""


def per_session(key: SessionSort, prices: Mapping[str, ModelPrice] | None = None) -> Subquery | None:
    """Each session's value of ``key`` in one grouped pass over its turns (columns ``session_id`` and ``value``;
    a session without turns, calls or usage rows absent), or ``None`` for a column of ``sessions`` itself.

    One pass whatever the planner's estimates: a value per session read by a correlated subquery was a plan per
    session, and PostgreSQL, before it has analysed freshly written rows, joined each session's turns to every
    usage row or tool call (a sequential scan of them per session: 11.7 s for 6,000 sessions)."""
    inv, calls, used = t.invocations, t.tool_calls, t.turn_usage
    source: FromClause = inv
    value: ColumnElement[Any]
    match key:
        case SessionSort.TIME | SessionSort.SESSION | SessionSort.AGENT:
            return None
        case SessionSort.TURNS:
            value = func.count()
        case SessionSort.FAILURES:
            value = func.sum(case((inv.c.failure > 0, 1), else_=0))
        case SessionSort.LATENCY:
            value = func.max(inv.c.latency_seconds)
        case SessionSort.CALLS:
            source, value = calls.join(inv, inv.c.invocation_id == calls.c.invocation_id), func.count()
        case SessionSort.TOKENS:
            value = func.sum(inv.c.input_tokens + inv.c.output_tokens)
        case SessionSort.COST:
            source = used.join(inv, inv.c.invocation_id == used.c.invocation_id)
            value = func.sum(_priced(prices or {}))
    grouped = select(inv.c.session_id.label("session_id"), value.label("value")).select_from(source)
    return grouped.group_by(inv.c.session_id).subquery("per_session")


def _column(key: SessionSort) -> ColumnElement[Any]:
    """The column of ``sessions`` that ``key`` orders by (time, id or agent)."""
    s = t.sessions
    match key:
        case SessionSort.TIME:
            return s.c.last_started_at
        case SessionSort.SESSION:
            return s.c.session_id
        case SessionSort.AGENT:
            return s.c.agent_name
    raise ValueError(f"sort: {key} is no column of sessions")


@dataclass(frozen=True)
class OrderedPage:
    page: SessionPage
    number: int
    """This page's number, from 1."""
    more: bool
    """A later page follows."""


def ordered_session_page(
    store: Store,
    where: SessionFilter,
    key: SessionSort,
    *,
    descending: bool,
    page: int = 1,
    limit: int = 50,
    prices: Mapping[str, ModelPrice] | None = None,
) -> OrderedPage:
    """Page ``page`` (from 1) of the sessions matching ``where``, all of them ordered by ``key`` (sessions without
    a value last, either way; ties by session id), with the rows and total :func:`browse.session_page` gives."""
    s = t.sessions
    grouped = per_session(key, prices)
    sessions: FromClause = s
    value: ColumnElement[Any]
    if grouped is None:
        value = _column(key)
    else:
        sessions = s.outerjoin(grouped, grouped.c.session_id == s.c.session_id)
        value = func.coalesce(grouped.c.value, 0) if key in COUNTS else grouped.c.value
    value = value.label("sort_value")
    ordered = value.desc().nulls_last() if descending else value.asc().nulls_last()
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        conditions = session_filter.conditions(where, reader.dialect)
        query = (
            select(s.c.session_id, s.c.agent_name, s.c.first_started_at, s.c.last_started_at, value)
            .select_from(sessions)
            .where(*(_clause(n, c) for n, c in enumerate(conditions)))
            .order_by(ordered, s.c.session_id)
            .offset((page - 1) * limit)
            .limit(limit + 1)
        )
        found = list(conn.execute(query).all())
        shown = found[:limit]
        total, capped = session_list.counted(reader, conditions, cap=browse.COUNT_CAP)
        rows = session_list.session_rows(reader, shown, where.evaluation_attribute)
    return OrderedPage(SessionPage(rows, None, None, total, capped), page, len(found) > limit)


def _clause(number: int, condition: Condition) -> TextClause:
    """``condition`` in a SQLAlchemy query: its ``?`` marks as bound parameters named apart from other
    conditions' (none of the filters' SQL holds a ``?`` or ``:`` of its own)."""
    pieces = condition.sql.split("?")
    names = [f"c{number}_{i}" for i in range(len(pieces) - 1)]
    sql = pieces[0] + "".join(f":{name}{piece}" for name, piece in zip(names, pieces[1:], strict=True))
    return text(sql).bindparams(**dict(zip(names, condition.params, strict=True)))
