"""Retention by the partition on PostgreSQL: the partitions of ``spans`` whose whole range is older than the cutoff
are dropped, in one short transaction (no row deleted one by one, no dead tuple left for VACUUM).

A span in a day's partition goes with its partition: it is kept at least as long as asked and at most one period
(a day) longer. The batch deletes of :class:`toolpath.store.retention.Pruner` walk only ``spans_default`` and
``spans_before``, never a day's partition: in a collector pruning every few minutes they would otherwise delete
each day's spans as they age, and leave empty partitions to drop. An *exact* prune (an operator's choice:
``toolpath db prune --exact``, ``toolpath collect --prune-exact``) walks the day the cutoff falls inside too, and
deletes its spans older than the cutoff by batches, under the same rule; only the days wholly older than the
cutoff are left to the drop.

A trace is never cut in two (:mod:`toolpath.store.retention`) by what the store holds when the drop looks: the
spans a dropped partition holds of a trace that has spans in another partition too (one that goes on past the
cutoff, a trace across midnight) are put back, into ``spans_default`` (their range no longer has a partition),
where the batch deletes take the whole trace once its newest span is older than the cutoff. Those traces are
looked for before the lock that drops the partitions (a read of each partition's key index: seconds at millions of
spans, which writers need not wait for); under the lock the spans put back are copied and the partitions dropped.
A span that arrives in between, for a trace whose every other span is in a dropped partition, and dated after it,
stays alone, as a span that arrives after its trace was pruned does.

A drop that misses the table's lock (:data:`LOCK_WAIT`) leaves its partitions for the next round, and
:attr:`Dropped.kept_from` says from when the spans older than the cutoff stay: the invocations started from then
on stay with them (:func:`toolpath.store.retention.prune`).
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from toolpath.store.bulk import pg_array
from toolpath.store.partitions import BEFORE, Partition, list_partitions

logger = logging.getLogger("toolpath.retention")

LOCK_WAIT = "3s"
"""How long a drop waits for the table's lock (held by a long read, say) before it leaves the partitions to the next
round: writers queue behind a lock being waited for."""
_IDS = "CAST(%s AS text[])"
WORK_MEM = "256MB"
"""Memory for hashing the traces of the partitions to drop (a few million rows) in one go, not on disk in parts."""
Range = tuple[int | None, int]
_OLDEST = -(2**63)


class Dropped(NamedTuple):
    """What dropping partitions took (or, in a dry run, would take)."""

    spans: int = 0
    traces: int = 0
    partitions: int = 0
    skip: tuple[Range, ...] = ()
    """The ranges of start time the batch deletes leave alone: the range partitions' that stay (in a dry run,
    every range partition's), but ``spans_before``'s; in an exact prune, only those a dry run would drop."""
    counted: frozenset[str] = frozenset()
    """In a dry run, the traces counted whole here that the batch deletes would take after the drop (spans of
    theirs put back): the batches' count leaves them out."""
    kept_from: int | None = None
    """The start of the oldest range partition that keeps spans older than the cutoff after this prune (no drop
    takes it, the batches leave it alone: a day that straddles the cutoff, days a drop left for want of its lock),
    ``None`` if none: invocations started from then on wait with those spans (:func:`kept_from`)."""


def old_partitions(partitions: list[Partition], cutoff_ns: int) -> list[Partition]:
    """The partitions whose whole range is older than ``cutoff_ns``."""
    return [p for p in partitions if not p.default and p.upper is not None and p.upper <= cutoff_ns]


def _ranges(
    partitions: list[Partition], dropping: list[Partition] | None = None, *, exact: bool = False
) -> tuple[Range, ...]:
    """The ranges the batches leave alone: the days', and those of the partitions a dry run would drop.
    ``spans_before`` is walked: in a store partitioned by the migration it holds all the spans it had, which would
    otherwise wait for its whole range to be old. ``exact``: only those a dry run would drop (it counted them);
    the batches walk the day the cutoff falls inside (its spans older than the cutoff), and the days older than
    the cutoff that a drop left in place for want of the lock."""
    return tuple(
        (p.lower, p.upper)
        for p in partitions
        if p.upper is not None and (p in (dropping or []) or (not exact and p.name != BEFORE))
    )


def kept_from(staying: list[Partition], cutoff_ns: int, *, exact: bool = False) -> int | None:
    """The start of the oldest of the ``staying`` partitions (those no drop takes) whose range the batches leave
    alone (:func:`_ranges`) and that starts before ``cutoff_ns``: its spans older than the cutoff stay after the
    prune, so the invocations of their traces must too. ``None`` when every span older than the cutoff outside
    the partitions dropped is the batches' (an exact prune; a cutoff at a partition's lower bound)."""
    lowers = [_OLDEST if lower is None else lower for lower, _ in _ranges(staying, exact=exact)]
    return min((lower for lower in lowers if lower < cutoff_ns), default=None)


