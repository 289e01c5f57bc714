"""Paginated reads for browsing a store (``toolpath ui``): sessions by filters (:mod:`toolpath.store.session_filter`),
a page at a time, newest first (the list's own order, cursors and rows: :func:`toolpath.store.session_list.newest_page`,
as the CLI's list has them) with a total; online scores of invocations; online pass rates over time; recent online
failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, or_, select

from toolpath.store import schema as t
from toolpath.store import session_filter, session_list
from toolpath.store.job_status import ResultLabel
from toolpath.store.session_filter import SessionFilter
from toolpath.store.session_list import Cursor, Reader
from toolpath.store.store import Store


@dataclass(frozen=True)
class SessionPage:
    rows: list[dict[str, Any]]
    next_cursor: Cursor | None
    """Where the next (older) page starts (``after`` of :func:`session_page`); ``None`` on the last page."""
    previous_cursor: Cursor | None = None
    """Where the previous (newer) page ends (``before`` of :func:`session_page`); ``None`` on the first page."""
    total: int | None = None
    """How many sessions match the filter, all pages together."""
    total_capped: bool = False
    """The filtered count stopped at :data:`COUNT_CAP`: ``total`` is a lower bound."""


def session_page(
    store: Store,
    where: SessionFilter,
    *,
    limit: int = 50,
    after: Cursor | None = None,
    before: Cursor | None = None,
    count: bool = True,
) -> SessionPage:
    """Up to ``limit`` sessions matching ``where``, newest first, after the ``after`` cursor (older ones) or
    before the ``before`` cursor (newer ones); with each its invocation, failure and tool-call counts, its
    slowest turn and its first prompt; and (``count``) how many match in all."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        conditions = session_filter.conditions(where, reader.dialect)
        found = session_list.newest_page(reader, conditions, limit=limit, after=after, before=before)
        total, capped = session_list.counted(reader, conditions, cap=COUNT_CAP) if count else (None, False)
        rows = session_list.session_rows(reader, found.heads, where.evaluation_attribute)
    return SessionPage(rows, found.older, found.newer, total, capped)


COUNT_CAP = 1000
"""A filtered count stops here (a total above it reads "more than 1000"): counting every match of a text search
over a large store would cost many times the page it is shown with."""


def turn_place(store: Store, invocation_id: str) -> tuple[str, int] | None:
    """The session of the stored turn ``invocation_id`` and its number in it (from 1, in start order, as the
    session's page numbers its turns), or ``None``."""
    inv = t.invocations
    with store.engine.connect() as conn:
        row = conn.execute(
            select(inv.c.session_id, inv.c.started_at).where(inv.c.invocation_id == invocation_id)
        ).first()
        if row is None:
            return None
        earlier = or_(
            inv.c.started_at < row.started_at,
            and_(inv.c.started_at == row.started_at, inv.c.invocation_id < invocation_id),
        )
        before = conn.execute(
            select(func.count()).select_from(inv).where(inv.c.session_id == row.session_id, earlier)
        ).scalar_one()
    return row.session_id, int(before) + 1


def agent_names(store: Store) -> list[str]:
    """The agents that have sessions (the session table's indexed ``agent_name``)."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(t.sessions.c.agent_name).where(t.sessions.c.agent_name.is_not(None)).distinct())
        return sorted(r.agent_name for r in rows)


def online_metric_names(store: Store) -> list[str]:
    with store.engine.connect() as conn:
        return sorted(r.metric for r in conn.execute(select(t.online_results.c.metric).distinct()))


def online_scores(store: Store, invocation_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The online scores of each invocation: metric, score, label, explanation, and the evaluator (name and
    version) that gave it (two evaluators may score one metric of one turn)."""
    res = t.online_results
    out: dict[str, list[dict[str, Any]]] = {i: [] for i in invocation_ids}
    with store.engine.connect() as conn:
        for start in range(0, len(invocation_ids), 500):
            chunk = list(invocation_ids[start : start + 500])
            query = select(res).where(res.c.invocation_id.in_(chunk)).order_by(res.c.metric, res.c.evaluator)
            for r in conn.execute(query):
                out[r.invocation_id].append(
                    {"metric": r.metric, "score": r.score, "label": r.label, "explanation": r.explanation,
                     "evaluator": r.evaluator, "evaluator_version": r.evaluator_version}
                )  # fmt: skip
    return out


def session_scores(store: Store, session_id: str) -> list[dict[str, Any]]:
    """A session's scores as a whole (its evaluators of sessions'), every revision: the current ones first (by
    evaluator and metric), then those a later revision superseded, newest first."""
    res = t.session_results
    query = (
        select(res)
        .where(res.c.session_id == session_id)
        .order_by(res.c.superseded_at.is_not(None), res.c.evaluator, res.c.revision.desc(), res.c.metric)
    )
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(query)]


def online_series(store: Store, *, since_ns: int, bucket_ns: int) -> list[dict[str, Any]]:
    """Online results since ``since_ns`` by time bucket, metric and agent: how many results there were, how many
    were scored (have a score), errored (no score: ``error``), passed and failed (the label the online evaluator
    gave by the metric's pass rule), and the mean score."""
    res, inv = t.online_results, t.invocations
    bucket = (res.c.created_at // bucket_ns).label("bucket")
    query = (
        select(
            bucket,
            res.c.metric,
            inv.c.agent_name,
            func.count().label("results"),
            func.count(res.c.score).label("scored"),
            func.sum(case((res.c.label == ResultLabel.ERROR, 1), else_=0)).label("errors"),
            func.sum(case((res.c.label == ResultLabel.PASS, 1), else_=0)).label("passed"),
            func.sum(case((res.c.label == ResultLabel.FAIL, 1), else_=0)).label("failed"),
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
                "results": int(r.results),
                "scored": int(r.scored),
                "errors": int(r.errors or 0),
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
        .where(res.c.label == ResultLabel.FAIL)
        .order_by(res.c.created_at.desc())
        .limit(limit)
    )
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(query)]


def run_outcomes(store: Store, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """What says whether each result of the runs ``run_ids`` failed: its status, scores, the turns' criteria
    verdicts and the agent's error (not the rest of its row)."""
    res = t.eval_results
    out: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in run_ids}
    query = select(
        res.c.run_id, res.c.status, res.c.scores, res.c.row["error"].as_string().label("error"),
        res.c.row["metrics"].label("criteria"),
    ).where(res.c.run_id.in_(list(run_ids)))  # fmt: skip
    with store.engine.connect() as conn:
        for r in conn.execute(query):
            row = {"error": r.error, **({"metrics": r.criteria} if isinstance(r.criteria, dict) else {})}
            out[r.run_id].append({"status": r.status, "scores": r.scores or {}, "row": row})
    return out
