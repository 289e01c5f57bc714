"""The online-evaluation job queue, in the store: one row per sampled invocation in ``eval_jobs``.

Jobs are enqueued in the transaction that writes their invocation, so a stored invocation is never missed and
never enqueued twice. Workers (threads or processes, any number, sharing one store) *claim* a batch: on
PostgreSQL with ``SELECT … FOR UPDATE SKIP LOCKED``, on SQLite by its single writer. A claim is a lease: a job
whose worker died is claimed again once the lease has run out. A job is *completed* together with its results,
and only by the worker holding the claim, so every job is scored exactly once. When more than ``max_backlog``
jobs wait, the queue sheds (marks ``shed``) the oldest or the newest, and counts them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, select, text, update

from toolpath.errors import ConfigError
from toolpath.model import Invocation
from toolpath.store import schema as t
from toolpath.store.job_status import SHED_POLICIES, JobStatus, ShedPolicy
from toolpath.store.store import Store

_IN_CHUNK = 500
_INSERT_RESULTS = (  # plain tuples through the driver's executemany: no per-row SQLAlchemy processing
    "INSERT INTO online_results (invocation_id, metric, score, label, explanation, worker, created_at) VALUES ({marks})"
)
_INSERT_RESULTS_PG = (  # one statement, one array per column: one round trip for the batch
    "INSERT INTO online_results (invocation_id, metric, score, label, explanation, worker, created_at) "
    "SELECT * FROM unnest(CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS double precision[]), "
    "CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS bigint[]))"
)

_STALE = "status = :claimed AND claimed_at < :stale"
_WAITING = "status = :pending"
_ENQUEUE = (  # in the ingest's write transaction: plain tuples through the driver, an existing job left as it is
    "INSERT INTO eval_jobs (invocation_id, status, enqueued_at, attempts) VALUES ({mark}, {mark}, {mark}, 0) "
    "ON CONFLICT (invocation_id) DO NOTHING"
)
_ENQUEUE_PG = (
    "INSERT INTO eval_jobs (invocation_id, status, enqueued_at, attempts) "
    "SELECT unnest(CAST(%s AS text[])), %s, %s, 0 ON CONFLICT (invocation_id) DO NOTHING"
)


@dataclass
class QueueStats:
    enqueued: int = 0
    shed: int = 0
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    """Jobs given up after ``max_attempts`` claims."""
    lost_claims: int = 0
    """Completions refused because another worker had taken the job over (its lease had run out)."""


class JobQueue:
    def __init__(
        self,
        store: Store,
        *,
        accept: Callable[[Invocation], bool] = lambda inv: True,
        max_backlog: int | None = None,
        shed: ShedPolicy | str = ShedPolicy.OLDEST,
        max_attempts: int = 3,
    ) -> None:
        if shed not in SHED_POLICIES:
            raise ConfigError(f"shed must be one of {', '.join(SHED_POLICIES)}, got {shed!r}")
        self.store = store
        self.accept = accept
        self.max_backlog = max_backlog
        self.shed_policy = ShedPolicy(shed)
        self.max_attempts = max_attempts
        self.stats = QueueStats()
        self._lock = threading.Lock()

    def attach(self) -> JobQueue:
        """Enqueue from now on whenever the store writes invocations."""
        self.store.on_invocations = self.enqueue
        return self

    def detach(self) -> None:
        if self.store.on_invocations == self.enqueue:
            self.store.on_invocations = None

    # --- producer side (inside the store's write transaction) --------------------------------------------

    def enqueue(self, conn: Connection, invocations: Sequence[Invocation]) -> None:
        chosen = [inv.invocation_id for inv in invocations if self.accept(inv)]
        if not chosen:
            return
        now = time.time_ns()
        if conn.dialect.name == "postgresql":
            result = conn.exec_driver_sql(_ENQUEUE_PG, (chosen, JobStatus.PENDING, now))
        else:
            mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
            result = conn.exec_driver_sql(_ENQUEUE.format(mark=mark), [(i, JobStatus.PENDING, now) for i in chosen])
        added = max(result.rowcount, 0)
        shed = self._shed(conn) if self.max_backlog is not None else 0
        with self._lock:
            self.stats.enqueued += added
            self.stats.shed += shed

    def _shed(self, conn: Connection) -> int:
        jobs = t.eval_jobs
        waiting = conn.execute(
            select(func.count()).select_from(jobs).where(jobs.c.status == JobStatus.PENDING)
        ).scalar_one()
        excess = waiting - (self.max_backlog or 0)
        if excess <= 0:
            return 0
        order = jobs.c.enqueued_at.asc() if self.shed_policy is ShedPolicy.OLDEST else jobs.c.enqueued_at.desc()
        victims = select(jobs.c.invocation_id).where(jobs.c.status == JobStatus.PENDING).order_by(order).limit(excess)
        if self.store.dialect == "postgresql":
            victims = victims.with_for_update(skip_locked=True)
        ids = [row.invocation_id for row in conn.execute(victims)]
        conn.execute(
            update(jobs).where(jobs.c.invocation_id.in_(ids)).values(status=JobStatus.SHED, finished_at=time.time_ns())
        )
        return len(ids)

    # --- worker side -------------------------------------------------------------------------------------

    def has_work(self, lease_seconds: float) -> bool:
        """Whether a job waits, or a claim's lease ran out: a read, without the write lock, so that a worker
        polling an empty queue writes nothing (the claim that follows decides)."""
        params = {
            "claimed": JobStatus.CLAIMED,
            "pending": JobStatus.PENDING,
            "stale": time.time_ns() - int(lease_seconds * 1e9),
        }
        with self.store.engine.connect() as conn:
            return any(
                conn.execute(text(f"SELECT 1 FROM eval_jobs WHERE {which} LIMIT 1"), params).first() is not None
                for which in (_WAITING, _STALE)
            )

    def claim(self, worker: str, limit: int, lease_seconds: float) -> list[str]:
        """Up to ``limit`` jobs for ``worker``: waiting ones, or claims whose lease ran out."""
        with self.store.redoable_write() as conn:  # queued with ingest (SQLite)
            return self._claim(conn, worker, limit, lease_seconds)

    def complete(self, worker: str, invocation_id: str, results: list[dict[str, Any]]) -> bool:
        """Store ``results`` and close the job, if ``worker`` still holds it; False when it does not."""
        return bool(self.complete_batch(worker, {invocation_id: results}))

    def complete_batch(self, worker: str, results: Mapping[str, Sequence[Mapping[str, Any]]]) -> set[str]:
        """Store the results of several jobs (by invocation id) and close them, in one transaction; only the jobs
        ``worker`` still holds are closed and get their results (another worker took over the others after their
        lease ran out: its results count, not these). Returns the ids closed."""
        return self.complete_and_claim(worker, results, 0, 0.0)[0]

    def complete_and_claim(
        self,
        worker: str,
        results: Mapping[str, Sequence[Mapping[str, Any]]],
        limit: int,
        lease_seconds: float,
        *,
        also: Callable[[Connection, set[str]], None] | None = None,
    ) -> tuple[set[str], list[str]]:
        """:meth:`complete_batch`, and :meth:`claim` of the next ``limit`` jobs in the same transaction (a worker
        scoring batch after batch takes the store's write lock once a batch, not twice). ``also(conn, closed)``
        writes what else the closed jobs' results make, in that transaction (online eval-set runs' cases)."""
        if not results and not limit:
            return set(), []
        with self.store.redoable_write() as conn:  # queued with ingest (SQLite)
            closed = self._complete(conn, worker, results) if results else set()
            if also is not None and closed:
                also(conn, closed)
            return closed, self._claim(conn, worker, limit, lease_seconds) if limit else []

    def release(self, worker: str, invocation_ids: Sequence[str]) -> None:
        """Give back jobs ``worker`` claimed and will not score (it is stopping): waiting again, for any worker
        now rather than after the lease, and the claim not counted as an attempt."""
        jobs = t.eval_jobs
        with self.store.redoable_write() as conn:
            for i in range(0, len(invocation_ids), _IN_CHUNK):
                conn.execute(
                    update(jobs)
                    .where(self._held(worker, invocation_ids[i : i + _IN_CHUNK]))
                    .values(status=JobStatus.PENDING, claimed_by=None, claimed_at=None, attempts=jobs.c.attempts - 1)
                )

    def _held(self, worker: str, invocation_ids: Sequence[str]) -> ColumnElement[bool]:
        """Which of ``invocation_ids`` ``worker`` holds, for an update. On PostgreSQL a job whose row another
        transaction has locked is left out rather than waited for: another transaction locks a claimed job only to
        wait it again or to delete it (an ingest rebuilding its invocation, retention), so the claim is lost all
        the same, and a worker that waited while holding the other jobs of its batch could deadlock with it."""
        jobs = t.eval_jobs
        held = and_(
            jobs.c.invocation_id.in_(invocation_ids), jobs.c.status == JobStatus.CLAIMED, jobs.c.claimed_by == worker
        )
        if self.store.dialect != "postgresql":
            return held  # one writer at a time: nothing to wait for
        unlocked = select(jobs.c.invocation_id).where(held).with_for_update(skip_locked=True)
        return jobs.c.invocation_id.in_(unlocked)

    def _claim(self, conn: Connection, worker: str, limit: int, lease_seconds: float) -> list[str]:
        now = time.time_ns()
        stale = now - int(lease_seconds * 1e9)
        params = {
            "claimed": JobStatus.CLAIMED,
            "pending": JobStatus.PENDING,
            "worker": worker,
            "now": now,
            "stale": stale,
        }
        # claims whose lease ran out first (few), then waiting jobs, oldest first: two index range scans that stop
        # at ``limit``; one query with an OR of both would sort every waiting job, however long the backlog
        rows = list(conn.execute(self._claiming(_STALE), {**params, "limit": limit}).all())
        if len(rows) < limit:
            rows += conn.execute(self._claiming(_WAITING), {**params, "limit": limit - len(rows)}).all()
        worn = [r.invocation_id for r in rows if r.attempts > self.max_attempts]
        if worn:  # a job that keeps killing its workers is given up, not retried forever
            conn.execute(
                update(t.eval_jobs)
                .where(t.eval_jobs.c.invocation_id.in_(worn))
                .values(status=JobStatus.FAILED, finished_at=now)
            )
        with self._lock:
            self.stats.claimed += len(rows) - len(worn)
            self.stats.failed += len(worn)
        return [r.invocation_id for r in rows if r.attempts <= self.max_attempts]

    def _claiming(self, which: str) -> Any:
        skip_locked = " FOR UPDATE SKIP LOCKED" if self.store.dialect == "postgresql" else ""
        return text(
            "UPDATE eval_jobs SET status = :claimed, claimed_by = :worker, claimed_at = :now, attempts = attempts + 1 "
            f"WHERE invocation_id IN (SELECT invocation_id FROM eval_jobs WHERE {which} "
            f"ORDER BY enqueued_at LIMIT :limit{skip_locked}) RETURNING invocation_id, attempts"
        )

    def _complete(self, conn: Connection, worker: str, results: Mapping[str, Sequence[Mapping[str, Any]]]) -> set[str]:
        now = time.time_ns()
        jobs = t.eval_jobs
        ids = list(results)
        closed: set[str] = set()
        for i in range(0, len(ids), _IN_CHUNK):
            closed.update(
                conn.execute(
                    update(jobs)
                    .where(self._held(worker, ids[i : i + _IN_CHUNK]))
                    .values(status=JobStatus.DONE, finished_at=now)
                    .returning(jobs.c.invocation_id)
                ).scalars()
            )
        rows = [
            (i, r["metric"], r["score"], r["label"], r["explanation"], worker, now)
            for i in ids
            if i in closed
            for r in results[i]
        ]
        if rows:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(_INSERT_RESULTS_PG, tuple(list(c) for c in zip(*rows, strict=True)))
            else:
                mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
                conn.exec_driver_sql(_INSERT_RESULTS.format(marks=", ".join([mark] * 7)), rows)
        with self._lock:
            self.stats.completed += len(closed)
            self.stats.lost_claims += len(ids) - len(closed)
        return closed

    def counts(self) -> dict[JobStatus, int]:
        jobs = t.eval_jobs
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status)).all()
        return {JobStatus(status): count for status, count in rows}


def latest_scored(store: Store, *, after_ns: int = 0, limit: int = 50) -> list[dict[str, Any]]:
    """Invocations scored online after ``after_ns`` (newest last): agent, prompt, latency, failure, and the scores
    by metric; ``toolpath watch`` polls it."""
    res, inv = t.online_results, t.invocations
    with store.engine.connect() as conn:
        recent = conn.execute(
            select(res.c.invocation_id, func.max(res.c.created_at).label("scored_at"))
            .where(res.c.created_at > after_ns)
            .group_by(res.c.invocation_id)
            .order_by(func.max(res.c.created_at).desc())
            .limit(limit)
        ).all()
        if not recent:
            return []
        ids = [r.invocation_id for r in recent]
        info = {r.invocation_id: r for r in conn.execute(select(inv).where(inv.c.invocation_id.in_(ids)))}
        scores: dict[str, dict[str, Any]] = {i: {} for i in ids}
        for r in conn.execute(select(res).where(res.c.invocation_id.in_(ids))):
            scores[r.invocation_id][r.metric] = {"score": r.score, "label": r.label, "explanation": r.explanation}
    out = []
    for r in sorted(recent, key=lambda r: r.scored_at):
        row = info.get(r.invocation_id)
        out.append(
            {
                "invocation_id": r.invocation_id,
                "scored_at": r.scored_at,
                "agent_name": row.agent_name if row else None,
                "session_id": row.session_id if row else None,
                "prompt": row.prompt if row else None,
                "latency_seconds": row.latency_seconds if row else None,
                "failure": row.failure if row else None,
                "scores": scores[r.invocation_id],
            }
        )
    return out
