"""Bulk reads of invocations and their tool calls through the driver: plain tuples, each JSON value decoded once
(``json.loads`` on SQLite; psycopg decodes ``jsonb`` itself), no per-value SQLAlchemy processing. What the online
workers read for every batch they score, and what the store's other invocation reads share.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from toolpath.model import Invocation, ToolCall, _construct, ns_to_datetime

_IN_CHUNK = 500
_INVOCATION_COLUMNS = (
    "invocation_id, session_id, trace_id, agent_name, prompt, response, intermediate_responses, latency_seconds, "
    "failure, error, started_at, attributes"
)
_CALL_COLUMNS = "invocation_id, name, args, result, call_id, error, start_time, end_time"


def invocations_by_id(conn: Any, invocation_ids: Sequence[str]) -> list[Invocation]:
    """The stored invocations among ``invocation_ids``, with their tool calls, in the order asked."""
    loads = _json_loader(conn)
    found: dict[str, Any] = {}
    for chunk, marks in _chunks(conn, invocation_ids):
        sql = f"SELECT {_INVOCATION_COLUMNS} FROM invocations WHERE invocation_id IN ({marks})"
        for row in conn.exec_driver_sql(sql, tuple(chunk)):
            found[row[0]] = row
    calls = tool_calls(conn, list(found))
    out = []
    for invocation_id in invocation_ids:
        row = found.get(invocation_id)
        if row is None:
            continue
        (_, session_id, trace_id, agent_name, prompt, response, intermediate, latency, failure, error, started,
         attributes) = row  # fmt: skip
        out.append(
            Invocation(
                invocation_id=invocation_id,
                session_id=session_id,
                agent_name=agent_name,
                prompt=prompt,
                response=response,
                tool_calls=calls.get(invocation_id, []),
                intermediate_responses=[tuple(pair) for pair in loads(intermediate) or []],
                latency_seconds=latency,
                failure=failure,
                error=error,
                trace_id=trace_id or None,
                started_at=ns_to_datetime(started),
                attributes=loads(attributes) or {},
            )
        )
    return out


def tool_calls(conn: Any, invocation_ids: Sequence[str]) -> dict[str, list[ToolCall]]:
    """The tool calls of ``invocation_ids`` in call order, by invocation id (an invocation without calls is
    absent)."""
    loads = _json_loader(conn)
    found: dict[str, list[ToolCall]] = {}
    for chunk, marks in _chunks(conn, invocation_ids):
        sql = (
            f"SELECT {_CALL_COLUMNS} FROM tool_calls WHERE invocation_id IN ({marks}) ORDER BY invocation_id, position"
        )
        for invocation_id, name, args, result, call_id, error, start, end in conn.exec_driver_sql(sql, tuple(chunk)):
            # the values were checked when they were written: built as ToolCall.from_item builds checked ones
            call = _construct(ToolCall, name, loads(args), loads(result), call_id, error)
            if start is not None or end is not None:
                call.__dict__.update(start_time=start, end_time=end)
                call.__pydantic_fields_set__.update(("start_time", "end_time"))
            calls = found.get(invocation_id)
            if calls is None:
                found[invocation_id] = [call]
            else:
                calls.append(call)
    return found


def _json_loader(conn: Any) -> Callable[[Any], Any]:
    if conn.dialect.name == "postgresql":
        return _decoded  # psycopg hands jsonb over decoded
    return _loads


def _loads(value: str | float | None) -> Any:
    # a JSON column has numeric affinity in SQLite: a bare number ("20") comes back as a number, as it does
    # through SQLAlchemy's JSON type
    return json.loads(value) if value.__class__ is str else value


def _decoded(value: Any) -> Any:
    return value


def _chunks(conn: Any, items: Sequence[str]) -> list[tuple[Sequence[str], str]]:
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    return [
        (items[i : i + _IN_CHUNK], ", ".join([mark] * len(items[i : i + _IN_CHUNK])))
        for i in range(0, len(items), _IN_CHUNK)
    ]
