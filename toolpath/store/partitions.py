"""Time partitions of ``spans`` on PostgreSQL (SQLite keeps one table): what they are, and making them ahead.

``spans`` is partitioned by range of ``start_time`` (ns since the epoch). Its partitions:

- ``spans_before``, from the lowest time up to the first period: spans older than the store's periods (a store
  partitioned by migration 0013 keeps every span it had here, the old table attached in place);
- one a period (a day unless said otherwise), named by its first instant, UTC (``spans_20261207``);
- ``spans_default``: any time no other partition takes (a span from far in the future, or from a period whose
  partition retention dropped).

The parent has no primary key (on a partitioned table a unique key must hold the partition key); each partition
has its own, ``(trace_id, span_id)``. A span's key stays ``(trace_id, span_id)`` across partitions because ingest
stores a span only after looking its key up, under its trace's lock (:func:`toolpath.store.ingest.lock_traces`).

Partitions are made ahead (:func:`ensure_partitions`: the current period and the next :data:`AHEAD`) by the
migration, by each round of a collector's retention worker and by ``toolpath db partitions``. A span whose
period has no partition lands in ``spans_default``; making that period's partition moves such spans into it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import NamedTuple

from sqlalchemy import Connection

DAY_NS = 86_400 * 10**9
PERIOD_NS = DAY_NS
"""A new store's period. A day: retention frees space a day at a time at most a day late, and a store kept for
30 days has some 40 partitions, each looked into by a span's key lookup (docs/performance.md measures it)."""
AHEAD = 7
"""Periods made ahead of the current one: a week without a collector running retention still has partitions."""
BEFORE, DEFAULT = "spans_before", "spans_default"
_LOCK_KEY = 0x7370616E73_7061  # one maker of partitions at a time among the processes sharing the store
_BOUND = re.compile(r"FOR VALUES FROM \((MINVALUE|'?-?\d+'?)\) TO \((MAXVALUE|'?-?\d+'?)\)")


class Partition(NamedTuple):
    """A partition of ``spans``: its range ``[lower, upper)`` (``None``: unbounded on that side)."""

    name: str
    lower: int | None
    upper: int | None
    default: bool = False


def is_partitioned(conn: Connection) -> bool:
    """Whether ``spans`` is a partitioned table (only ever on PostgreSQL)."""
    if conn.dialect.name != "postgresql":
        return False
    kind = conn.exec_driver_sql("SELECT relkind FROM pg_class WHERE oid = to_regclass('spans')").scalar()
    return kind == "p"


def list_partitions(conn: Connection) -> list[Partition]:
    """The partitions of ``spans``, oldest first, the default one last; none when it is not partitioned."""
    if not is_partitioned(conn):
        return []
    rows = conn.exec_driver_sql(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass('spans')"
    ).all()
    found = [_partition(str(name), str(bound)) for name, bound in rows]
    return sorted(found, key=lambda p: (p.default, p.lower is not None, p.lower or 0))


def _partition(name: str, bound: str) -> Partition:
    if bound == "DEFAULT":
        return Partition(name, None, None, default=True)
    match = _BOUND.fullmatch(bound)
    if match is None:
        raise ValueError(f"partition {name} of spans: bound {bound!r} is not a range of start_time")
    lower, upper = (None if v in ("MINVALUE", "MAXVALUE") else int(v.strip("'")) for v in match.groups())
    return Partition(name, lower, upper)


def period_of(partitions: list[Partition]) -> int:
    """The period of the store's partitions: the width of its newest bounded one (:data:`PERIOD_NS` if none)."""
    bounded = [p for p in partitions if p.lower is not None and p.upper is not None]
    return bounded[-1].upper - bounded[-1].lower if bounded else PERIOD_NS  # type: ignore[operator]


