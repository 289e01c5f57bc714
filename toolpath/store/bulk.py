"""The write path's bulk statements, through the driver's fast path: one ``executemany`` per table per batch, rows
as plain tuples, each JSON value encoded once (with ``json.dumps``, as SQLAlchemy's JSON type does, ``None`` as
JSON ``null`` too, so what is stored reads back the same), no per-row SQLAlchemy processing. On PostgreSQL
psycopg pipelines an ``executemany``: one round trip per batch, not per row.

Upserts are idempotent (``ON CONFLICT``), so a batch written twice leaves the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import JSON, delete

from toolpath.model import Invocation
from toolpath.store import schema as t
from toolpath.store.spanrecord import SpanRecord

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_IN_CHUNK = 500
_dumps = json.dumps


def _columns(table: Any) -> tuple[list[str], set[str]]:
    names = [c.name for c in table.columns]
    return names, {c.name for c in table.columns if isinstance(c.type, JSON)}


def _insert_sql(conn: Any, table: Any, conflict: str) -> str:
    """``INSERT INTO table (…) VALUES (…) <conflict>`` in the driver's placeholder style; JSON columns cast on
    PostgreSQL (the values are JSON text)."""
    names, json_columns = _columns(table)
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    postgres = conn.dialect.name == "postgresql"
    values = ", ".join(f"CAST({mark} AS jsonb)" if postgres and n in json_columns else mark for n in names)
    return f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({values}) {conflict}".rstrip()


def insert_spans(conn: Any, spans: Sequence[SpanRecord]) -> None:
    """Raw spans; a span already stored (same trace and span id) is left as it is."""
    if not spans:
        return
    sql = _insert_sql(conn, t.spans, "ON CONFLICT (trace_id, span_id) DO NOTHING")
    dumps = _dumps
    rows = [
        (s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_time, s.end_time, s.status_code,
         s.status_message, dumps(s.attributes), dumps(s.events), dumps(s.resource), s.scope)
        for s in spans
    ]  # fmt: skip
    conn.exec_driver_sql(sql, rows)


def write_invocations(conn: Any, invocations: Sequence[Invocation], existing: Iterable[str] | None = None) -> None:
    """Upsert invocations with their sessions and tool calls. ``existing``: the ids that may have tool calls
    stored already (they are replaced); ``None``: any of them may."""
    sessions = _session_rows(invocations)
    conn.exec_driver_sql(_session_upsert_sql(conn), sessions)
    conflict = "ON CONFLICT (invocation_id) DO UPDATE SET " + ", ".join(
        f"{c} = excluded.{c}" for c in _INVOCATION_COLUMNS if c != "invocation_id"
    )
    conn.exec_driver_sql(_insert_sql(conn, t.invocations, conflict), [_invocation_row(inv) for inv in invocations])
    replaced = [inv.invocation_id for inv in invocations] if existing is None else sorted(existing)
    for i in range(0, len(replaced), _IN_CHUNK):
        conn.execute(delete(t.tool_calls).where(t.tool_calls.c.invocation_id.in_(replaced[i : i + _IN_CHUNK])))
    dumps = _dumps
    calls = [
        (inv.invocation_id, i, c.name, dumps(c.args), dumps(c.result), c.call_id, c.error, c.start_time, c.end_time)
        for inv in invocations
        for i, c in enumerate(inv.tool_calls)
    ]  # fmt: skip
    if calls:
        conn.exec_driver_sql(_insert_sql(conn, t.tool_calls, ""), calls)


_INVOCATION_COLUMNS = [c.name for c in t.invocations.columns]


def _session_upsert_sql(conn: Any) -> str:
    """A new session's row, or the stored one widened to the new first and last start (its agent kept unless
    there was none)."""
    s = "sessions"
    return _insert_sql(
        conn,
        t.sessions,
        f"ON CONFLICT (session_id) DO UPDATE SET agent_name = COALESCE(excluded.agent_name, {s}.agent_name), "
        f"first_started_at = CASE WHEN excluded.first_started_at < {s}.first_started_at "
        f"THEN excluded.first_started_at ELSE {s}.first_started_at END, "
        f"last_started_at = CASE WHEN excluded.last_started_at > {s}.last_started_at "
        f"THEN excluded.last_started_at ELSE {s}.last_started_at END",
    )


def _session_rows(invocations: Iterable[Invocation]) -> list[tuple[Any, ...]]:
    rows: dict[str, list[Any]] = {}
    for inv in invocations:
        start = started_ns(inv)
        row = rows.get(inv.session_id)
        if row is None:
            rows[inv.session_id] = [inv.session_id, inv.agent_name, start, start]
            continue
        row[1] = row[1] or inv.agent_name
        row[2] = min(row[2], start)
        row[3] = max(row[3], start)
    return [tuple(row) for row in rows.values()]


def _invocation_row(inv: Invocation) -> tuple[Any, ...]:
    return (
        inv.invocation_id,
        inv.session_id,
        inv.trace_id or "",
        inv.agent_name,
        inv.prompt,
        inv.response,
        _dumps([list(pair) for pair in inv.intermediate_responses]),
        inv.latency_seconds,
        inv.failure,
        inv.error,
        started_ns(inv),
        _dumps(inv.attributes),
    )


def started_ns(inv: Invocation) -> int:
    """The invocation's start in ns since the epoch (0 when unknown), as stored."""
    if inv.started_at is None:
        return 0
    return (inv.started_at - _EPOCH) // timedelta(microseconds=1) * 1000
