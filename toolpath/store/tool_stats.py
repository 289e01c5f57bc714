"""Per tool and agent, over the calls of the turns in a window (:class:`toolpath.store.turn_window.Window`): how
many calls, how many failed, their latency's median, 95th percentile and maximum, and the slowest and the latest
failed call; and a tool's slowest or latest failed calls (the UI's Tools page).

A call's latency is its end less its start (calls without both have none). The percentiles interpolate between
the two nearest calls, as PostgreSQL's ``percentile_cont`` does: PostgreSQL computes them with it, SQLite (which
has no percentile function) with the same arithmetic in an aggregate function of this module's. Over every turn
the calls are read from the indexes of :mod:`toolpath.store.stat_indexes` alone; in a window, with their turns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from toolpath.store.session_list import Reader
from toolpath.store.stat_indexes import FAILED, LATENCY
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
  FROM invocations{join} tool_calls
  {where} AND tool_calls.invocation_id = invocations.invocation_id{more}
)"""
"""Every call of the window's turns: its tool, agent (its own, else its turn's), whether it failed, its latency
(ns) and time. ``{join}``: ``CROSS JOIN`` reads the turns first (SQLite keeps its order): a window is a range of
their indexed start times, where reading the calls first (in the order of their tools' index, to skip a sort)
would scan them all; a comma where the planner should choose (one tool's calls, by its index)."""
_COLUMNS = "tool, agent, invocation_id, position, at, took, error"
"""A :class:`CallRef`'s columns of ``calls``."""
_LAST = "at DESC, invocation_id DESC, position DESC"
"""The latest call first."""
_INDEXED_COLUMNS = f"invocation_id, position, start_time, {LATENCY}, error"
"""A :class:`CallRef`'s columns of a ``tool_calls`` row, after its tool and agent (``at``: its start)."""
_INDEXED_LAST = "start_time DESC, invocation_id DESC, position DESC"
"""The latest call first, of calls that all have a start."""


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


def tool_stats(store: Store, window: Window, *, cap: int = GROUP_CAP) -> ToolStats:
    """A row per tool and agent with calls in ``window``'s turns, the most called first (then by tool, agent).

    Over every turn (all time, evaluations' too) the figures are read from the indexes of
    :mod:`toolpath.store.stat_indexes`, but for a tool with a call that names no agent of its own (its turn's
    counts) or a failed call without a start (its turn's start counts): those tools' calls are read with their
    turns, as a window's are."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        where, params = window.where(reader.dialect)
        indexed: list[ToolStat] = []
        longest: dict[tuple[str, str | None], int | None] = {}
        more, figures, latest = "", [], {}
        joined: list[str] = []
        every_call = _every_call(window)
        if every_call:
            indexed, longest, joined = _indexed_counts(conn, reader)
            more = f" AND tool_calls.name IN ({', '.join('?' for _ in joined)})"
            params = [*params, *joined]
        if not every_call or joined:
            calls = _CALLS.format(join=" CROSS JOIN", where=where, more=more)
            if reader.dialect == "postgresql":
                figures = _postgresql_figures(reader, calls, params)
            else:
                figures = _sqlite_figures(conn, reader, calls, params)
            failed = _CALLS.format(join=" CROSS JOIN", where=where, more=f"{more} AND tool_calls.error IS NOT NULL")
            latest = _latest_failures(reader, failed, params)
        rows = sorted([*figures, *indexed], key=lambda r: (-r.calls, r.tool, r.agent or ""))
        out = [
            _indexed_details(reader, r, longest[r.tool, r.agent])
            if (r.tool, r.agent) in longest
            else replace(r, latest_failure=latest.get((r.tool, r.agent)))
            for r in rows[:cap]
        ]
    return ToolStats(out, len(rows) > cap)


def _every_call(window: Window) -> bool:
    """``window`` counts every turn: all time, evaluations' too."""
    return window.since_ns is None and window.until_ns is None and not window.hide_evaluation


_TOOL_JOINED = f"""
SELECT 1 FROM tool_calls WHERE name = ? AND agent_name IS NULL
UNION ALL SELECT 1 FROM tool_calls WHERE name = ? AND {FAILED} AND start_time IS NULL"""
"""A row if a call of a tool names no agent of its own, or one of its failed calls has no start (the turn's
agent or start counts: its calls are read with their turns)."""


