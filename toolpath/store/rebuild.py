"""What a rebuild of stored traces must leave behind (SPEC §3: the stored state is the same whatever the arrival
order): no session whose invocations all went, no job or online score of a deleted invocation, no score of an
invocation's earlier, partial version, and session rows that say what their invocations say now."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import delete, func, select, update

from toolpath.store import schema as t

_IN_CHUNK = 500


def forget_invocations(conn: Any, invocation_ids: Sequence[str]) -> None:
    """Delete invocations a rebuild no longer makes, with their tool calls, job and online scores (their sessions
    then go through :func:`refresh_sessions`)."""
    for chunk in _chunks(invocation_ids):
        conn.execute(delete(t.tool_calls).where(t.tool_calls.c.invocation_id.in_(chunk)))
        # the job first: its row lock waits for a worker completing it, whose scores the next delete then sees
        conn.execute(delete(t.eval_jobs).where(t.eval_jobs.c.invocation_id.in_(chunk)))
        conn.execute(delete(t.online_results).where(t.online_results.c.invocation_id.in_(chunk)))
        conn.execute(delete(t.invocations).where(t.invocations.c.invocation_id.in_(chunk)))


def rescore(conn: Any, invocation_ids: Sequence[str]) -> None:
    """Invocations rebuilt with more spans than they were scored on: their scores go and their job waits again
    (a job that was shed stays shed)."""
    jobs = t.eval_jobs
    for chunk in _chunks(invocation_ids):
        # the job first, as in forget_invocations; a waiting job too, so that no worker claims it (and reads the
        # invocation as it was) before this transaction commits
        conn.execute(
            update(jobs)
            .where(jobs.c.invocation_id.in_(chunk), jobs.c.status != "shed")
            .values(status="pending", claimed_by=None, claimed_at=None, finished_at=None, attempts=0)
        )
        conn.execute(delete(t.online_results).where(t.online_results.c.invocation_id.in_(chunk)))


def refresh_sessions(conn: Any, session_ids: Iterable[str]) -> None:
    """Each session's row from its invocations as stored now: first and last start, the agent of its latest
    invocation that names one; a session left without invocations is deleted."""
    inv, sessions = t.invocations, t.sessions
    for chunk in _chunks(sorted(set(session_ids))):
        spans = {
            row.session_id: row
            for row in conn.execute(
                select(
                    inv.c.session_id,
                    func.min(inv.c.started_at).label("first"),
                    func.max(inv.c.started_at).label("last"),
                )
                .where(inv.c.session_id.in_(chunk))
                .group_by(inv.c.session_id)
            )
        }
        gone = [s for s in chunk if s not in spans]
        if gone:
            conn.execute(delete(sessions).where(sessions.c.session_id.in_(gone)))
        for session_id, row in spans.items():
            agent = conn.execute(
                select(inv.c.agent_name)
                .where(inv.c.session_id == session_id, inv.c.agent_name.is_not(None))
                .order_by(inv.c.started_at.desc(), inv.c.invocation_id.desc())
                .limit(1)
            ).scalar()
            conn.execute(
                update(sessions)
                .where(sessions.c.session_id == session_id)
                .values(first_started_at=row.first, last_started_at=row.last, agent_name=agent)
            )


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), _IN_CHUNK):
        yield items[i : i + _IN_CHUNK]
