"""Retention: delete raw spans and derived invocations past their age, in small batches that never hold ingest up.

Each batch is its own short transaction of at most ``batch_size`` rows walked in index order, so a collector
writing at the same time waits at most one batch (SQLite has one writer); on PostgreSQL a batch takes the same
per-trace advisory locks as ingest, so a late span of a trace being pruned is stored before or after it, never
half-way, and everything else goes on untouched.

- **Spans** go a whole trace at a time, once the *newest* span of the trace is older than the cutoff: a trace
  is never cut in two, so a late span of a trace still being pruned rebuilds from complete spans. On a
  PostgreSQL store whose spans are partitioned by time, the partitions wholly older than the cutoff are dropped
  first (:mod:`toolpath.store.partition_drops`, which keeps the same rule), and the batches delete what is left
  outside the day partitions: the day the cutoff falls inside waits to go whole, unless the prune is ``exact``
  (then the batches delete its spans older than the cutoff too, as they do on a store of one table).
- **Invocations** go when they started before their cutoff, with their tool calls, their online-evaluation job
  and online scores; a session left with no invocation goes too, the others keep first/last start times that
  say what their invocations say now. On a partitioned store they go after the drop, and not from the start of
  the oldest range partition left holding spans older than the cutoff on (the day the cutoff falls inside, or
  old days a drop left for want of its lock, unless the prune is ``exact``): an invocation is never pruned while
  its spans wait for a later round, for a late span to rebuild it from.
- **Evaluation runs stay** (`eval_runs` / `eval_results`): a run is a record of what was scored, and its result
  rows carry their own inputs and scores; the invocation ids in them may then name pruned invocations.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from sqlalchemy import Connection, delete, func, or_, select, text, tuple_

from toolpath.errors import ConfigError
from toolpath.store import ingest, partitions
from toolpath.store import schema as t
from toolpath.store.partition_drops import drop_old_partitions
from toolpath.store.store import Store

logger = logging.getLogger("toolpath.retention")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.IGNORECASE)
DEFAULT_BATCH = 1000
_OLDEST_NS = -(2**63)
"""The oldest time a 64-bit column of nanoseconds holds (SQLite's INTEGER, PostgreSQL's BIGINT)."""
_PRUNE_LOCK = 0x746F6F6C70727E  # one pruner at a time among collectors sharing a PostgreSQL store


def parse_duration(value: str, option: str = "duration") -> float:
    """Seconds in ``value``: a number and a unit, ``s``, ``m``, ``h``, ``d`` or ``w`` (``45m``, ``12h``, ``30d``).
    Anything else, or zero, is a :class:`ConfigError` naming ``option``."""
    match = _DURATION.fullmatch(value)
    seconds = float(match.group(1)) * _UNITS[match.group(2).lower()] if match else 0.0
    if match and not seconds:
        raise ConfigError(f"{option} {value!r}: must be more than zero (e.g. 12h, 30d)")
    if not seconds:
        raise ConfigError(f"{option} {value!r}: not a duration (a number and a unit s, m, h, d or w, e.g. 12h, 30d)")
    return seconds


@dataclass
class PruneCounts:
    """What a prune deleted (or, in a dry run, would delete)."""

    spans: int = 0
    traces: int = 0
    invocations: int = 0
    tool_calls: int = 0
    sessions: int = 0
    jobs: int = 0
    online_results: int = 0
    annotations: int = 0
    """Reviews of the pruned turns (they go with their turn; a rebuild of a trace keeps them)."""
    partitions: int = field(default=0, compare=False)
    """Partitions of spans dropped whole (their spans are counted above too); not compared: a store whose spans are
    not partitioned prunes the same rows by batches."""

    def add(self, other: PruneCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def __str__(self) -> str:
        parts = [
            f"{self.spans} span(s) of {self.traces} trace(s)",
            f"{self.invocations} invocation(s)",
            f"{self.tool_calls} tool call(s)",
            f"{self.sessions} session(s)",
            f"{self.jobs} online job(s)",
            f"{self.online_results} online score(s)",
            f"{self.annotations} review(s)",
        ]
        dropped = f" ({self.partitions} partition(s) of spans dropped whole)" if self.partitions else ""
        return ", ".join(parts) + dropped


@dataclass
class Pruner:
    """Prunes one store. ``pause`` seconds (at least; as long as the batch took, at most a second) separate two
    batches, so that writers waiting for the lock get it; ``stop`` ends a prune between batches."""

    store: Store
    batch_size: int = DEFAULT_BATCH
    pause: float = 0.0
    stop: Callable[[], bool] = lambda: False
    waits: list[float] = field(default_factory=list)
    """How long each batch's transaction took (the longest a writer could have waited for it)."""
    _counted: set[str] = field(default_factory=set, repr=False)
    """Traces a dry run has counted."""
    counted: set[str] = field(default_factory=set, repr=False)
    """Traces a dry run has counted whole before the batches (:mod:`~.partition_drops`): the batches skip them."""

    def prune_spans(
        self, cutoff_ns: int, *, dry_run: bool = False, skip: Sequence[tuple[int | None, int]] = ()
    ) -> PruneCounts:
        """Traces whose newest span started before ``cutoff_ns``: their spans. The walk leaves the spans whose start
        is in a range of ``skip`` alone (a partitioned store's range partitions: they go whole), but a trace it
        takes goes whole."""
        s = t.spans
        counts = PruneCounts()
        cursor: tuple[Any, ...] | None = None
        while not self.stop():
            query = select(s.c.start_time, s.c.trace_id, s.c.span_id).where(s.c.start_time < cutoff_ns)
            for lower, upper in skip:
                query = query.where(or_(s.c.start_time >= upper, *([] if lower is None else [s.c.start_time < lower])))
            if cursor is not None:
                query = query.where(tuple_(s.c.start_time, s.c.trace_id, s.c.span_id) > tuple_(*cursor))
            query = query.order_by(s.c.start_time, s.c.trace_id, s.c.span_id).limit(self.batch_size)
            with self.store.engine.connect() as conn:
                rows = conn.execute(query).all()
            if not rows:
                break
            cursor = tuple(rows[-1])
            traces = sorted({r.trace_id for r in rows})
            with self._batch() as conn:
                self._lock_traces(conn, traces)
                kept = set(
                    conn.execute(
                        select(s.c.trace_id).where(s.c.trace_id.in_(traces), s.c.start_time >= cutoff_ns).distinct()
                    ).scalars()
                )
                gone = [trace_id for trace_id in traces if trace_id not in kept]
                if not gone:
                    continue
                if dry_run:  # every span of a trace that goes is older than the cutoff: the walk meets it once
                    counts.spans += sum(1 for r in rows if r.trace_id not in kept and r.trace_id not in self.counted)
                    counts.traces += len(set(gone) - self._counted - self.counted)
                    self._counted.update(gone)
                else:
                    counts.spans += conn.execute(delete(s).where(s.c.trace_id.in_(gone))).rowcount
                    counts.traces += len(gone)
        return counts

    def prune_invocations(self, cutoff_ns: int, *, dry_run: bool = False) -> PruneCounts:
        """Invocations started before ``cutoff_ns``, their tool calls, jobs and online scores, and the sessions
        they leave empty."""
        if dry_run:
            return self._count_invocations(cutoff_ns)
        inv = t.invocations
        counts = PruneCounts()
        cursor: tuple[Any, ...] | None = None
        while not self.stop():
            query = select(inv.c.started_at, inv.c.invocation_id, inv.c.trace_id, inv.c.session_id).where(
                inv.c.started_at < cutoff_ns
            )
            if cursor is not None:
                query = query.where(tuple_(inv.c.started_at, inv.c.invocation_id) > tuple_(*cursor))
            # an invocation brings its tool calls, job and scores along: fewer per batch, as many rows
            query = query.order_by(inv.c.started_at, inv.c.invocation_id).limit(max(1, self.batch_size // 4))
            with self.store.engine.connect() as conn:
                rows = conn.execute(query).all()
            if not rows:
                break
            cursor = (rows[-1].started_at, rows[-1].invocation_id)
            ids = [r.invocation_id for r in rows]
            sessions = sorted({r.session_id for r in rows})
            with self._batch() as conn:
                self._lock_traces(conn, sorted({r.trace_id for r in rows}))
                # counted inside the transaction, under the locks: what the deletes below remove
                counts.add(_dependents(conn, ids))
                counts.invocations += _count(conn, inv, inv.c.invocation_id.in_(ids))
                ingest.forget_invocations(conn, ids)
                conn.execute(delete(t.turn_annotations).where(t.turn_annotations.c.invocation_id.in_(ids)))
                if self.store.dialect == "postgresql":  # an ingest adding to one of them waits, or is seen
                    conn.execute(
                        select(t.sessions.c.session_id).where(t.sessions.c.session_id.in_(sessions)).with_for_update()
                    )
                before = _count(conn, t.sessions, t.sessions.c.session_id.in_(sessions))
                ingest.refresh_sessions(conn, sessions)
                counts.sessions += before - _count(conn, t.sessions, t.sessions.c.session_id.in_(sessions))
        return counts

    def _count_invocations(self, cutoff_ns: int) -> PruneCounts:
        inv, sessions = t.invocations, t.sessions
        old = select(inv.c.invocation_id).where(inv.c.started_at < cutoff_ns)
        with self.store.engine.connect() as conn:
            return PruneCounts(
                invocations=_count(conn, inv, inv.c.started_at < cutoff_ns),
                tool_calls=_count(conn, t.tool_calls, t.tool_calls.c.invocation_id.in_(old)),
                jobs=_count(conn, t.eval_jobs, t.eval_jobs.c.invocation_id.in_(old)),
                online_results=_count(conn, t.online_results, t.online_results.c.invocation_id.in_(old)),
                annotations=_count(conn, t.turn_annotations, t.turn_annotations.c.invocation_id.in_(old)),
                sessions=_count(conn, sessions, sessions.c.last_started_at < cutoff_ns),
            )

    def _lock_traces(self, conn: Connection, trace_ids: Sequence[str]) -> None:
        ingest.lock_traces(conn, trace_ids)  # as Store.ingest does: one writer per trace

    @contextlib.contextmanager
    def _batch(self) -> Iterator[Any]:
        """One batch's transaction, timed, then the pause that lets waiting writers in."""
        started = time.monotonic()
        with self.store.engine.begin() as conn:
            yield conn
        took = time.monotonic() - started
        self.waits.append(took)
        if self.pause:
            time.sleep(min(max(self.pause, took), 1.0))


def _count(conn: Connection, table: Any, condition: Any) -> int:
    return int(conn.execute(select(func.count()).select_from(table).where(condition)).scalar_one())


def _dependents(conn: Connection, ids: Sequence[str]) -> PruneCounts:
    return PruneCounts(
        tool_calls=_count(conn, t.tool_calls, t.tool_calls.c.invocation_id.in_(ids)),
        jobs=_count(conn, t.eval_jobs, t.eval_jobs.c.invocation_id.in_(ids)),
        online_results=_count(conn, t.online_results, t.online_results.c.invocation_id.in_(ids)),
        annotations=_count(conn, t.turn_annotations, t.turn_annotations.c.invocation_id.in_(ids)),
    )


def prune(
    store: Store,
    *,
    spans_older_than: float | None,
    invocations_older_than: float | None,
    dry_run: bool = False,
    batch_size: int = DEFAULT_BATCH,
    pause: float = 0.0,
    stop: Callable[[], bool] = lambda: False,
    now_ns: int | None = None,
    exact: bool = False,
) -> PruneCounts:
    """Delete spans and invocations older than the given ages (seconds; ``None``: keep them all); returns what
    went (or, with ``dry_run``, what would go). On a store whose spans are partitioned the old partitions are
    dropped first, then the invocations go, then the spans by batches (elsewhere the invocations go first): an
    invocation goes only if no partition left holds spans of its time older than the cutoff (the day the cutoff
    falls inside, old days a drop left for want of its lock), so none is pruned while its spans wait for a later
    round. ``exact``: on such a store, the spans older than the cutoff in the partitions left go too (by batches),
    and the invocations at their own cutoff; elsewhere retention is exact already and it changes nothing."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    pruner = Pruner(store, batch_size=batch_size, pause=pause, stop=stop)
    counts = PruneCounts()
    spans_cutoff = None if spans_older_than is None else cutoff_ns(now_ns, spans_older_than)
    dropped = None
    if spans_cutoff is not None and store.dialect == "postgresql":  # whole partitions first: what stays is known
        dropped = drop_old_partitions(store.engine, spans_cutoff, dry_run=dry_run, exact=exact)
        counts.add(PruneCounts(spans=dropped.spans, traces=dropped.traces, partitions=dropped.partitions))
        pruner.counted = set(dropped.counted)
    if invocations_older_than is not None:
        invocation_cutoff = cutoff_ns(now_ns, invocations_older_than)
        if dropped is not None and dropped.kept_from is not None:  # none outlived by spans waiting for their day
            invocation_cutoff = min(invocation_cutoff, dropped.kept_from)
        counts.add(pruner.prune_invocations(invocation_cutoff, dry_run=dry_run))
    if spans_cutoff is not None:  # the batches walk what no range partition left holds
        counts.add(pruner.prune_spans(spans_cutoff, dry_run=dry_run, skip=dropped.skip if dropped is not None else ()))
    return counts


def cutoff_ns(now_ns: int, age_seconds: float) -> int:
    """The time ``age_seconds`` before ``now_ns``, in nanoseconds; an age reaching past the oldest time a column holds
    (64-bit nanoseconds: some 292 years before 1970, or an infinite one) is that oldest time: nothing is older."""
    age_ns = age_seconds * 1e9
    return _OLDEST_NS if age_ns >= now_ns - _OLDEST_NS else max(_OLDEST_NS, now_ns - int(age_ns))


def check_lifetimes(spans: float | None, invocations: float | None) -> None:
    """Invocations must live at least as long as spans: an invocation pruned while its trace's spans stay would be
    rebuilt from them by the next late span."""
    if spans is not None and invocations is not None and invocations < spans:
        raise ConfigError(
            "--retain-invocations is shorter than --retain-spans: an invocation must outlive its spans "
            "(a late span would rebuild a pruned invocation from them)"
        )
    if spans is None and invocations is not None:
        raise ConfigError("--retain-invocations needs --retain-spans (at most as long): spans rebuild invocations")


class RetentionWorker:
    """Prunes ``store`` every ``every`` seconds on a daemon thread (``start`` / ``stop``). Collectors sharing a
    PostgreSQL store take turns (an advisory lock): one prunes, the others skip that round. ``exact``: as
    :func:`prune`'s."""

    def __init__(
        self,
        store: Store,
        *,
        spans: float | None,
        invocations: float | None,
        every: float = 600.0,
        batch_size: int = DEFAULT_BATCH,
        pause: float = 0.05,
        exact: bool = False,
    ) -> None:
        check_lifetimes(spans, invocations)
        self.store = store
        self.spans, self.invocations, self.exact = spans, invocations, exact
        self.every, self.batch_size, self.pause = every, batch_size, pause
        self.rounds = 0
        self.total = PruneCounts()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolpath-retention", daemon=True)

    def start(self) -> RetentionWorker:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def run_once(self) -> PruneCounts | None:
        """One round (the partitions ahead made first, on a store whose spans are partitioned); ``None`` when
        another collector is pruning the same store."""
        with self._turn() as mine:
            if not mine:
                return None
            if self.store.dialect == "postgresql":
                try:
                    with self.store.engine.begin() as conn:
                        partitions.ensure_partitions(conn, time.time_ns())
                except Exception:  # the spans go to spans_default meanwhile: the prune below goes on
                    logger.exception("retention: the spans' partitions ahead could not be made")
            counts = prune(
                self.store,
                spans_older_than=self.spans,
                invocations_older_than=self.invocations,
                batch_size=self.batch_size,
                pause=self.pause,
                stop=self._stop.is_set,
                exact=self.exact,
            )
        self.rounds += 1
        self.total.add(counts)
        return counts

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                counts = self.run_once()
                if counts is not None and (counts.spans or counts.invocations):
                    logger.info("retention: pruned %s", counts)
            except Exception:  # the store is down, a deadlock was broken: the next round tries again
                logger.exception("retention: round failed")
            self._stop.wait(self.every)

    def _turn(self) -> Any:
        return _PruneTurn(self.store)


class _PruneTurn:
    """``with _PruneTurn(store) as mine``: on PostgreSQL, holds a session advisory lock while ``mine`` is true."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._conn: Connection | None = None

    def __enter__(self) -> bool:
        if self.store.dialect != "postgresql":
            return True
        self._conn = self.store.engine.connect()
        got = bool(self._conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _PRUNE_LOCK}).scalar())
        self._conn.commit()
        if not got:
            self._conn.close()
            self._conn = None
        return got

    def __exit__(self, *exc: Any) -> None:
        if self._conn is not None:
            self._conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PRUNE_LOCK})
            self._conn.commit()
            self._conn.close()