def _indexed_counts(
    conn: Any, reader: Reader
) -> tuple[list[ToolStat], dict[tuple[str, str | None], int | None], list[str]]:
    """Every call's tool and agent with its figures, read from the indexes (the slowest and latest failed calls
    left for :func:`_indexed_details`), with each one's longest latency (ns), and the tools whose calls must be read
    with their turns instead. The latencies of each tool and agent come in the order of their starts: PostgreSQL
    sorts them for ``percentile_cont``, SQLite's :class:`_Latencies` once gathered."""
    if reader.dialect == "postgresql":
        percentiles = ", ".join(f"percentile_cont({p!r}) WITHIN GROUP (ORDER BY {LATENCY})" for p in PERCENTILES)
    else:
        conn.connection.driver_connection.create_aggregate("toolpath_latencies", 1, _Latencies)
        percentiles = f"toolpath_latencies({LATENCY})"
    groups = reader.rows(f"SELECT name, agent_name, COUNT(*), COUNT({LATENCY}), MAX({LATENCY}), {percentiles} "
                         "FROM tool_calls GROUP BY name, agent_name")  # fmt: skip
    failed_sql = f"SELECT name, agent_name, COUNT(*), COUNT(start_time) FROM tool_calls WHERE {FAILED} " \
                 "GROUP BY name, agent_name"  # fmt: skip
    failed = {(tool, agent): (int(n), int(started)) for tool, agent, n, started in reader.rows(failed_sql)}
    joined = {row[0] for row in groups if row[1] is None}
    joined |= {tool for (tool, _), (n, started) in failed.items() if started < n}
    rows, longest = [], {}
    for tool, agent, n, timed, most, *found in groups:
        if tool in joined:
            continue
        if reader.dialect == "postgresql":
            p50, p95 = found
        else:
            p50, p95 = json.loads(found[0]) if found[0] is not None else (None, None)
        errors = failed.get((tool, agent), (0, 0))[0]
        rows.append(ToolStat(tool, agent, int(n), errors, int(timed), _seconds(p50), _seconds(p95), _seconds(most)))
        longest[tool, agent] = most
    return rows, longest, sorted(joined)


def _indexed_details(reader: Reader, row: ToolStat, longest: int | None) -> ToolStat:
    """``row``'s slowest and latest failed call, each found in the indexes (``row``: of :func:`_indexed_counts`,
    whose calls all name their agent and whose failed calls have a start)."""
    group = "FROM tool_calls WHERE name = ? AND agent_name = ?"
    key = [row.tool, row.agent]
    slowest = latest = None
    if longest is not None:  # the latest of the calls that took longest
        found = reader.rows(f"SELECT {_INDEXED_COLUMNS} {group} AND {LATENCY} = ? ORDER BY {_INDEXED_LAST} LIMIT 1",
                            [*key, longest])  # fmt: skip
        slowest = _ref([row.tool, row.agent, *found[0]]) if found else None
    if row.errors:
        found = reader.rows(f"SELECT {_INDEXED_COLUMNS} {group} AND {FAILED} ORDER BY {_INDEXED_LAST} LIMIT 1",
                            key)  # fmt: skip
        latest = _ref([row.tool, row.agent, *found[0]]) if found else None
    return replace(row, slowest=slowest, latest_failure=latest)


def _postgresql_figures(reader: Reader, calls: str, params: list[object]) -> list[ToolStat]:
    """The figures by PostgreSQL's own ``percentile_cont``; the slowest call of each group by ``DISTINCT ON``."""
    percentiles = ", ".join(f"percentile_cont({p!r}) WITHIN GROUP (ORDER BY took)" for p in PERCENTILES)
    sql = f"""{calls}
SELECT tool, agent, COUNT(*), SUM(failed), COUNT(took), MAX(took), {percentiles} FROM calls GROUP BY tool, agent"""
    slowest_sql = f"""{calls}
SELECT DISTINCT ON (tool, agent) {_COLUMNS} FROM calls WHERE took IS NOT NULL
ORDER BY tool, agent, took DESC, {_LAST}"""
    slowest = {(r[0], r[1]): _ref(r) for r in reader.rows(slowest_sql, params)}
    return [
        ToolStat(tool, agent, int(n), int(errors), int(timed), _seconds(p50), _seconds(p95), _seconds(longest),
                 slowest.get((tool, agent)))
        for tool, agent, n, errors, timed, longest, p50, p95 in reader.rows(sql, params)
    ]  # fmt: skip


def _sqlite_figures(conn: Any, reader: Reader, calls: str, params: list[object]) -> list[ToolStat]:
    """The figures on SQLite, which has no percentile function: one ``GROUP BY`` over the calls, each group's
    latencies gathered by :class:`_Latencies` (sorted once, interpolated as ``percentile_cont``) and its slowest
    call kept by :class:`_Slowest` — aggregates of this module's, registered on ``conn``'s driver connection. Ranking
    every call in a window instead sorted all of them with their columns, twice as long."""
    driver = conn.connection.driver_connection
    driver.create_aggregate("toolpath_latencies", 1, _Latencies)
    driver.create_aggregate("toolpath_slowest", 5, _Slowest)
    sql = f"""{calls}
SELECT tool, agent, COUNT(*), SUM(failed), COUNT(took), MAX(took), toolpath_latencies(took),
       toolpath_slowest(took, at, invocation_id, position, error)
FROM calls GROUP BY tool, agent"""
    out = []
    for tool, agent, n, errors, timed, longest, latencies, slowest in reader.rows(sql, params):
        p50, p95 = json.loads(latencies) if latencies is not None else (None, None)
        ref = _ref([tool, agent, *json.loads(slowest)]) if slowest is not None else None
        out.append(
            ToolStat(tool, agent, int(n), int(errors), int(timed), _seconds(p50), _seconds(p95), _seconds(longest), ref)
        )  # fmt: skip
    return out


