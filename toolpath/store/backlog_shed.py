"""A backlog of online jobs kept to ``max_backlog``: the waiting jobs past it marked ``shed``, the oldest or the
newest first (:class:`~toolpath.store.job_status.ShedPolicy`), in the transaction that enqueued them."""

from __future__ import annotations

import time

from sqlalchemy import Connection, Table, func, select, tuple_, update

from toolpath.store.job_status import JobStatus, ShedPolicy

__all__ = ["shed"]

_IN_CHUNK = 500


def shed(conn: Connection, jobs: Table, key: str, max_backlog: int, policy: ShedPolicy) -> int:
    """Mark the waiting jobs of ``jobs`` (its target's id in column ``key``) past ``max_backlog`` as shed; how
    many. On PostgreSQL a job another transaction holds is left to the next time."""
    waiting = conn.execute(
        select(func.count()).select_from(jobs).where(jobs.c.status == JobStatus.PENDING)
    ).scalar_one()
    excess = waiting - max_backlog
    if excess <= 0:
        return 0
    order = jobs.c.enqueued_at.asc() if policy is ShedPolicy.OLDEST else jobs.c.enqueued_at.desc()
    victims = select(jobs.c[key], jobs.c.evaluator).where(jobs.c.status == JobStatus.PENDING).order_by(order)
    victims = victims.limit(excess)
    if conn.dialect.name == "postgresql":
        victims = victims.with_for_update(skip_locked=True)
    keys = [tuple(row) for row in conn.execute(victims)]
    for i in range(0, len(keys), _IN_CHUNK):
        conn.execute(
            update(jobs)
            .where(tuple_(jobs.c[key], jobs.c.evaluator).in_(keys[i : i + _IN_CHUNK]))
            .values(status=JobStatus.SHED, finished_at=time.time_ns())
        )
    return len(keys)
