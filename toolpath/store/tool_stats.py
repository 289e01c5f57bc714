"""Per tool and agent, over the calls of the turns in a window (:class:`toolpath.store.turn_window.Window`): how
many calls, how many failed, their latency's median, 95th percentile and maximum, and the slowest and the latest
failed call; and a tool's slowest or latest failed calls (the UI's Tools page).

A call's latency is its end less its start (calls without both have none). The percentiles interpolate between
the two nearest calls, as PostgreSQL's ``percentile_cont`` does: PostgreSQL computes them with it, SQLite (which
has no percentile function) with the same arithmetic over the calls ranked by a window function."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from toolpath.store.session_list import Reader
from toolpath.store.store import Store
from toolpath.store.turn_window import Window

GROUP_CAP = 500
"""Tool × agent rows a page shows at most (the most called); :attr:`ToolStats.more` says there were others."""
PERCENTILES = (0.5, 0.95)
_CALLS = """
WITH calls AS (
  SELECT tool_calls.name AS tool, COALESCE(tool_calls.agent_name, invocations.agent_name) AS agent,
         CASE WHEN tool_calls.error IS NULL THEN 0 ELSE 1 END AS failed, tool_calls.error AS error,
         CASE WHEN tool_calls.end_time >= tool_calls.start_time
              THEN tool_calls.end_time - tool_calls.start_time END AS took,
         COALESCE(tool_calls.start_time, invocations.started_at) AS at,
         invocations.invocation_id AS invocation_id, tool_calls.position AS position
  FROM tool_calls JOIN invocations ON invocations.invocation_id = tool_calls.invocation_id
  {where}
)"""
"""Every call of the window's turns: its tool, agent (its own, else its turn's), whether it failed, its latency
(ns) and time."""


@dataclass(frozen=True)
class CallRef:
    """One call: its turn and place in it, when it ran (ns), how long it took (seconds), its error."""

    tool: str
    agent: str | None
    invocation_id: str
    position: int
    at_ns: int
    seconds: float | None
    error: str | None


@dataclass(frozen=True)
class ToolStat:
    tool: str
    agent: str | None
    calls: int
    errors: int
    timed: int
    """Calls with a latency (a start and an end)."""
    p50: float | None
    """Seconds; ``None`` without timed calls."""
    p95: float | None
    max: float | None
    slowest: CallRef | None = None
    latest_failure: CallRef | None = None

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class ToolStats:
    rows: list[ToolStat]
    more: bool
    """More tool × agent pairs had calls than :data:`GROUP_CAP`: the least called are left out."""


def _percentile(p: float) -> str:
    """SQLite's ``percentile_cont(p)`` of ``took`` per group of ``ranked`` (``rn``: the rank by latency, timed calls
    first; ``timed``: how many are timed): the two nearest ranks, weighted by the fraction between them."""
    h = f"((timed - 1) * {p!r})"
    low = f"CAST({h} AS INTEGER)"
    return (
        f"SUM(CASE WHEN rn = {low} + 1 THEN took * (1 - ({h} - {low})) "
        f"WHEN rn = {low} + 2 THEN took * ({h} - {low}) END)"
    )


def tool_stats(store: Store, window: Window, *, cap: int = GROUP_CAP) -> ToolStats:
    """A row per tool and agent with calls in ``window``'s turns, the most called first (then by tool, agent)."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        where, params = window.where(reader.dialect)
        calls = _CALLS.format(where=where)
        if reader.dialect == "postgresql":
            percentiles = ", ".join(f"percentile_cont({p!r}) WITHIN GROUP (ORDER BY took)" for p in PERCENTILES)
            sql = f"""{calls}
SELECT tool, agent, COUNT(*), SUM(failed), COUNT(took), MAX(took), {percentiles}
FROM calls GROUP BY tool, agent ORDER BY COUNT(*) DESC, tool, agent LIMIT ?"""
        else:
            percentiles = ", ".join(_percentile(p) for p in PERCENTILES)
            sql = f"""{calls}, ranked AS (
  SELECT tool, agent, failed, took,
         ROW_NUMBER() OVER (PARTITION BY tool, agent ORDER BY took IS NULL, took) AS rn,
         COUNT(took) OVER (PARTITION BY tool, agent) AS timed
  FROM calls
)
SELECT tool, agent, COUNT(*), SUM(failed), COUNT(took), MAX(took), {percentiles}
FROM ranked GROUP BY tool, agent ORDER BY COUNT(*) DESC, tool, agent LIMIT ?"""
        found = reader.rows(sql, [*params, cap + 1])
        highlights = _highlights(reader, calls, params)
    rows = []
    for tool, agent, n, failed, timed, longest, p50, p95 in found[:cap]:
        slowest, latest = highlights.get((tool, agent), (None, None))
        rows.append(
            ToolStat(tool, agent, int(n), int(failed or 0), int(timed), _seconds(p50), _seconds(p95),
                     _seconds(longest), slowest, latest)
        )  # fmt: skip
    return ToolStats(rows, len(found) > cap)


