"""Paginated reads for browsing a store (``toolpath ui``): sessions by filters, a page at a time, newest first,
keyset-paginated on the indexed ``(last_started_at, session_id)`` so the first page of a large store is one
index walk (each session's row: :func:`toolpath.store.session_list.session_rows`, as the CLI's list has it);
online scores of invocations; online pass rates over time; recent online failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Text, and_, case, cast, exists, func, or_, select, union

from toolpath.store import schema as t
from toolpath.store import session_list
from toolpath.store.job_queue import ResultLabel
from toolpath.store.session_list import EVALUATION_PREFIXES, Reader
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
    """With ``metric``: only sessions with an invocation scored online below this (literally below)."""
    worse_than: float | None = None
    """With ``metric``: only sessions with a score worse than this by the metric's direction (below it, or above
    it where lower is better: ``lower_is_better``)."""
    lower_is_better: bool = False
    label: ResultLabel | None = None
    """With ``metric``: only sessions with an online result of this label (``pass``, ``fail``, ``error``)."""
    text: str | None = None
    """Only sessions with this text (case-insensitive) in a prompt, a response, an error, the session id, a tool's
    name, arguments, result or error, or an invocation's attributes."""
    in_spans: bool = False
    """With ``text``: also look in the names, attributes and events of the turns' spans (a scan of every span)."""
    tool: str | None = None
    """Only sessions that called this tool."""
    tool_error: bool = False
    """Only sessions with a tool call that failed."""
    latency_above: float | None = None
    """Only sessions with a turn slower than this many seconds."""
    hide_evaluation: bool = False
    """Leave out the sessions evaluations ran: those with a turn marked by ``evaluation_attribute``, and (stores
    written before the mark) those with an id of :data:`EVALUATION_PREFIXES`."""
    evaluation_attribute: str | None = None
    """The invocation attribute that is ``true`` on a turn an evaluation ran (``toolpath.evaluation``)."""
    review: str | None = None
    """Only sessions with a turn a reviewer annotated: labelled ``pass`` or ``fail``, or ``any`` annotation."""


@dataclass(frozen=True)
class SessionPage:
    rows: list[dict[str, Any]]
    next_cursor: tuple[int, str] | None
    """Where the next (older) page starts (``after`` of :func:`session_page`); ``None`` on the last page."""
    previous_cursor: tuple[int, str] | None = None
    """Where the previous (newer) page ends (``before`` of :func:`session_page`); ``None`` on the first page."""
    total: int | None = None
    """How many sessions match the filter, all pages together."""
    total_capped: bool = False
    """The filtered count stopped at :data:`COUNT_CAP`: ``total`` is a lower bound."""


def _like(text: str) -> str:
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def session_conditions(where: SessionFilter, *, sqlite: bool = True) -> list[Any]:
    """The SQL conditions on ``sessions`` of ``where`` (``sqlite``: for SQLite, else for PostgreSQL)."""
    s, inv, calls = t.sessions, t.invocations, t.tool_calls
    conditions: list[Any] = []
    if where.agent is not None:
        conditions.append(s.c.agent_name == where.agent)
    if where.since_ns is not None:
        conditions.append(s.c.last_started_at >= where.since_ns)
    if where.until_ns is not None:
        conditions.append(s.c.first_started_at <= where.until_ns)
    if where.hide_evaluation:
        conditions += [~s.c.session_id.like(f"{prefix}%") for prefix in EVALUATION_PREFIXES]
        if where.evaluation_attribute is not None:
            marked = inv.c.attributes[where.evaluation_attribute].as_boolean()
            conditions.append(~exists().where(inv.c.session_id == s.c.session_id, marked.is_(True)))
    if where.failures:
        conditions.append(exists().where(inv.c.session_id == s.c.session_id, inv.c.failure > 0))
    if where.latency_above is not None:
        conditions.append(
            exists().where(inv.c.session_id == s.c.session_id, inv.c.latency_seconds > where.latency_above)
        )
    if where.tool is not None or where.tool_error:
        called = [calls.c.invocation_id == inv.c.invocation_id]
        if where.tool is not None:
            called.append(calls.c.name == where.tool)
        if where.tool_error:
            called.append(calls.c.error.is_not(None))
        conditions.append(exists().where(inv.c.session_id == s.c.session_id, exists().where(*called)))
    if where.text:
        pattern = _like(where.text)

        def has(column: Any) -> Any:
            # SQLite's LIKE ignores ASCII case as it is (lower() on every row tripled the scan); PostgreSQL: ILIKE
            text = column if column.type.python_type is str else cast(column, Text)
            return text.like(pattern, escape="\\") if sqlite else text.ilike(pattern, escape="\\")

        # one pass over each table (an IN of their union), not a probe of every session's turns in page order
        selects = [
            select(s.c.session_id).where(has(s.c.session_id)),
            select(inv.c.session_id).where(
                or_(has(inv.c.prompt), has(inv.c.response), has(inv.c.error), has(inv.c.attributes))
            ),
            select(inv.c.session_id)
            .select_from(calls.join(inv, inv.c.invocation_id == calls.c.invocation_id))
            .where(or_(has(calls.c.name), has(calls.c.args), has(calls.c.result), has(calls.c.error))),
        ]
        if where.in_spans:
            spans = t.spans
            searched = (spans.c.name, spans.c.attributes, spans.c.events, spans.c.status_message)
            selects.append(
                select(inv.c.session_id)
                .select_from(spans.join(inv, inv.c.trace_id == spans.c.trace_id))
                .where(or_(*(has(column) for column in searched)))
            )
        matching = union(*selects)
        found = matching.subquery()
        conditions.append(s.c.session_id.in_(select(found.c.session_id)))
    if where.review is not None:
        notes = t.turn_annotations
        noted = [notes.c.invocation_id == inv.c.invocation_id]
        if where.review != "any":
            noted.append(notes.c.label == where.review)
        conditions.append(exists().where(inv.c.session_id == s.c.session_id, exists().where(*noted)))
    if where.metric is not None:
        res = t.online_results
        scored = [res.c.metric == where.metric, res.c.invocation_id == inv.c.invocation_id]
        if where.below is not None:
            scored.append(res.c.score < where.below)
        if where.worse_than is not None:
            scored.append(res.c.score > where.worse_than if where.lower_is_better else res.c.score < where.worse_than)
        if where.label is not None:
            scored.append(res.c.label == where.label)
        conditions.append(exists().where(inv.c.session_id == s.c.session_id, *scored))
    return conditions


