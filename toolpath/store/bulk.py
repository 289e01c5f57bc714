"""The write path's bulk statements, through the driver's fast path: one ``executemany`` per table per batch, rows
as plain tuples, each JSON value encoded once (:func:`toolpath.jsontext.dumps`: what it writes reads back as the values
``json.dumps``, SQLAlchemy's JSON type, would have written; ``None`` as JSON ``null`` too), no per-row
SQLAlchemy processing. On PostgreSQL psycopg pipelines an ``executemany``: one round trip per batch, not per row.

Upserts are idempotent (``ON CONFLICT``), so a batch written twice leaves the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, BigInteger, Connection, Float, Integer, String, Text, delete
from sqlalchemy.exc import DBAPIError

from toolpath.jsontext import dumps
from toolpath.store import schema as t
from toolpath.store import turn_text, turn_usage
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.turn_usage_spans import TurnUsage

if TYPE_CHECKING:  # the pydantic model is imported where an invocation is built: reading lists needs none
    from toolpath.model import Invocation

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_IN_CHUNK = 500
SpanRow = tuple[Any, ...]
"""A ``spans`` row as :func:`span_rows` encodes it."""


_dumps = dumps


def _columns(table: Any) -> tuple[list[str], set[str]]:
    names = [c.name for c in table.columns]
    return names, {c.name for c in table.columns if isinstance(c.type, JSON)}


def _write(
    conn: Connection, table: Any, rows: Sequence[tuple[Any, ...]], conflict: str = "", *, new: bool = False
) -> None:
    """``INSERT INTO table … <conflict>`` of ``rows`` (tuples in the table's column order, JSON as text): on
    SQLite an ``executemany``; on PostgreSQL ``COPY`` when the rows are ``new`` (no key of theirs is stored: the
    caller holds the locks that make sure), else one statement whose parameters are one array per column
    (``unnest``): a single round trip either way."""
    if not rows:
        return
    names, json_columns = _columns(table)
    columns = ", ".join(names)
    if conn.dialect.name == "postgresql" and new:
        driver = conn.connection.driver_connection
        assert driver is not None  # an open connection
        cursor = driver.cursor()
        statement = f"COPY {table.name} ({columns}) FROM STDIN"
        driver_error = conn.dialect.loaded_dbapi.Error
        try:
            with cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
        except driver_error as exc:  # raised as SQLAlchemy raises a statement's: a lock timeout is operational
            lost = conn.dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor)
            if lost:
                conn.invalidate(exc)
            raise DBAPIError.instance(statement, None, exc, driver_error, connection_invalidated=lost,
                                      dialect=conn.dialect) from exc  # fmt: skip
        return
    if conn.dialect.name != "postgresql":
        marks = ", ".join("?" if conn.dialect.paramstyle == "qmark" else "%s" for _ in names)
        conn.exec_driver_sql(f"INSERT INTO {table.name} ({columns}) VALUES ({marks}) {conflict}".rstrip(), rows)
        return
    arrays = ", ".join(f"CAST(%s AS {_pg_type(c)}[])" for c in table.columns)
    values = ", ".join(f"CAST(u.{n} AS jsonb)" if n in json_columns else f"u.{n}" for n in names)
    sql = f"INSERT INTO {table.name} ({columns}) SELECT {values} FROM unnest({arrays}) AS u({columns}) {conflict}"
    conn.exec_driver_sql(sql.rstrip(), tuple(pg_array(column) for column in zip(*rows, strict=True)))


def pg_array(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal of ``values`` (str, int, float, bool or ``None``), for a ``CAST(%s AS <type>[])``
    parameter: the driver passes one string, where its list adapter spends about 1 µs an element (a write
    request's arrays hold some thousands). Each string element is quoted, its backslashes and quotes escaped, so
    any text reads back as it was."""
    if all(type(v) is str for v in values):
        plain = "".join(values)
        if '"' not in plain and "\\" not in plain:
            return '{"' + '","'.join(values) + '"}' if values else "{}"
    return "{" + ",".join(map(_array_element, values)) + "}"


def _array_element(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):  # reads as a boolean or an integer, as the column is
        return "1" if value else "0"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return repr(value)
    raise TypeError(f"no array literal for {type(value).__name__}")


def _pg_type(column: Any) -> str:
    if isinstance(column.type, JSON | Text | String):
        return "text"
    if isinstance(column.type, BigInteger):
        return "bigint"
    if isinstance(column.type, Integer):
        return "integer"
    if isinstance(column.type, Float):
        return "double precision"
    raise TypeError(f"no array type for {column}")


def insert_spans(conn: Connection, spans: Sequence[SpanRecord], *, new: bool = False) -> None:
    """Raw spans; a span already stored (same trace and span id; on PostgreSQL, in the same time partition: ingest
    looks keys up in every one) is left as it is. ``new``: none is stored, and this transaction holds the locks of
    their traces (:func:`toolpath.store.ingest.lock_traces`)."""
    insert_span_rows(conn, span_rows(spans), new=new)


def insert_span_rows(conn: Connection, rows: Sequence[SpanRow], *, new: bool = False) -> None:
    """:func:`insert_spans` of rows :func:`span_rows` encoded (before the transaction, so that it is short)."""
    _write(conn, t.spans, rows, "ON CONFLICT DO NOTHING", new=new)  # each partition has its own key


def span_rows(spans: Sequence[SpanRecord]) -> list[SpanRow]:
    """The ``spans`` rows of ``spans``, JSON encoded; a resource many spans share (one object per OTLP
    ResourceSpans) is encoded once."""
    dumps = _dumps
    resources: dict[int, str] = {}  # by id: the spans hold every resource alive until the rows are made

    def resource(value: Any) -> str:
        key = id(value)
        text = resources.get(key)
        if text is None:
            text = resources[key] = dumps(value)
        return text

    return [
        (s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_time, s.end_time, s.status_code,
         s.status_message, dumps(s.attributes), dumps(s.events), resource(s.resource), s.scope)
        for s in spans
    ]  # fmt: skip


class EncodedInvocations:
    """Invocations' ``invocations`` and ``tool_calls`` rows, encoded ahead (before the transaction that writes
    them); :func:`write_invocations` takes an invocation's rows from here when it is the very object encoded."""

    def __init__(self, invocations: Iterable[Invocation] = ()) -> None:
        self._rows: dict[int, tuple[Invocation, tuple[Any, ...], list[tuple[Any, ...]]]] = {}
        for inv in invocations:
            self._rows[id(inv)] = (inv, _invocation_row(inv), _call_rows(inv))

    def rows(self, inv: Invocation) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
        found = self._rows.get(id(inv))
        if found is not None and found[0] is inv:  # the object encoded (held here: its id is not reused)
            return found[1], found[2]
        return _invocation_row(inv), _call_rows(inv)


def write_invocations(
    conn: Connection,
    invocations: Sequence[Invocation],
    existing: Iterable[str] | None = None,
    encoded: EncodedInvocations | None = None,
    usage: Mapping[str, TurnUsage] | None = None,
) -> None:
    """Upsert invocations with their sessions, tool calls and usage. ``existing``: the ids that may have tool calls
    and usage rows stored already (they are replaced); ``None``: any of them may. ``encoded``: rows encoded ahead.
    ``usage``: turns' usage computed from their spans (:mod:`~toolpath.store.turn_usage_spans`); a turn it leaves
    out is recomputed from the spans stored by now (:func:`toolpath.store.turn_usage.refresh`)."""
    encoded = encoded or EncodedInvocations()
    usage = usage or {}
    rows = [encoded.rows(inv) for inv in invocations]
    _write(conn, t.sessions, _session_rows(invocations), _SESSION_CONFLICT)
    _write(conn, t.invocations, [_with_usage(row, usage.get(row[0])) for row, _ in rows], _INVOCATION_CONFLICT)
    replaced = [inv.invocation_id for inv in invocations] if existing is None else sorted(existing)
    delete_of_invocations(conn, t.tool_calls, replaced)
    _write(conn, t.tool_calls, [call for _, calls in rows for call in calls], new=True)  # deleted above
    ids = [inv.invocation_id for inv in invocations]
    delete_of_invocations(conn, t.turn_usage, [i for i in replaced if i in usage])
    used = [(i, *row) for i in sorted(set(ids)) if (turn := usage.get(i)) is not None for row in turn.rows]
    _write(conn, t.turn_usage, used, new=True)  # deleted above
    turn_usage.refresh(conn, [i for i in ids if i not in usage])  # from the spans stored by now
    turn_text.refresh(conn, ids)  # after the user: its text holds it


_USAGE_AT = len(t.invocations.columns) - 3
assert [c.name for c in t.invocations.columns][_USAGE_AT:] == ["input_tokens", "output_tokens", "user_id"]


def _with_usage(row: tuple[Any, ...], turn: TurnUsage | None) -> tuple[Any, ...]:
    """The invocation's row with its tokens and user (else left to the refresh, which updates them)."""
    return row if turn is None else (*row[:_USAGE_AT], turn.input_tokens, turn.output_tokens, turn.user)


def delete_of_invocations(conn: Connection, table: Any, invocation_ids: Sequence[str]) -> None:
    """Delete the rows of ``table`` (``tool_calls``, ``turn_usage`` or ``online_results``: rows only ever inserted
    and deleted, never updated) that belong to ``invocation_ids``, 500 ids a statement.

    On PostgreSQL each id is looked up by the table's primary key (it starts with ``invocation_id``), whatever the
    statistics say, and the rows found are deleted by their ``ctid``. A plain ``invocation_id IN (…)`` is planned
    from the table's statistics: before the first ANALYZE of a growing table (autovacuum's comes a minute or more
    after the writes start) the planner takes each id for 1/200 of the rows, and a list of some tens of ids turned
    into a scan of the whole table, 125 ms a statement at 900,000 tool calls and growing with them."""
    for i in range(0, len(invocation_ids), _IN_CHUNK):
        chunk = list(invocation_ids[i : i + _IN_CHUNK])
        if conn.dialect.name == "postgresql":
            found = f"SELECT ctid FROM {table.name} WHERE invocation_id = k.v OFFSET 0"  # not flattened into a join
            conn.exec_driver_sql(
                f"DELETE FROM {table.name} WHERE ctid = ANY(ARRAY(SELECT d.ctid FROM "
                f"unnest(CAST(%s AS text[])) AS k(v) CROSS JOIN LATERAL ({found}) d))",
                (pg_array(chunk),),
            )
        else:
            conn.execute(delete(table).where(table.c.invocation_id.in_(chunk)))


def _call_rows(inv: Invocation) -> list[tuple[Any, ...]]:
    dumps, invocation_id = _dumps, inv.invocation_id
    return [
        (invocation_id, i, c.name, dumps(c.args), dumps(c.result), c.call_id, c.error, c.start_time, c.end_time,
         c.agent_name)
        for i, c in enumerate(inv.tool_calls)
    ]  # fmt: skip


_INVOCATION_COLUMNS = [c.name for c in t.invocations.columns]
_INVOCATION_CONFLICT = "ON CONFLICT (invocation_id) DO UPDATE SET " + ", ".join(
    f"{c} = excluded.{c}" for c in _INVOCATION_COLUMNS if c != "invocation_id"
)


_SESSION_CONFLICT = (  # a stored session widened to the new first and last start, its agent kept unless it had none
    "ON CONFLICT (session_id) DO UPDATE SET agent_name = COALESCE(excluded.agent_name, sessions.agent_name), "
    "first_started_at = CASE WHEN excluded.first_started_at < sessions.first_started_at "
    "THEN excluded.first_started_at ELSE sessions.first_started_at END, "
    "last_started_at = CASE WHEN excluded.last_started_at > sessions.last_started_at "
    "THEN excluded.last_started_at ELSE sessions.last_started_at END"
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
    return [tuple(rows[session]) for session in sorted(rows)]  # row locks in one order: writers cannot deadlock


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
        inv.answered_by,
        0,  # input and output tokens, and the user: write_invocations fills them in (or turn_usage.refresh)
        0,
        None,
    )


def started_ns(inv: Invocation) -> int:
    """The invocation's start in ns since the epoch (0 when unknown), as stored."""
    if inv.started_at is None:
        return 0
    return (inv.started_at - _EPOCH) // timedelta(microseconds=1) * 1000