def drop_old_partitions(engine: Engine, cutoff_ns: int, *, dry_run: bool = False, exact: bool = False) -> Dropped:
    """Drop the partitions of ``spans`` older than ``cutoff_ns``, putting back the spans of traces that have
    spans in other partitions; nothing on a store whose spans are not partitioned, and nothing dropped when the
    lock is not had in :data:`LOCK_WAIT` (then, unless ``exact``, :attr:`Dropped.kept_from` is the oldest day's start).
    ``exact``: the ranges to skip returned leave the batches every span older than the cutoff that no drop takes
    (:func:`_ranges`)."""
    with engine.connect() as conn:
        every = list_partitions(conn)
    old = old_partitions(every, cutoff_ns)
    if not old:
        return Dropped(skip=_ranges(every, exact=exact), kept_from=kept_from(every, cutoff_ns, exact=exact))
    staying = [p for p in every if p not in old]
    names = [p.name for p in old]
    others = [p.name for p in staying]
    mine = " UNION ALL ".join(f"SELECT trace_id FROM {name}" for name in names)
    theirs = " UNION ALL ".join(f"SELECT trace_id FROM {name}" for name in others) or "SELECT NULL AS trace_id"
    # the traces of these partitions with spans in others too: each side's key index read once, hashed
    elsewhere = f"SELECT DISTINCT o.trace_id FROM ({theirs}) o WHERE o.trace_id IN ({mine})"
    with engine.begin() as conn:  # looked for before the lock: writers wait for no scan
        conn.exec_driver_sql(f"SELECT set_config('work_mem', '{WORK_MEM}', true)")
        back = sorted(row[0] for row in conn.exec_driver_sql(elsewhere))
        spans, traces = _counts(conn, mine, back)
        if dry_run:  # the batches would take, after the drop, the traces put back that do not go on past the cutoff
            ending = [row[0] for row in conn.exec_driver_sql(_ENDING, (pg_array(back), cutoff_ns))]
            more = conn.exec_driver_sql(f"SELECT count(*) FROM spans WHERE trace_id = ANY({_IDS})", (pg_array(ending),))
            spans += int(more.scalar_one())
            skip = _ranges(every, old, exact=exact)
            held = kept_from(staying, cutoff_ns, exact=exact)
            return Dropped(spans, traces + len(ending), len(old), skip, frozenset(ending), held)
    try:
        with engine.begin() as conn:
            # writers wait from here to the commit: no span of the traces put back is added in between and lost
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            conn.exec_driver_sql("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
            conn.exec_driver_sql("SELECT set_config('enable_seqscan', 'off', true)")  # a seek a trace put back
            whole = " UNION ALL ".join(f"SELECT * FROM {name} WHERE trace_id = ANY({_IDS})" for name in names)
            conn.exec_driver_sql(
                f"CREATE TEMP TABLE spans_back ON COMMIT DROP AS {whole}", (pg_array(back),) * len(names)
            )
            conn.exec_driver_sql(f"DROP TABLE {', '.join(names)}")
            conn.exec_driver_sql("INSERT INTO spans SELECT * FROM spans_back")
    except OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != "55P03":  # lock_not_available: the next round tries again
            raise
        then = (
            "the batches delete their spans (exact)"
            if exact
            else "they wait for the next round, and so do the invocations of their traces"
        )
        logger.info("retention: spans' lock not had in %s; old partitions not dropped: %s", LOCK_WAIT, then)
        return Dropped(skip=_ranges(every, exact=exact), kept_from=kept_from(every, cutoff_ns, exact=exact))
    logger.info("retention: dropped partition(s) %s (%d span(s) of %d trace(s))", ", ".join(names), spans, traces)
    return Dropped(
        spans, traces, len(old), _ranges(staying, exact=exact), kept_from=kept_from(staying, cutoff_ns, exact=exact)
    )


_ENDING = (
    f"SELECT k.v FROM unnest({_IDS}) AS k(v) WHERE NOT EXISTS "
    "(SELECT 1 FROM spans WHERE spans.trace_id = k.v AND spans.start_time >= %s)"
)


def _counts(conn: Connection, mine: str, back: list[str]) -> tuple[int, int]:
    """The spans of the traces ``mine`` reads (the partitions to drop), and their traces, but for the traces put
    ``back`` (the batch deletes count them when they take them)."""
    spans, traces = conn.exec_driver_sql(
        f"SELECT sum(n) FILTER (WHERE NOT (d.trace_id = ANY({_IDS}))), count(*) "
        f"FROM (SELECT trace_id, count(*) AS n FROM ({mine}) m GROUP BY trace_id) d",
        (pg_array(back),),
    ).one()
    return int(spans or 0), int(traces) - len(back)
