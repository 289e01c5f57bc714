"""What failed, grouped: every failed tool call and failed turn in a time window, by error type × tool × agent, with
how often, when first and last, and the latest one's message, turn and span (the UI's Errors page).

An error's type is what its text names before ``": "`` (``TimeoutError: no answer`` is a ``TimeoutError``), as the
tracer and the collector write errors; text that names none (``no answer``, or a sentence before its colon) has
the empty type. A failed turn's tool is ``None``: the agent itself raised. Calls and turns are those of the turns
started in the window (``invocations.started_at``, indexed); a call is seen at its own start when it has one. The
SQL is the same on SQLite and PostgreSQL but for two string functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolpath.model import agent_span_id
from toolpath.store.session_list import Reader
from toolpath.store.spanrecord import STATUS_ERROR
from toolpath.store.store import Store
from toolpath.store.turn_window import Window

GROUP_CAP = 200
"""Groups a page shows at most (the most frequent); :attr:`ErrorGroups.more` says there were others."""
TYPE_LONGEST = 200
"""Longer text before the first ``": "`` is no type name."""


@dataclass(frozen=True)
class ErrorGroup:
    kind: str
    """The error type; ``""`` when its text names none."""
    tool: str | None
    """The tool whose calls failed; ``None`` for turns that failed (the agent raised)."""
    agent: str | None
    count: int
    first_ns: int
    last_ns: int
    latest_error: str
    """The latest failure's whole error text."""
    invocation_id: str
    """The turn of the latest failure."""
    trace_id: str | None
    span_id: str | None
    """The latest failure's span, when the store holds it: the failed tool span, or the failed turn's agent span."""


@dataclass(frozen=True)
class ErrorGroups:
    groups: list[ErrorGroup]
    more: bool
    """More groups matched than :data:`GROUP_CAP`: the least frequent are left out."""


def _kind(dialect: str, column: str) -> str:
    """The SQL of ``column``'s error type: its text before the first ``": "`` when that is a name (no space, no
    line break, at most :data:`TYPE_LONGEST` characters), else ``''``."""
    find = "instr({0}, ': ')" if dialect == "sqlite" else "strpos({0}, ': ')"
    space = "instr({0}, {1})" if dialect == "sqlite" else "strpos({0}, {1})"
    at = find.format(column)
    head = f"substr({column}, 1, {at} - 1)"
    newline = "char(10)" if dialect == "sqlite" else "chr(10)"
    named = " AND ".join(f"{space.format(head, c)} = 0" for c in ("' '", newline))
    return f"CASE WHEN {at} BETWEEN 2 AND {TYPE_LONGEST + 1} AND {named} THEN {head} ELSE '' END"


def error_groups(
    store: Store, window: Window, *, tool_name_keys: Sequence[str] = (), cap: int = GROUP_CAP
) -> ErrorGroups:
    """The failures of ``window``'s turns, grouped by type × tool × agent, the most frequent first (then the
    latest). ``tool_name_keys``: the span attributes that name a tool span's tool (the store knows no
    convention), to find a failed call's span when its start time does not."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        where, params = window.conditions(reader.dialect)
        and_where = "".join(f" AND {w}" for w in where)
        sql = f"""
WITH failed AS (
  SELECT tool_calls.name AS tool, COALESCE(tool_calls.agent_name, invocations.agent_name) AS agent,
         tool_calls.error AS error, COALESCE(tool_calls.start_time, invocations.started_at) AS at,
         invocations.invocation_id AS invocation_id, invocations.trace_id AS trace_id,
         tool_calls.position AS position, tool_calls.start_time AS call_start
  FROM tool_calls JOIN invocations ON invocations.invocation_id = tool_calls.invocation_id
  WHERE tool_calls.error IS NOT NULL{and_where}
  UNION ALL
  SELECT NULL, invocations.agent_name, COALESCE(invocations.error, ''), invocations.started_at,
         invocations.invocation_id, invocations.trace_id, -1, NULL
  FROM invocations WHERE invocations.failure > 0{and_where}
), typed AS (
  SELECT failed.*, {_kind(reader.dialect, "failed.error")} AS kind FROM failed
), ranked AS (
  SELECT typed.*,
         ROW_NUMBER() OVER (PARTITION BY kind, tool, agent
                            ORDER BY at DESC, invocation_id DESC, position DESC) AS newest,
         COUNT(*) OVER (PARTITION BY kind, tool, agent) AS n,
         MIN(at) OVER (PARTITION BY kind, tool, agent) AS first_at
  FROM typed
)
SELECT kind, tool, agent, n, first_at, at, error, invocation_id, trace_id, call_start FROM ranked
WHERE newest = 1 ORDER BY n DESC, at DESC, kind, tool, agent LIMIT ?"""
        rows = reader.rows(sql, [*params, *params, cap + 1])
        more = len(rows) > cap
        rows = rows[:cap]
        spans = _failed_spans(reader, [str(r[8]) for r in rows if r[8]], tool_name_keys)
    groups = []
    for kind, tool, agent, n, first_at, at, error, invocation_id, trace_id, call_start in rows:
        span_id = _span_of(spans.get(trace_id, []), invocation_id, trace_id, tool, call_start)
        groups.append(
            ErrorGroup(str(kind), tool, agent, int(n), int(first_at), int(at), str(error), invocation_id,
                       trace_id or None, span_id)
        )  # fmt: skip
    return ErrorGroups(groups, more)


_FailedSpan = tuple[str, int, str | None]
"""A failed span: its id, start time and the tool it names (if any)."""


def _failed_spans(reader: Reader, trace_ids: Sequence[str], keys: Sequence[str]) -> dict[str, list[_FailedSpan]]:
    """The failed spans of ``trace_ids`` (read by the spans' primary key), each with the tool it names."""
    for k in keys:
        if "'" in k or '"' in k:
            raise ValueError(f"tool_name_keys: {k!r} is no attribute name a query can hold")
    out: dict[str, list[_FailedSpan]] = {}
    unique = sorted(set(trace_ids))
    if reader.dialect == "sqlite":
        named = [f"json_extract(attributes, '$.\"{k}\"')" for k in keys]
    else:
        named = [f"(attributes ->> '{k}')" for k in keys]
    tool = f"COALESCE({', '.join(named)})" if len(named) > 1 else (named[0] if named else "NULL")
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        sql = f"SELECT trace_id, span_id, start_time, {tool} FROM spans WHERE trace_id IN ({marks}) AND status_code = ?"
        for trace_id, span_id, started, name in reader.rows(sql, [*chunk, STATUS_ERROR]):
            out.setdefault(trace_id, []).append((span_id, int(started), None if name is None else str(name)))
    return out


def _span_of(
    failed: Sequence[_FailedSpan], invocation_id: str, trace_id: str | None, tool: str | None, call_start: int | None
) -> str | None:
    """The failed span of a failure: a failed turn's agent span; a failed call's tool span, the one that started
    when the call did, else the latest that names its tool."""
    if tool is None:
        root = agent_span_id(invocation_id, trace_id)
        return root if any(span_id == root for span_id, _, _ in failed) else None
    if call_start is not None:
        for span_id, started, _ in failed:
            if started == call_start:
                return span_id
    same = [(started, span_id) for span_id, started, name in failed if name == tool]
    return max(same)[1] if same else None
