"""Whole sessions waiting to be scored once they go quiet: ``session_jobs``, one row per session and evaluator of
sessions (a :class:`~toolpath.store.job_queue.Job` whose first field is the session's id).

Each turn stored for a session an evaluator takes (its filters admit the turn, its sample the session) pushes the
session's ``due_at`` to ``idle_seconds`` after now, in the transaction that writes the turn. A session is claimed
once it is due, as a turn's job is (leases, limits and skips are :class:`~toolpath.store.job_queue.JobQueue`'s),
and scored as stored then. A turn arriving while it is being scored puts it back to wait (the scorer's claim is
lost: its results are not stored); one arriving after it was scored reopens it as its next ``revision``. Each
revision's results are kept in ``session_results``; storing a revision's results marks the earlier revisions'
as superseded. Nothing is shed: a session that is still going on is not a backlog."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, and_, insert, select, tuple_, update

from toolpath.model import Invocation
from toolpath.store import schema as t
from toolpath.store.job_queue import Job, JobQueue, QueueEvaluator
from toolpath.store.job_status import JobStatus

__all__ = ["SessionQueue"]

_OPEN = "session_jobs.status IN ('pending', 'claimed')"
_TOUCH = (  # a session's turn stored: due again idle_seconds from now; scored (or given up) before: reopened
    "INSERT INTO session_jobs (session_id, evaluator, status, revision, due_at, enqueued_at, attempts) "
    "VALUES ({m}, {m}, 'pending', 1, {m}, {m}, 0) ON CONFLICT (session_id, evaluator) DO UPDATE SET "
    "due_at = CASE WHEN excluded.due_at > session_jobs.due_at THEN excluded.due_at ELSE session_jobs.due_at END, "
    f"revision = CASE WHEN {_OPEN} THEN session_jobs.revision ELSE session_jobs.revision + 1 END, "
    f"attempts = CASE WHEN {_OPEN} THEN session_jobs.attempts ELSE 0 END, "
    f"enqueued_at = CASE WHEN {_OPEN} THEN session_jobs.enqueued_at ELSE excluded.enqueued_at END, "
    "status = 'pending', reason = NULL, claimed_by = NULL, claimed_at = NULL, finished_at = NULL"
)


class SessionQueue(JobQueue):
    """The queue of whole sessions: :class:`~toolpath.store.job_queue.JobQueue` over ``session_jobs``, its
    waiting jobs those whose session has been quiet long enough, the longest-due first."""

    table = t.session_jobs
    key = "session_id"
    waiting = "status = :pending AND due_at <= :now"
    order = "due_at"

    def __init__(self, store: Any, *, evaluators: Sequence[QueueEvaluator], max_attempts: int = 3) -> None:
        super().__init__(store, evaluators=evaluators, max_backlog=None, max_attempts=max_attempts)

    def enqueue(self, conn: Connection, invocations: Sequence[Invocation]) -> None:
        touched: dict[tuple[str, str], int] = {}
        outside: list[tuple[str, str]] = []
        now = time.time_ns()
        for inv in invocations:
            for evaluator in self.evaluators.values():
                if not evaluator.admits(inv):
                    continue
                if evaluator.samples(inv.session_id):
                    touched[inv.session_id, evaluator.name] = now + int(evaluator.idle_seconds * 1e9)
                else:
                    outside.append((evaluator.name, inv.session_id))
        if outside:
            self._count_outside(outside)
        if not touched:
            return
        mark = "%s" if conn.dialect.name == "postgresql" or conn.dialect.paramstyle != "qmark" else "?"
        rows = [(session, name, due, now) for (session, name), due in sorted(touched.items())]  # one lock order
        conn.exec_driver_sql(_TOUCH.format(m=mark), rows)
        with self._lock:
            self.stats.enqueued += len(rows)

    def waiting_sessions(self) -> int:
        """Sessions of this queue's evaluators still going on (stored, not yet quiet for long enough)."""
        jobs = t.session_jobs
        query = select(jobs.c.session_id).where(
            jobs.c.status == JobStatus.PENDING,
            jobs.c.due_at > time.time_ns(),
            jobs.c.evaluator.in_(list(self.evaluators)),
        )
        with self.store.engine.connect() as conn:
            return len(conn.execute(query).all())

    def _store_results(
        self, conn: Connection, worker: str, results: Mapping[Job, Sequence[Mapping[str, Any]]], now: int
    ) -> None:
        """Each closed session's results as its revision's; the earlier revisions' marked superseded."""
        if not results:
            return
        jobs, res = t.session_jobs, t.session_results
        keys = [tuple(job) for job in results]
        revisions = {
            Job(r.session_id, r.evaluator): r.revision
            for r in conn.execute(
                select(jobs.c.session_id, jobs.c.evaluator, jobs.c.revision).where(
                    tuple_(jobs.c.session_id, jobs.c.evaluator).in_(keys)
                )
            )
        }
        for job, revision in revisions.items():
            conn.execute(
                update(res)
                .where(
                    and_(res.c.session_id == job.invocation_id, res.c.evaluator == job.evaluator),
                    res.c.revision < revision,
                    res.c.superseded_at.is_(None),
                )
                .values(superseded_at=now)
            )
        rows = [
            {"session_id": job.invocation_id, "evaluator": job.evaluator, "revision": revisions[job],
             "metric": r["metric"], "evaluator_version": self._version(job.evaluator), "score": r["score"],
             "label": r["label"], "explanation": r["explanation"], "turns": r["turns"],
             "last_invocation_id": r.get("last_invocation_id"), "worker": worker, "created_at": now}
            for job, rows in results.items()
            if job in revisions
            for r in rows
        ]  # fmt: skip
        if rows:
            conn.execute(insert(res), rows)