def partition_name(lower: int) -> str:
    """``spans_20261207`` for a period starting at midnight UTC, ``spans_20261207_060000`` otherwise."""
    start = datetime.fromtimestamp(lower // 10**9, UTC)
    return f"spans_{start:%Y%m%d}" if lower % DAY_NS == 0 else f"spans_{start:%Y%m%d_%H%M%S}"


def ensure_partitions(conn: Connection, now_ns: int, *, ahead: int = AHEAD, period_ns: int | None = None) -> list[str]:
    """Make the partitions of the current period and the ``ahead`` next ones that are missing (and the default
    one), each moving the spans of its range the default partition holds; returns their names. ``period_ns``: the
    width of the new partitions (else the store's, :func:`period_of`). Nothing on a store not partitioned."""
    if not is_partitioned(conn):
        return []
    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
    existing = list_partitions(conn)
    period = period_ns or period_of(existing)
    current = now_ns // period * period
    uppers = [p.upper for p in existing if p.upper is not None and p.upper > current]
    lower, end = max([current, *uppers]), current + (ahead + 1) * period
    made: list[str] = []
    if not any(p.default for p in existing):
        conn.exec_driver_sql(f"CREATE TABLE {DEFAULT} PARTITION OF spans DEFAULT")
        conn.exec_driver_sql(f"ALTER TABLE {DEFAULT} ADD PRIMARY KEY (trace_id, span_id)")
        made.append(DEFAULT)
    while lower < end:
        upper = (lower // period + 1) * period
        made.append(create_partition(conn, lower, upper))
        lower = upper
    return made


def create_partition(conn: Connection, lower: int | None, upper: int, name: str | None = None) -> str:
    """A partition of ``spans`` for ``[lower, upper)`` (``None``: from the lowest time), with its primary key,
    holding the spans of that range the default partition held."""
    name = name or partition_name(lower if lower is not None else upper)
    conn.exec_driver_sql(f"CREATE TABLE {name} (LIKE spans INCLUDING DEFAULTS INCLUDING STORAGE)")
    conn.exec_driver_sql(f"ALTER TABLE {name} ADD PRIMARY KEY (trace_id, span_id)")
    low = "MINVALUE" if lower is None else str(int(lower))
    if conn.exec_driver_sql("SELECT to_regclass(%s) IS NOT NULL", (DEFAULT,)).scalar():
        inside = f"start_time < {int(upper)}" + ("" if lower is None else f" AND start_time >= {int(lower)}")
        conn.exec_driver_sql(
            f"WITH moved AS (DELETE FROM {DEFAULT} WHERE {inside} RETURNING *) INSERT INTO {name} SELECT * FROM moved"
        )
    conn.exec_driver_sql(f"ALTER TABLE spans ATTACH PARTITION {name} FOR VALUES FROM ({low}) TO ({int(upper)})")
    return name


def partition_spans(conn: Connection, now_ns: int, *, period_ns: int = PERIOD_NS, ahead: int = AHEAD) -> None:
    """Make ``spans`` (a plain table) a partitioned one, in ``conn``'s transaction. The plain table becomes
    ``spans_before``, attached in place for every time up to the end of the current period: no row is copied and
    no index rebuilt; the attach reads the table once (writers wait for that read). Its spans of later periods (a
    clock ahead) are moved to their partitions. A store whose spans are already partitioned is left as it is."""
    if conn.dialect.name != "postgresql" or is_partitioned(conn):
        return
    run = conn.exec_driver_sql
    run("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
    run(f"ALTER TABLE spans RENAME TO {BEFORE}")
    run(f"ALTER TABLE {BEFORE} RENAME CONSTRAINT spans_pkey TO {BEFORE}_pkey")
    run(f"ALTER INDEX ix_spans_start RENAME TO {BEFORE}_start_time_idx")
    run(f"ALTER INDEX ix_spans_parent RENAME TO {BEFORE}_trace_id_parent_span_id_idx")
    run(f"CREATE TABLE spans (LIKE {BEFORE} INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (start_time)")
    run("CREATE INDEX ix_spans_start ON spans (start_time)")
    run("CREATE INDEX ix_spans_parent ON spans (trace_id, parent_span_id)")
    current = now_ns // period_ns * period_ns
    if not run(f"SELECT EXISTS (SELECT 1 FROM {BEFORE})").scalar():  # a new store: its earliest partition is now's
        run(f"DROP TABLE {BEFORE}")
        create_partition(conn, None, current, BEFORE)
    else:
        bound = current + period_ns
        run(f"CREATE TEMP TABLE spans_ahead (LIKE {BEFORE}) ON COMMIT DROP")
        run(
            f"WITH moved AS (DELETE FROM {BEFORE} WHERE start_time >= {bound} RETURNING *) "
            "INSERT INTO spans_ahead SELECT * FROM moved"
        )
        run(f"ALTER TABLE spans ATTACH PARTITION {BEFORE} FOR VALUES FROM (MINVALUE) TO ({bound})")
        ensure_partitions(conn, now_ns, ahead=ahead, period_ns=period_ns)
        run("INSERT INTO spans SELECT * FROM spans_ahead")
        run("DROP TABLE spans_ahead")
        return
    ensure_partitions(conn, now_ns, ahead=ahead, period_ns=period_ns)


def unpartition_spans(conn: Connection) -> None:
    """Back to one plain ``spans`` table (what migration 0013 undoes): its rows copied into a new table, offline
    (writers wait for the copy)."""
    if not is_partitioned(conn):
        return
    run = conn.exec_driver_sql
    run("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
    run("ALTER TABLE spans RENAME TO spans_partitioned")
    run("ALTER INDEX ix_spans_start RENAME TO spans_partitioned_start")
    run("ALTER INDEX ix_spans_parent RENAME TO spans_partitioned_parent")
    run("CREATE TABLE spans (LIKE spans_partitioned INCLUDING DEFAULTS INCLUDING STORAGE)")
    run("INSERT INTO spans SELECT * FROM spans_partitioned")
    run("ALTER TABLE spans ADD CONSTRAINT spans_pkey PRIMARY KEY (trace_id, span_id)")
    run("CREATE INDEX ix_spans_start ON spans (start_time)")
    run("CREATE INDEX ix_spans_parent ON spans (trace_id, parent_span_id)")
    run("DROP TABLE spans_partitioned")