def _seconds(ns: float | None) -> float | None:
    return None if ns is None else float(ns) / 1e9


def _ref(row: Sequence[Any]) -> CallRef:
    tool, agent, invocation_id, position, at, took, error = row[:7]
    return CallRef(tool, agent, invocation_id, int(position), int(at), _seconds(took), error)


def _highlights(
    reader: Reader, calls: str, params: list[object]
) -> dict[tuple[str, str | None], tuple[CallRef | None, CallRef | None]]:
    """Per tool and agent: its slowest timed call and its latest failed one."""
    sql = f"""{calls}, ranked AS (
  SELECT calls.*,
         ROW_NUMBER() OVER (PARTITION BY tool, agent ORDER BY took IS NULL, took DESC, at DESC, invocation_id, position)
           AS slow,
         ROW_NUMBER() OVER (PARTITION BY tool, agent, failed ORDER BY at DESC, invocation_id DESC, position DESC)
           AS recent
  FROM calls
)
SELECT tool, agent, invocation_id, position, at, took, error, slow, recent FROM ranked
WHERE (slow = 1 AND took IS NOT NULL) OR (failed = 1 AND recent = 1)"""
    out: dict[tuple[str, str | None], tuple[CallRef | None, CallRef | None]] = {}
    for row in reader.rows(sql, params):
        key = (str(row[0]), None if row[1] is None else str(row[1]))
        slowest, latest = out.get(key, (None, None))
        ref = _ref(row)
        if row[7] == 1 and ref.seconds is not None:
            slowest = ref
        if row[8] == 1 and ref.error is not None:
            latest = ref
        out[key] = (slowest, latest)
    return out


class CallOrder(StrEnum):
    """Which calls of a tool :func:`calls_of_tool` lists."""

    SLOWEST = "slowest"
    """Timed calls, the slowest first."""
    LATEST_FAILED = "failed"
    """Failed calls, the latest first."""


def calls_of_tool(
    store: Store, window: Window, tool: str, order: CallOrder, *, agent: str | None = None, limit: int = 10
) -> list[CallRef]:
    """Up to ``limit`` calls of ``tool`` (by ``agent`` alone, if given) in ``window``'s turns, in ``order``."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        where, params = window.where(reader.dialect)
        where += " AND tool_calls.name = ?"
        params = [*params, tool]
        if agent is not None:
            where += " AND COALESCE(tool_calls.agent_name, invocations.agent_name) = ?"
            params.append(agent)
        if order is CallOrder.SLOWEST:
            chosen, ordering = "took IS NOT NULL", "took DESC, at DESC, invocation_id, position"
        else:
            chosen, ordering = "failed = 1", "at DESC, invocation_id DESC, position DESC"
        sql = f"""{_CALLS.format(where=where)}
SELECT tool, agent, invocation_id, position, at, took, error FROM calls WHERE {chosen} ORDER BY {ordering} LIMIT ?"""
        return [_ref(row) for row in reader.rows(sql, [*params, limit])]
