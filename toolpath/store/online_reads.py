"""What online evaluation has stored, read back: the latest scored turns and sessions with their results, for
``toolpath watch`` and the UI."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, or_, select

from toolpath.store import schema as t
from toolpath.store.store import Store

__all__ = ["latest_scored", "latest_sessions"]


def latest_scored(store: Store, *, after_ns: int = 0, limit: int = 50) -> list[dict[str, Any]]:
    """Invocations scored online after ``after_ns`` (newest last): agent, prompt, latency, failure, and the scores
    by metric (``metric (evaluator)`` for a metric more than one evaluator scores); ``toolpath watch`` polls it."""
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
        found = conn.execute(select(res).where(res.c.invocation_id.in_(ids)).order_by(res.c.evaluator)).all()
        by = {(r.metric, r.evaluator) for r in found}
        shared = {m for m, _ in by if sum(1 for other, _ in by if other == m) > 1}
        for r in found:  # a metric two evaluators score is named with each evaluator
            key = f"{r.metric} ({r.evaluator})" if r.metric in shared else r.metric
            scores[r.invocation_id][key] = {"score": r.score, "label": r.label, "explanation": r.explanation}
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


def latest_sessions(store: Store, *, limit: int = 20) -> list[dict[str, Any]]:
    """The sessions scored online most lately (newest last), one row per session and evaluator with its current
    revision's results (those no later revision has superseded): the evaluator and its version, the revision,
    the turns the session had when scored, when, and the scores by metric."""
    res = t.session_results
    current = res.c.superseded_at.is_(None)
    with store.engine.connect() as conn:
        recent = conn.execute(
            select(res.c.session_id, res.c.evaluator, func.max(res.c.created_at).label("scored_at"))
            .where(current)
            .group_by(res.c.session_id, res.c.evaluator)
            .order_by(func.max(res.c.created_at).desc(), res.c.session_id, res.c.evaluator)
            .limit(limit)
        ).all()
        if not recent:
            return []
        keys = or_(*(and_(res.c.session_id == r.session_id, res.c.evaluator == r.evaluator) for r in recent))
        found = conn.execute(select(res).where(current, keys).order_by(res.c.metric)).all()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in found:
        row = rows.setdefault(
            (r.session_id, r.evaluator),
            {"session_id": r.session_id, "evaluator": r.evaluator, "evaluator_version": r.evaluator_version,
             "revision": r.revision, "turns": r.turns, "scored_at": r.created_at, "scores": {}},
        )  # fmt: skip
        row["scores"][r.metric] = {"score": r.score, "label": r.label, "explanation": r.explanation}
    return [rows[r.session_id, r.evaluator] for r in reversed(recent) if (r.session_id, r.evaluator) in rows]
