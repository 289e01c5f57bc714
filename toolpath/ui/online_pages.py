"""The Online page: each evaluator's scores charted by the time of the traffic they judged, what each evaluator
skipped and why, what waits, its judge's spend, the latest session results, and the latest failures. The range is
``days`` up to now (or up to ``until``); the buckets are chosen from it unless ``bucket`` names one."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolpath.store import browse, judge_spend, online_views
from toolpath.store.job_status import SkipReason
from toolpath.store.online_views import Target, Waiting
from toolpath.ui import params
from toolpath.ui.online_charts import buckets_for, charts
from toolpath.ui.views import ns_text

DAY_NS = 86400 * 1_000_000_000
RECORDED_REASONS = (SkipReason.RATE, SkipReason.BUDGET)
"""The skip reasons the store records (a target outside the sample has no job: only the collector counts it)."""


@dataclass
class EvaluatorRow:
    """One evaluator's line of the skipped-and-waiting table."""

    evaluator: str
    targets: set[Target] = field(default_factory=set)
    skipped: dict[SkipReason, int] = field(default_factory=dict)
    waiting: dict[Waiting, int] = field(default_factory=dict)


def _evaluator_rows(
    skipped: dict[str, dict[SkipReason, int]], backlog: list[online_views.Backlog], targets: dict[str, Target]
) -> list[EvaluatorRow]:
    rows: dict[str, EvaluatorRow] = {}
    for name, target in targets.items():
        rows.setdefault(name, EvaluatorRow(name)).targets.add(target)
    for name, counts in skipped.items():
        rows.setdefault(name, EvaluatorRow(name)).skipped.update(counts)
    for entry in backlog:
        row = rows.setdefault(entry.evaluator, EvaluatorRow(entry.evaluator))
        row.targets.add(entry.target)
        for state, count in entry.counts.items():
            row.waiting[state] = row.waiting.get(state, 0) + count
    return [rows[name] for name in sorted(rows)]


def online(request: Request) -> Response:
    query = dict(request.query_params)
    days = params.integer(query, "days", 7, low=1, high=365)
    now = time.time_ns()
    until = params.timestamp_ns(query, "until") or now
    since = until - days * DAY_NS
    try:
        buckets = buckets_for(since, until, params.text(query, "bucket"))
    except ValueError as refused:
        raise params.BadRequest(str(refused)) from None
    store = request.app.state.ui.store
    points = online_views.score_series(store, since_ns=since, until_ns=until, bucket_ns=buckets.size_ns)
    skipped = online_views.skipped_counts(store, since_ns=since, until_ns=until)
    waiting = online_views.backlog(store, now_ns=now)
    spend = judge_spend.by_evaluator(store, since_ns=since, until_ns=until)
    context: dict[str, Any] = {
        "groups": charts(points, buckets),
        "buckets": buckets,
        "evaluators": _evaluator_rows(skipped, waiting, {p.evaluator: p.target for p in points}),
        "reasons": RECORDED_REASONS,
        "waits": tuple(Waiting),
        "spend": [spend[name] for name in sorted(spend)],
        "revisions": online_views.session_revisions(store, limit=25),
        "failures": browse.recent_online_failures(store, limit=30),
        "days": days,
        "until": ns_text(until)[:16].replace(" ", "T") if params.text(query, "until") else "",
        "bucket": params.text(query, "bucket") or "",
        "since_ns": since,
        "until_ns": until,
    }
    return request.app.state.templates.TemplateResponse(request, "online.html", context)


def routes() -> list[Route]:
    return [Route("/online", online)]
