"""Retention by the partition on PostgreSQL: the partitions of ``spans`` whose whole range is older than the cutoff
are dropped, in one short transaction (no row deleted one by one, no dead tuple left for VACUUM).

A span in a day's partition goes with its partition: it is kept at least as long as asked and at most one period
(a day) longer. The batch deletes of :class:`toolpath.store.retention.Pruner` walk only ``spans_default`` and
``spans_before``, never a day's partition: in a collector pruning every few minutes they would otherwise delete
each day's spans as they age, and leave empty partitions to drop.

A trace is never cut in two (:mod:`toolpath.store.retention`): the spans a dropped partition holds of a trace that
has spans in another partition too (one that goes on past the cutoff, a trace across midnight) are put back, into
``spans_default`` (their range no longer has a partition), where the batch deletes take the whole trace once its
newest span is older than the cutoff. Those traces are found again under the lock that drops the partitions,
which writers of spans wait for: no span can join them in between.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from toolpath.store.bulk import pg_array
from toolpath.store.ingest import no_jit
from toolpath.store.partitions import BEFORE, Partition, list_partitions

logger = logging.getLogger("toolpath.retention")

LOCK_WAIT = "3s"
"""How long a drop waits for the table's lock (held by a long read, say) before it leaves the partitions to the next
round: writers queue behind a lock being waited for."""
_IDS = "CAST(%s AS text[])"
Range = tuple[int | None, int]


class Dropped(NamedTuple):
    """What dropping partitions took (or, in a dry run, would take)."""

    spans: int = 0
    traces: int = 0
    partitions: int = 0
    skip: tuple[Range, ...] = ()
    """The ranges of start time the batch deletes leave alone: the range partitions' that stay (in a dry run,
    every range partition's)."""
    counted: frozenset[str] = frozenset()
    """In a dry run, the traces counted whole here that the batch deletes would take after the drop (spans of
    theirs put back): the batches' count leaves them out."""


def old_partitions(partitions: list[Partition], cutoff_ns: int) -> list[Partition]:
    """The partitions whose whole range is older than ``cutoff_ns``."""
    return [p for p in partitions if not p.default and p.upper is not None and p.upper <= cutoff_ns]


def _ranges(partitions: list[Partition], dropping: list[Partition] | None = None) -> tuple[Range, ...]:
    """The ranges the batches leave alone: the days', and those of the partitions a dry run would drop.
    ``spans_before`` is walked: in a store partitioned by the migration it holds all the spans it had, which would
    otherwise wait for its whole range to be old."""
    return tuple(
        (p.lower, p.upper) for p in partitions if p.upper is not None and (p.name != BEFORE or p in (dropping or []))
    )


def drop_old_partitions(engine: Engine, cutoff_ns: int, *, dry_run: bool = False) -> Dropped:
    """Drop the partitions of ``spans`` older than ``cutoff_ns``, putting back the spans of traces that have
    spans in other partitions; nothing on a store whose spans are not partitioned, and nothing dropped when the
    lock is not had in :data:`LOCK_WAIT`."""
    with engine.connect() as conn:
        every = list_partitions(conn)
    old = old_partitions(every, cutoff_ns)
    if not old:
        return Dropped(skip=_ranges(every))
    names = [p.name for p in old]
    union = " UNION ALL ".join(f"SELECT * FROM {name}" for name in names)
    # each trace of these partitions with spans in others too, and whether it goes on past the cutoff
    elsewhere = (
        f"SELECT n.trace_id, bool_or(n.start_time >= %s) FROM (SELECT DISTINCT trace_id FROM ({union}) u) d "
        f"JOIN spans n ON n.trace_id = d.trace_id WHERE n.tableoid <> ALL(CAST(%s AS regclass[])) GROUP BY n.trace_id"
    )
    with engine.connect() as conn:  # counted before the lock, so that writers wait for no count
        no_jit(conn)
        rows = conn.exec_driver_sql(elsewhere, (cutoff_ns, pg_array(names))).all()
        spans, traces = _counts(conn, union, [trace_id for trace_id, _ in rows])
        if dry_run:  # what the batches would take after the drop: the traces put back that do not go on
            ending = sorted(trace_id for trace_id, going_on in rows if not going_on)
            more = conn.exec_driver_sql(f"SELECT count(*) FROM spans WHERE trace_id = ANY({_IDS})", (pg_array(ending),))
            spans += int(more.scalar_one())
            return Dropped(spans, traces + len(ending), len(old), _ranges(every, old), frozenset(ending))
    try:
        with engine.begin() as conn:
            no_jit(conn)
            # a writer of spans waits from here to the commit: the traces found below stay the ones to put back
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            conn.exec_driver_sql("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
            back = [row[0] for row in conn.exec_driver_sql(elsewhere, (cutoff_ns, pg_array(names)))]
            conn.exec_driver_sql(
                f"CREATE TEMP TABLE spans_back ON COMMIT DROP AS SELECT * FROM ({union}) d "
                f"WHERE d.trace_id = ANY({_IDS})",
                (pg_array(back),),
            )
            conn.exec_driver_sql(f"DROP TABLE {', '.join(names)}")
            conn.exec_driver_sql("INSERT INTO spans SELECT * FROM spans_back")
    except OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != "55P03":  # lock_not_available: the next round tries again
            raise
        logger.info("retention: spans' lock not had in %s; its old partitions wait for the next round", LOCK_WAIT)
        return Dropped(skip=_ranges(every))
    logger.info("retention: dropped partition(s) %s (%d span(s) of %d trace(s))", ", ".join(names), spans, traces)
    return Dropped(spans, traces, len(old), _ranges([p for p in every if p not in old]))


def _counts(conn: Connection, union: str, elsewhere: list[str]) -> tuple[int, int]:
    """The spans of the partitions ``union`` reads, and their traces, but for the traces with spans ``elsewhere``
    (those go back: the batch deletes count them when they take them)."""
    spans, traces = conn.exec_driver_sql(
        f"SELECT count(*) FILTER (WHERE NOT (d.trace_id = ANY({_IDS}))), count(DISTINCT d.trace_id) FROM ({union}) d",
        (pg_array(elsewhere),),
    ).one()
    return int(spans), int(traces) - len(elsewhere)
