"""Where a PostgreSQL server's time goes, statement by statement, for ``bench_collector.py --pg-statements``.

The benchmark's throw-away server is restarted with ``pg_stat_statements`` loaded (planning time and the statements
foreign-key triggers run are counted too), a snapshot of its counters is taken at the start and at the end of each
window of spans, and the statements that took the most of the server's time in the last window are printed beside
what they took in the first: time a span and a call (execution, planning and JIT compiling together: waiting for
locks counts, the client's round trip does not), shared blocks touched and read from outside the buffer cache a
span, and the share of JIT compiling. A statement whose cost per span grows with the store shows there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_SNAPSHOT = """
SELECT queryid, left(regexp_replace(query, '\\s+', ' ', 'g'), 100), calls,
       total_exec_time + coalesce((to_jsonb(s) ->> 'total_plan_time')::float, 0),
       shared_blks_hit, shared_blks_read,
       coalesce((to_jsonb(s) ->> 'jit_generation_time')::float, 0)
       + coalesce((to_jsonb(s) ->> 'jit_inlining_time')::float, 0)
       + coalesce((to_jsonb(s) ->> 'jit_optimization_time')::float, 0)
       + coalesce((to_jsonb(s) ->> 'jit_emission_time')::float, 0)
FROM pg_stat_statements s WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


@dataclass
class Counters:
    query: str
    calls: int
    ms: float
    hit: int
    read: int
    jit_ms: float


Snapshot = dict[int, Counters]


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def enable(url: str, stop: Callable[[], None], start: Callable[[], None]) -> None:
    """Load ``pg_stat_statements`` into the server ``url`` names (stopped and started again) and create it there."""
    import psycopg

    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    stop()
    start()
    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
        conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
        conn.execute("SELECT pg_reload_conf()")


def snapshot(url: str) -> Snapshot:
    import psycopg

    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        rows: list[Any] = conn.execute(_SNAPSHOT).fetchall()
    return {row[0]: Counters(row[1], row[2], row[3], row[4], row[5], row[6]) for row in rows}


def _between(before: Snapshot, after: Snapshot) -> Snapshot:
    zero = Counters("", 0, 0.0, 0, 0, 0.0)
    out = {}
    for key, end in after.items():
        start = before.get(key, zero)
        out[key] = Counters(end.query, end.calls - start.calls, end.ms - start.ms, end.hit - start.hit,
                            end.read - start.read, end.jit_ms - start.jit_ms)  # fmt: skip
    return out


def report(snapshots: list[Snapshot], window_spans: list[int], top: int = 10) -> list[str]:
    """The lines that compare the first window with the last (``snapshots``: one at the start and one at the end
    of each window; ``window_spans``: each window's spans)."""
    if len(snapshots) < 3 or len(window_spans) < 2:
        return ["pg_stat_statements: fewer than two windows, nothing to compare"]
    first, last = _between(snapshots[0], snapshots[1]), _between(snapshots[-2], snapshots[-1])
    n1, n2 = window_spans[0], window_spans[-1]
    lines = ["PostgreSQL statements, first window -> last (server time incl. lock waits and planning, per span "
             "and per call; shared blocks touched / read a span; JIT share):"]  # fmt: skip
    zero = Counters("", 0, 0.0, 0, 0, 0.0)
    for key in sorted(last, key=lambda k: last[k].ms, reverse=True)[:top]:
        a, b = first.get(key, zero), last[key]
        lines.append(
            f"  {a.ms / n1 * 1000:7.1f} -> {b.ms / n2 * 1000:7.1f} µs/span  {a.ms / max(a.calls, 1):7.2f} -> "
            f"{b.ms / max(b.calls, 1):7.2f} ms/call  blocks {(a.hit + a.read) / n1:5.2f} -> "
            f"{(b.hit + b.read) / n2:5.2f} (read {a.read / n1:4.2f} -> {b.read / n2:4.2f})  "
            f"JIT {a.jit_ms / max(a.ms, 1e-9):4.0%} -> {b.jit_ms / max(b.ms, 1e-9):4.0%}  {b.query}"
        )
    return lines
