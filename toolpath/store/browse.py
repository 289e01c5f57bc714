"""Paginated reads for browsing a store (``toolpath ui``): sessions by filters, a page at a time, newest first,
keyset-paginated on the indexed ``(last_started_at, session_id)`` so the first page of a large store is one
index walk; online scores of invocations; online pass rates over time; recent online failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, exists, func, or_, select

from toolpath.store import schema as t
from toolpath.store.store import Store


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions a page shows; every field is optional."""

    agent: str | None = None
    since_ns: int | None = None
    """Sessions active at or after this time."""
    until_ns: int | None = None
    """Sessions that started at or before this time."""
    failures: bool = False
    """Only sessions with a failed invocation."""
    metric: str | None = None
    below: float | None = None
    """With ``metric``: only sessions with an invocation scored online below this."""
    text: str | None = None
    """Only sessions with this text in a prompt (case-insensitive)."""


@dataclass(frozen=True)
class SessionPage:
    rows: list[dict[str, Any]]
    next_cursor: tuple[int, str] | None
    """Where the next page starts (``after`` of :func:`session_page`); ``None`` on the last page."""


def session_page(
    store: Store, where: SessionFilter, *, limit: int = 50, after: tuple[int, str] | None = None
) -> SessionPage:
    """Up to ``limit`` sessions matching ``where``, newest first, after the ``after`` cursor; with each its
    invocation and failure counts and its first prompt."""
    s, inv = t.sessions, t.invocations
    query = select(s.c.session_id, s.c.agent_name, s.c.first_started_at, s.c.last_started_at)
    conditions: list[Any] = []
    if where.agent is not None:
        conditions.append(s.c.agent_name == where.agent)
    if where.since_ns is not None:
        conditions.append(s.c.last_started_at >= where.since_ns)
    if where.until_ns is not None:
        conditions.append(s.c.first_started_at <= where.until_ns)
    if where.failures:
        conditions.append(exists().where(inv.c.session_id == s.c.session_id, inv.c.failure > 0))
    if where.text:
        pattern = "%" + where.text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        conditions.append(
            exists().where(inv.c.session_id == s.c.session_id, func.lower(inv.c.prompt).like(pattern, escape="\\"))
        )
    if where.metric is not None:
        res = t.online_results
        scored = [res.c.metric == where.metric, res.c.invocation_id == inv.c.invocation_id]
        if where.below is not None:
            scored.append(res.c.score < where.below)
        conditions.append(exists().where(inv.c.session_id == s.c.session_id, *scored))
    if after is not None:
        at, session_id = after
        conditions.append(or_(s.c.last_started_at < at, and_(s.c.last_started_at == at, s.c.session_id > session_id)))
    query = query.where(*conditions).order_by(s.c.last_started_at.desc(), s.c.session_id).limit(limit + 1)
    with store.engine.connect() as conn:
        found = conn.execute(query).all()[: limit + 1]
        page = found[:limit]
        ids = [r.session_id for r in page]
        stats = {
            r.session_id: r
            for r in conn.execute(
                select(
                    inv.c.session_id,
                    func.count().label("invocations"),
                    func.coalesce(func.sum(case((inv.c.failure > 0, 1), else_=0)), 0).label("failures"),
                )
                .where(inv.c.session_id.in_(ids))
                .group_by(inv.c.session_id)
            )
        }
        earlier = inv.alias("earlier")
        first_start = select(func.min(earlier.c.started_at)).where(earlier.c.session_id == inv.c.session_id)
        first_prompts = {
            r.session_id: r.prompt
            for r in conn.execute(
                select(inv.c.session_id, inv.c.prompt).where(
                    inv.c.session_id.in_(ids), inv.c.started_at == first_start.scalar_subquery()
                )
            )
        }
    rows = [
        {
            "session_id": r.session_id,
            "agent_name": r.agent_name,
            "first_started_at": r.first_started_at,
            "last_started_at": r.last_started_at,
            "invocations": stats[r.session_id].invocations if r.session_id in stats else 0,
            "failures": int(stats[r.session_id].failures) if r.session_id in stats else 0,
            "prompt": first_prompts.get(r.session_id),
        }
        for r in page
    ]
    more = len(found) > limit
    cursor = (page[-1].last_started_at, page[-1].session_id) if more and page else None
    return SessionPage(rows, cursor)


def agent_names(store: Store) -> list[str]:
    """The agents that have sessions (the session table's indexed ``agent_name``)."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(t.sessions.c.agent_name).where(t.sessions.c.agent_name.is_not(None)).distinct())
        return sorted(r.agent_name for r in rows)


def online_metric_names(store: Store) -> list[str]:
    with store.engine.connect() as conn:
        return sorted(r.metric for r in conn.execute(select(t.online_results.c.metric).distinct()))


def online_scores(store: Store, invocation_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The online scores of each invocation: metric, score, label, explanation."""
    res = t.online_results
    out: dict[str, list[dict[str, Any]]] = {i: [] for i in invocation_ids}
    with store.engine.connect() as conn:
        for start in range(0, len(invocation_ids), 500):
            chunk = list(invocation_ids[start : start + 500])
            query = select(res).where(res.c.invocation_id.in_(chunk)).order_by(res.c.metric)
            for r in conn.execute(query):
                out[r.invocation_id].append(
                    {"metric": r.metric, "score": r.score, "label": r.label, "explanation": r.explanation}
                )
    return out


def online_series(store: Store, *, since_ns: int, bucket_ns: int) -> list[dict[str, Any]]:
    """Online results since ``since_ns`` by time bucket, metric and agent: how many were scored, passed and
    failed (the label the online evaluator gave by the metric's pass rule), and the mean score."""
    res, inv = t.online_results, t.invocations
    bucket = (res.c.created_at // bucket_ns).label("bucket")
    query = (
        select(
            bucket,
            res.c.metric,
            inv.c.agent_name,
            func.count().label("scored"),
            func.sum(case((res.c.label == "pass", 1), else_=0)).label("passed"),
            func.sum(case((res.c.label == "fail", 1), else_=0)).label("failed"),
            func.avg(res.c.score).label("mean"),
        )
        .select_from(res.join(inv, inv.c.invocation_id == res.c.invocation_id))
        .where(res.c.created_at >= since_ns)
        .group_by(bucket, res.c.metric, inv.c.agent_name)
        .order_by(res.c.metric, inv.c.agent_name, bucket)
    )
    with store.engine.connect() as conn:
        return [
            {
                "start_ns": int(r.bucket) * bucket_ns,
                "metric": r.metric,
                "agent_name": r.agent_name,
                "scored": int(r.scored),
                "passed": int(r.passed or 0),
                "failed": int(r.failed or 0),
                "mean": float(r.mean) if r.mean is not None else None,
            }
            for r in conn.execute(query)
        ]


def recent_online_failures(store: Store, *, limit: int = 20) -> list[dict[str, Any]]:
    """The newest online results that failed their metric's pass rule, with their session."""
    res, inv = t.online_results, t.invocations
    query = (
        select(res, inv.c.session_id, inv.c.agent_name, inv.c.prompt)
        .select_from(res.join(inv, inv.c.invocation_id == res.c.invocation_id))
        .where(res.c.label == "fail")
        .order_by(res.c.created_at.desc())
        .limit(limit)
    )
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(query)]
