"""Retention by the partition on PostgreSQL: the partitions of ``spans`` whose whole range is older than the cutoff
are dropped, in one short transaction (no row deleted one by one, no dead tuple left for VACUUM).

A trace is never cut in two (:mod:`toolpath.store.retention`): the spans a dropped partition holds of a trace that
has a span at or after the cutoff (a long trace, or a late span) are put back (into ``spans_default``: their range
no longer has a partition), and go with the rest of their trace once its newest span is older than the cutoff.
Those traces are found under the lock that drops the partitions, which writers of spans wait for: no late span can
join them in between. What is left older than the cutoff (in the newest old partition, in ``spans_default``) goes
by the batch deletes of :class:`toolpath.store.retention.Pruner`.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from toolpath.store.bulk import pg_array
from toolpath.store.ingest import no_jit
from toolpath.store.partitions import Partition, list_partitions

logger = logging.getLogger("toolpath.retention")

LOCK_WAIT = "3s"
"""How long a drop waits for the table's lock (held by a long read, say) before it leaves the partitions to the next
round: writers queue behind a lock being waited for."""

_IDS = "CAST(%s AS text[])"


class Dropped(NamedTuple):
    """What dropping partitions took (or, in a dry run, would take)."""

    spans: int = 0
    traces: int = 0
    ranges: tuple[tuple[int | None, int], ...] = ()
    """The ranges of start time of the partitions (dropped, or that a dry run would drop)."""


def old_partitions(partitions: list[Partition], cutoff_ns: int) -> list[Partition]:
    """The partitions whose whole range is older than ``cutoff_ns``."""
    return [p for p in partitions if not p.default and p.upper is not None and p.upper <= cutoff_ns]


def drop_old_partitions(engine: Engine, cutoff_ns: int, *, dry_run: bool = False) -> Dropped:
    """Drop the partitions of ``spans`` older than ``cutoff_ns``, keeping the traces that go on past it; nothing on
    a store whose spans are not partitioned, or when the lock is not had in :data:`LOCK_WAIT`."""
    with engine.connect() as conn:
        old = old_partitions(list_partitions(conn), cutoff_ns)
    if not old:
        return Dropped()
    names = [p.name for p in old]
    union = " UNION ALL ".join(f"SELECT * FROM {name}" for name in names)
    ranges = tuple((p.lower, p.upper) for p in old if p.upper is not None)
    going_on = (
        f"SELECT DISTINCT d.trace_id FROM ({union}) d WHERE EXISTS "
        "(SELECT 1 FROM spans n WHERE n.trace_id = d.trace_id AND n.start_time >= %s)"
    )
    # each trace of these partitions with spans in others too, and whether it goes on past the cutoff (kept whole)
    # or not (the batches delete the rest of it, and count it then)
    elsewhere = (
        f"SELECT n.trace_id, bool_or(n.start_time >= %s) FROM (SELECT DISTINCT trace_id FROM ({union}) u) d "
        f"JOIN spans n ON n.trace_id = d.trace_id WHERE n.tableoid <> ALL(CAST(%s AS regclass[])) GROUP BY n.trace_id"
    )
    with engine.connect() as conn:  # counted before the lock, so that writers wait for no count
        no_jit(conn)
        rows = conn.exec_driver_sql(elsewhere, (cutoff_ns, pg_array(names))).all()
        kept = [trace_id for trace_id, going in rows if going]
        spans, traces = conn.exec_driver_sql(
            f"SELECT count(*) FILTER (WHERE NOT (d.trace_id = ANY({_IDS}))), count(DISTINCT d.trace_id) "
            f"FROM ({union}) d",
            (pg_array(kept),),
        ).one()
        traces -= len(rows)
    if dry_run:
        return Dropped(int(spans), int(traces), ranges)
    try:
        with engine.begin() as conn:
            no_jit(conn)
            # a writer of spans waits from here to the commit: the traces found below stay the ones going on
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            conn.exec_driver_sql("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
            kept = [row[0] for row in conn.exec_driver_sql(going_on, (cutoff_ns,))]
            conn.exec_driver_sql(
                f"CREATE TEMP TABLE spans_kept ON COMMIT DROP AS SELECT * FROM ({union}) d "
                f"WHERE d.trace_id = ANY({_IDS})",
                (pg_array(kept),),
            )
            conn.exec_driver_sql(f"DROP TABLE {', '.join(names)}")
            conn.exec_driver_sql("INSERT INTO spans SELECT * FROM spans_kept")
    except OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != "55P03":  # lock_not_available: the next round tries again
            raise
        logger.info("retention: spans' lock not had in %s; its old partitions wait for the next round", LOCK_WAIT)
        return Dropped()
    logger.info("retention: dropped partition(s) %s (%d span(s) of %d trace(s))", ", ".join(names), spans, traces)
    return Dropped(int(spans), int(traces), ranges)