class _Latencies:
    """A group's latencies (ns; ``NULL``: untimed, left out), and at the end their :data:`PERCENTILES` as a JSON
    list (``NULL`` without a timed call)."""

    def __init__(self) -> None:
        self.values: list[int] = []

    def step(self, took: int | None) -> None:
        if took is not None:
            self.values.append(took)

    def finalize(self) -> str | None:
        if not self.values:
            return None
        self.values.sort()
        return json.dumps([_interpolated(self.values, p) for p in PERCENTILES])


class _Slowest:
    """A group's slowest timed call (of equal latencies, the latest: by start, turn and place), at the end as the
    JSON list ``[invocation_id, position, at, took, error]``."""

    def __init__(self) -> None:
        self.best: tuple[tuple[int, int, str, int], str | None] | None = None

    def step(self, took: int | None, at: int, invocation_id: str, position: int, error: str | None) -> None:
        if took is not None and (self.best is None or (took, at, invocation_id, position) > self.best[0]):
            self.best = ((took, at, invocation_id, position), error)

    def finalize(self) -> str | None:
        if self.best is None:
            return None
        (took, at, invocation_id, position), error = self.best
        return json.dumps([invocation_id, position, at, took, error])


def _interpolated(ordered: Sequence[float], p: float) -> float:
    """``percentile_cont(p)`` of the latencies ``ordered`` (ascending, at least one), in their unit."""
    h = (len(ordered) - 1) * p
    low = int(h)
    first = ordered[low]
    second = ordered[low + 1] if low + 1 < len(ordered) else first
    return first + (h - low) * (second - first)


def _seconds(ns: float | None) -> float | None:
    return None if ns is None else float(ns) / 1e9


def _ref(row: Sequence[Any]) -> CallRef:
    tool, agent, invocation_id, position, at, took, error = row[:7]
    return CallRef(tool, agent, invocation_id, int(position), int(at), _seconds(took), error)


def _latest_failures(reader: Reader, failed: str, params: list[object]) -> dict[tuple[str, str | None], CallRef]:
    """Per tool and agent, its latest failed call (``failed``: the window's failed calls)."""
    sql = f"""{failed}, ranked AS (
  SELECT {_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY tool, agent ORDER BY {_LAST}) AS recent FROM calls
)
SELECT {_COLUMNS} FROM ranked WHERE recent = 1"""
    return {(row[0], row[1]): _ref(row) for row in reader.rows(sql, params)}


class CallOrder(StrEnum):
    """Which calls of a tool :func:`calls_of_tool` lists."""

    SLOWEST = "slowest"
    """Timed calls, the slowest first."""
    LATEST_FAILED = "failed"
    """Failed calls, the latest first."""


def calls_of_tool(
    store: Store, window: Window, tool: str, order: CallOrder, *, agent: str | None = None, limit: int = 10
) -> list[CallRef]:
    """Up to ``limit`` calls of ``tool`` (by ``agent`` alone, if given) in ``window``'s turns, in ``order``. Over
    every turn they are read from the indexes of :mod:`toolpath.store.stat_indexes` (as :func:`tool_stats` reads
    them), unless a call of the tool names no agent or a failed one has no start."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        if _every_call(window) and not reader.rows(_TOOL_JOINED, [tool, tool]):
            mine = " AND agent_name = ?" if agent is not None else ""
            if order is CallOrder.SLOWEST:
                chosen, ordering = f"{LATENCY} IS NOT NULL", f"{LATENCY} DESC, {_INDEXED_LAST}"
            else:
                chosen, ordering = FAILED, _INDEXED_LAST
            sql = f"SELECT name, agent_name, {_INDEXED_COLUMNS} FROM tool_calls WHERE name = ?{mine} AND {chosen} " \
                  f"ORDER BY {ordering} LIMIT ?"  # fmt: skip
            return [_ref(row) for row in reader.rows(sql, [tool, *([agent] if agent is not None else []), limit])]
        where, params = window.where(reader.dialect)
        more = " AND tool_calls.name = ?"
        params = [*params, tool]
        if agent is not None:
            more += " AND COALESCE(tool_calls.agent_name, invocations.agent_name) = ?"
            params.append(agent)
        if order is CallOrder.SLOWEST:
            chosen, ordering = "took IS NOT NULL", f"took DESC, {_LAST}"
        else:
            chosen, ordering = "failed = 1", _LAST
        sql = f"""{_CALLS.format(join=",", where=where, more=more)}
SELECT {_COLUMNS} FROM calls WHERE {chosen} ORDER BY {ordering} LIMIT ?"""
        return [_ref(row) for row in reader.rows(sql, [*params, limit])]