def session_page(
    store: Store,
    where: SessionFilter,
    *,
    limit: int = 50,
    after: tuple[int, str] | None = None,
    before: tuple[int, str] | None = None,
    count: bool = True,
) -> SessionPage:
    """Up to ``limit`` sessions matching ``where``, newest first, after the ``after`` cursor (older ones) or
    before the ``before`` cursor (newer ones); with each its invocation, failure and tool-call counts, its
    slowest turn and its first prompt; and (``count``) how many match in all."""
    s = t.sessions
    query = select(s.c.session_id, s.c.agent_name, s.c.first_started_at, s.c.last_started_at)
    sqlite = store.dialect == "sqlite"
    conditions = session_conditions(where, sqlite=sqlite)
    newest_first = (s.c.last_started_at.desc(), s.c.session_id)
    if before is not None:
        at, session_id = before
        conditions.append(or_(s.c.last_started_at > at, and_(s.c.last_started_at == at, s.c.session_id < session_id)))
        order: tuple[Any, ...] = (s.c.last_started_at, s.c.session_id.desc())
    else:
        if after is not None:
            at, session_id = after
            conditions.append(
                or_(s.c.last_started_at < at, and_(s.c.last_started_at == at, s.c.session_id > session_id))
            )
        order = newest_first
    query = query.where(*conditions).order_by(*order).limit(limit + 1)
    with store.engine.connect() as conn:
        found = list(conn.execute(query).all())
        page = found[:limit]
        more = len(found) > limit
        if before is not None:
            page.reverse()
        total, capped = count_sessions(conn, session_conditions(where, sqlite=sqlite)) if count else (None, False)
        rows = session_list.session_rows(Reader.of_connection(conn), page, where.evaluation_attribute)
    older = (page[-1].last_started_at, page[-1].session_id) if page and (before is not None or more) else None
    newer = (page[0].last_started_at, page[0].session_id) if page and (after is not None or (before and more)) else None
    return SessionPage(rows, older, newer, total, capped)


COUNT_CAP = 1000
"""A filtered count stops here (a total above it reads "more than 1000"): counting every match of a text search
over a large store would cost many times the page it is shown with."""


def count_sessions(conn: Any, conditions: list[Any]) -> tuple[int, bool]:
    """How many sessions match ``conditions`` (with conditions: :data:`COUNT_CAP` at most), and whether the count
    stopped there."""
    s = t.sessions
    if not conditions:
        return session_list.count(Reader.of_connection(conn)), False
    capped = select(s.c.session_id).where(*conditions).limit(COUNT_CAP + 1).subquery()
    found = int(conn.execute(select(func.count()).select_from(capped)).scalar_one())
    return min(found, COUNT_CAP), found > COUNT_CAP


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
