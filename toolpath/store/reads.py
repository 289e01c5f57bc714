"""Bulk reads of invocations and their tool calls through the driver: plain tuples, each JSON value decoded once
(``json.loads`` on SQLite; psycopg decodes ``jsonb`` itself), no per-value SQLAlchemy processing. The store's
invocation reads share them; online workers read :func:`turns_by_id` for every batch they score."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import Connection

from toolpath.store.session_list import calls_dropped_sql
from toolpath.store.sqlite_driver import driver_rows

if TYPE_CHECKING:  # the pydantic model is imported where an invocation is built: reading lists needs none
    from toolpath.model import Invocation, ToolCall

_IN_CHUNK = 500
_INVOCATION_COLUMNS = (
    "invocation_id, session_id, trace_id, agent_name, prompt, response, {intermediate_responses}, latency_seconds, "
    "failure, error, started_at, {attributes}, answered_by"
)
_TURN_COLUMNS = (
    "invocation_id, session_id, trace_id, agent_name, prompt, response, {intermediate_responses}, latency_seconds, "
    "failure, started_at"
)
_CALL_COLUMNS = "invocation_id, name, {args}, {result}, call_id, error, start_time, end_time, agent_name"


def _columns(conn: Connection, template: str, *json_columns: str) -> str:
    """The column list, ``jsonb`` columns read as text on PostgreSQL (decoded in one go, as SQLite's text is)."""
    text = conn.dialect.name == "postgresql"
    return template.format(**{c: f"CAST({c} AS text)" if text else c for c in json_columns})


def invocations_by_id(conn: Connection, invocation_ids: Sequence[str]) -> list[Invocation]:
    """The stored invocations among ``invocation_ids``, with their tool calls, in the order asked."""
    from toolpath.model import Invocation, ns_to_datetime

    found: dict[str, Any] = {}
    for chunk, marks in _chunks(conn, invocation_ids):
        columns = _columns(conn, _INVOCATION_COLUMNS, "intermediate_responses", "attributes")
        sql = f"SELECT {columns} FROM invocations WHERE invocation_id IN ({marks})"
        for row in conn.exec_driver_sql(sql, tuple(chunk)):
            found[row[0]] = row
    calls = tool_calls(conn, list(found))
    rows = [found[i] for i in invocation_ids if i in found]
    decoded = _decode(conn, [value for row in rows for value in (row[6], row[11])])
    out = []
    for index, row in enumerate(rows):
        (invocation_id, session_id, trace_id, agent_name, prompt, response, _, latency, failure, error, started,
         _, answered_by) = row  # fmt: skip
        intermediate, attributes = decoded[2 * index], decoded[2 * index + 1]
        out.append(
            Invocation(
                invocation_id=invocation_id,
                session_id=session_id,
                agent_name=agent_name,
                prompt=prompt,
                response=response,
                tool_calls=calls.get(invocation_id, []),
                intermediate_responses=[tuple(pair) for pair in intermediate or []],
                latency_seconds=latency,
                failure=failure,
                error=error,
                trace_id=trace_id or None,
                started_at=ns_to_datetime(started),
                attributes=attributes or {},
                answered_by=answered_by,
            )
        )
    return out


class StoredTurn(NamedTuple):
    """What online scoring reads of a stored invocation: the columns a metric row holds, and each call's name,
    arguments, error, result, id and agent (no times or attributes: no row holds them)."""

    invocation_id: str
    session_id: str
    trace_id: str | None
    agent_name: str | None
    prompt: str | None
    response: str | None
    intermediate_responses: list[tuple[str, str]]
    latency_seconds: float | None
    failure: int
    started_at: datetime | None
    calls: list[tuple[str, Any, str | None, Any, str | None, str | None]]
    """``(name, arguments, error, result, call_id, agent_name)`` in call order."""
    calls_dropped: int = 0
    """The calls the collector's ``--max-tool-calls`` left out of it."""
    response_note: str | None = None
    """Why its response is null though the agent answered (its answer had no text), when it says so."""


RESPONSE_NOT_TEXT = "toolpath.agent.response_not_text"
"""The attribute saying why an invocation's response is null though its agent answered: the tracer's
``toolpath.tracer.semconv.TOOLPATH_RESPONSE_NOT_TEXT``, which the store does not import."""


def _response_note_sql(dialect: str) -> str:
    if dialect == "postgresql":
        return f"(attributes ->> '{RESPONSE_NOT_TEXT}')"
    return f"json_extract(attributes, '$.\"{RESPONSE_NOT_TEXT}\"')"


def turns_by_id(conn: Connection, invocation_ids: Sequence[str]) -> list[StoredTurn]:
    """The stored invocations among ``invocation_ids`` as :class:`StoredTurn`, in the order asked."""
    from toolpath.model import ns_to_datetime

    found: dict[str, Any] = {}
    columns = ", ".join(
        (_columns(conn, _TURN_COLUMNS, "intermediate_responses"), calls_dropped_sql(conn.dialect.name),
         _response_note_sql(conn.dialect.name))
    )  # fmt: skip
    for chunk, marks in _chunks(conn, invocation_ids):
        sql = f"SELECT {columns} FROM invocations WHERE invocation_id IN ({marks})"
        for row in _rows(conn, sql, tuple(chunk)):
            found[row[0]] = row
    calls: dict[str, list[tuple[str, Any, str | None, Any, str | None, str | None]]] = {}
    mine: list[tuple[str, Any, str | None, Any, str | None, str | None]] = []
    template = "invocation_id, name, {args}, error, {result}, call_id, agent_name"
    rows = _call_rows(conn, list(found), template, "args", "result")
    values = iter(_decode(conn, [value for row in rows for value in (row[2], row[4])]))
    last = None  # the rows come by invocation id: each turn's calls in a run
    for (invocation_id, name, _, error, _, call_id, agent), args, result in zip(rows, values, values, strict=True):
        if invocation_id != last:
            last, mine = invocation_id, []
            calls[invocation_id] = mine
        mine.append((name, args, error, result, call_id, agent))
    ordered = [found[i] for i in invocation_ids if i in found]
    turns = []
    for row, intermediate in zip(ordered, _decode(conn, [row[6] for row in ordered]), strict=True):
        (invocation_id, session_id, trace_id, agent_name, prompt, response, _, latency, failure, started, dropped,
         note) = row  # fmt: skip
        pairs = [(author, text) for author, text in intermediate] if intermediate else []
        note = note if note.__class__ is str and note and response is None else None
        fields = (invocation_id, session_id, trace_id or None, agent_name, prompt, response, pairs, latency, failure,
                  ns_to_datetime(started), calls.get(invocation_id, []), int(dropped or 0), note)  # fmt: skip
        turns.append(_new_turn(StoredTurn, fields))
    return turns


_new_turn = tuple.__new__
"""A :class:`StoredTurn` from all its fields, as ``StoredTurn(*fields)`` builds it, without its Python ``__new__``."""


def tool_calls(conn: Connection, invocation_ids: Sequence[str]) -> dict[str, list[ToolCall]]:
    """The tool calls of ``invocation_ids`` in call order, by invocation id (an invocation without calls is
    absent)."""
    from toolpath.model import ToolCall, call_record

    rows = _call_rows(conn, invocation_ids, _CALL_COLUMNS, "args", "result")
    decoded = _decode(conn, [value for row in rows for value in (row[2], row[3])])
    found: dict[str, list[ToolCall]] = {}
    for index, (invocation_id, name, _, _, call_id, error, start, end, agent) in enumerate(rows):
        # the values were checked when they were written: built as ToolCall.from_item builds checked ones
        call = call_record(ToolCall, name, decoded[2 * index], decoded[2 * index + 1], call_id, error)
        if start is not None or end is not None:
            call.__dict__.update(start_time=start, end_time=end)
            call.__pydantic_fields_set__.update(("start_time", "end_time"))
        if agent is not None:
            call.__dict__["agent_name"] = agent
            call.__pydantic_fields_set__.add("agent_name")
        calls = found.get(invocation_id)
        if calls is None:
            found[invocation_id] = [call]
        else:
            calls.append(call)
    return found


def _call_rows(conn: Connection, invocation_ids: Sequence[str], template: str, *json_columns: str) -> list[Any]:
    """Rows of ``tool_calls`` for ``invocation_ids``, by invocation id and then in call order."""
    rows: list[Any] = []
    columns = _columns(conn, template, *json_columns)
    for chunk, marks in _chunks(conn, invocation_ids):
        sql = f"SELECT {columns} FROM tool_calls WHERE invocation_id IN ({marks}) ORDER BY invocation_id, position"
        rows += _rows(conn, sql, tuple(chunk))
    return rows


def _rows(conn: Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
    """The rows of a read: on SQLite the driver's own tuples, the statement run by the driver
    (:func:`~toolpath.store.sqlite_driver.driver_rows`)."""
    if conn.dialect.name == "sqlite":
        return driver_rows(conn, sql, params)
    return list(conn.exec_driver_sql(sql, params).all())


def _decode(conn: Connection, values: list[Any]) -> list[Any]:
    """Stored JSON column values, decoded: text (``jsonb`` is read as text on PostgreSQL) — or, on SQLite, a number:
    a JSON column has numeric affinity there, so a bare number ("20") comes back as one, as it does through
    SQLAlchemy's JSON type —, all of which one ``json.loads`` of a JSON array decodes (a call per value costs
    four times as much)."""
    if not values:
        return values
    texts = [v if v.__class__ is str else "null" if v is None else json.dumps(v) for v in values]
    return json.loads(f"[{','.join(texts)}]")


def _chunks(conn: Connection, items: Sequence[str]) -> list[tuple[Sequence[str], str]]:
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return [
        (items[i : i + _IN_CHUNK], ", ".join([mark] * len(items[i : i + _IN_CHUNK])))
        for i in range(0, len(items), _IN_CHUNK)
    ]
