"""What the UI's online page shows, read from the store: each evaluator's scores bucketed by the time of the
traffic they judged (a turn's start; a session's first turn's start), not by when they were scored; the targets
skipped by reason; what still waits; and the latest session results, superseded revisions included. Each read is
one query over an index of the time it is bounded by (``invocations.started_at``,
``sessions.last_started_at``, the job tables' status indexes, ``session_results.created_at``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, select

from toolpath.store import schema as t
from toolpath.store.job_status import JobStatus, ResultLabel, SkipReason
from toolpath.store.store import Store

__all__ = [
    "Backlog",
    "ScorePoint",
    "SessionRevision",
    "Target",
    "Waiting",
    "backlog",
    "score_series",
    "session_revisions",
    "skipped_counts",
]


class Target(StrEnum):
    """What an evaluator scores: a turn (``online_results``) or a whole session (``session_results``)."""

    TURN = "turn"
    SESSION = "session"


class Waiting(StrEnum):
    """A job still to be done: ``open`` (a session not yet quiet for its idle time), ``due`` (claimable),
    ``claimed`` (held by a worker)."""

    OPEN = "open"
    DUE = "due"
    CLAIMED = "claimed"


@dataclass(frozen=True)
class ScorePoint:
    """One evaluator's results of one metric over the traffic that started in one bucket (``start_ns``, the
    bucket's start): how many results, how many had a score, errored (no score), passed and failed (its pass
    mark), were scored without a pass mark (label ``scored``), and the mean score."""

    evaluator: str
    target: Target
    metric: str
    start_ns: int
    results: int
    scored: int
    errors: int
    passed: int
    failed: int
    measured: int
    mean: float | None


def _label_sums(label: ColumnElement[str | None], score: ColumnElement[float | None]) -> list[ColumnElement[int]]:
    def count(value: ResultLabel) -> ColumnElement[int]:
        return func.sum(case((label == value, 1), else_=0))

    return [
        func.count().label("results"),
        func.count(score).label("scored"),
        count(ResultLabel.ERROR).label("errors"),
        count(ResultLabel.PASS).label("passed"),
        count(ResultLabel.FAIL).label("failed"),
        count(ResultLabel.SCORED).label("measured"),
    ]


def _turn_series(since_ns: int, until_ns: int, bucket_ns: int) -> Select[Any]:
    res, inv = t.online_results, t.invocations
    bucket = (inv.c.started_at // bucket_ns).label("bucket")
    return (
        select(bucket, res.c.evaluator, res.c.metric, *_label_sums(res.c.label, res.c.score), func.avg(res.c.score))
        .select_from(inv.join(res, res.c.invocation_id == inv.c.invocation_id))
        .where(inv.c.started_at >= since_ns, inv.c.started_at < until_ns)
        .group_by(bucket, res.c.evaluator, res.c.metric)
    )


def _session_series(since_ns: int, until_ns: int, bucket_ns: int) -> Select[Any]:
    res, ses = t.session_results, t.sessions
    bucket = (ses.c.first_started_at // bucket_ns).label("bucket")
    return (
        select(bucket, res.c.evaluator, res.c.metric, *_label_sums(res.c.label, res.c.score), func.avg(res.c.score))
        .select_from(ses.join(res, res.c.session_id == ses.c.session_id))
        .where(
            ses.c.first_started_at >= since_ns,
            ses.c.first_started_at < until_ns,
            ses.c.last_started_at >= since_ns,  # implied by the first; lets the last start's index find them
            res.c.superseded_at.is_(None),  # the current revision only
        )
        .group_by(bucket, res.c.evaluator, res.c.metric)
    )


def score_series(store: Store, *, since_ns: int, until_ns: int, bucket_ns: int) -> list[ScorePoint]:
    """Each evaluator's results per metric and bucket of ``bucket_ns`` (counted from the epoch, UTC), of the
    traffic that started in ``[since_ns, until_ns)``: turns by their start, sessions (their current revision) by
    their first turn's start. Ordered by evaluator, metric and bucket."""
    if bucket_ns <= 0:
        raise ValueError(f"bucket_ns={bucket_ns}: must be positive")
    out: list[ScorePoint] = []
    with store.engine.connect() as conn:
        for target, query in (
            (Target.TURN, _turn_series(since_ns, until_ns, bucket_ns)),
            (Target.SESSION, _session_series(since_ns, until_ns, bucket_ns)),
        ):
            for row in conn.execute(query):
                bucket, evaluator, metric, mean = row[0], row[1], row[2], row[-1]
                sums = [int(c or 0) for c in row[3:-1]]  # PostgreSQL sums integers as decimals
                out.append(
                    ScorePoint(evaluator, target, metric, int(bucket) * bucket_ns, sums[0], sums[1], sums[2],
                               sums[3], sums[4], sums[5], float(mean) if mean is not None else None)
                )  # fmt: skip
    return sorted(out, key=lambda p: (p.evaluator, p.metric, p.start_ns))


def skipped_counts(store: Store, *, since_ns: int, until_ns: int) -> dict[str, dict[SkipReason, int]]:
    """Per evaluator, its targets skipped (rate or budget) among the jobs enqueued in ``[since_ns, until_ns)``
    (a session's job by when it fell due). Targets outside the sample have no job: they are not here."""
    out: dict[str, dict[SkipReason, int]] = {}
    with store.engine.connect() as conn:
        for table, time in ((t.eval_jobs, t.eval_jobs.c.enqueued_at), (t.session_jobs, t.session_jobs.c.due_at)):
            query = (
                select(table.c.evaluator, table.c.reason, func.count())
                .where(table.c.status == JobStatus.SKIPPED, time >= since_ns, time < until_ns)
                .group_by(table.c.evaluator, table.c.reason)
            )
            for evaluator, reason, count in conn.execute(query):
                counts = out.setdefault(str(evaluator), {})
                counts[SkipReason(reason)] = counts.get(SkipReason(reason), 0) + int(count)
    return out


@dataclass
class Backlog:
    """One evaluator's jobs not done yet, by :class:`Waiting` state."""

    evaluator: str
    target: Target
    counts: dict[Waiting, int] = field(default_factory=dict)


def backlog(store: Store, *, now_ns: int) -> list[Backlog]:
    """Each evaluator's jobs waiting at ``now_ns``: turns pending (due) or claimed; sessions still open (pending,
    not quiet for their idle time until a later ``due_at``), due, or claimed."""
    waiting = (JobStatus.PENDING, JobStatus.CLAIMED)
    turns, sessions = t.eval_jobs, t.session_jobs
    open_now = and_(sessions.c.status == JobStatus.PENDING, sessions.c.due_at > now_ns)
    session_state = case((open_now, Waiting.OPEN.value), else_=sessions.c.status).label("state")
    found: dict[tuple[str, Target], Backlog] = {}
    with store.engine.connect() as conn:
        for target, query in (
            (
                Target.TURN,
                select(turns.c.evaluator, turns.c.status, func.count())
                .where(turns.c.status.in_(waiting))
                .group_by(turns.c.evaluator, turns.c.status),
            ),
            (
                Target.SESSION,
                select(sessions.c.evaluator, session_state, func.count())
                .where(sessions.c.status.in_(waiting))
                .group_by(sessions.c.evaluator, session_state),
            ),
        ):
            for evaluator, state, count in conn.execute(query):
                entry = found.setdefault((str(evaluator), target), Backlog(str(evaluator), target))
                kind = Waiting.DUE if state == JobStatus.PENDING else Waiting(state)
                entry.counts[kind] = entry.counts.get(kind, 0) + int(count)
    return [found[key] for key in sorted(found)]


@dataclass
class SessionRevision:
    """One revision of a session as one evaluator scored it: its results by metric (score, label, explanation),
    the turns it had, when scored, and when a later revision superseded it (``None``: current)."""

    session_id: str
    evaluator: str
    evaluator_version: str
    revision: int
    turns: int
    created_at: int
    superseded_at: int | None
    results: list[tuple[str, float | None, str | None, str | None]] = field(default_factory=list)

    @property
    def current(self) -> bool:
        return self.superseded_at is None


def session_revisions(store: Store, *, limit: int = 25) -> list[SessionRevision]:
    """The session revisions scored most lately (newest first), at most ``limit``, superseded ones included."""
    res = t.session_results
    query = (
        select(res.c.session_id, res.c.evaluator, res.c.evaluator_version, res.c.revision, res.c.turns,
               res.c.created_at, res.c.superseded_at, res.c.metric, res.c.score, res.c.label, res.c.explanation)
        .order_by(res.c.created_at.desc(), res.c.session_id, res.c.evaluator, res.c.revision.desc(), res.c.metric)
        .limit(limit * 20)  # a revision's metrics are rows of their own
    )  # fmt: skip
    found: dict[tuple[str, str, int], SessionRevision] = {}
    with store.engine.connect() as conn:
        for r in conn.execute(query):
            key = (r.session_id, r.evaluator, int(r.revision))
            entry = found.get(key)
            if entry is None:
                if len(found) == limit:
                    break
                entry = found[key] = SessionRevision(
                    r.session_id, r.evaluator, r.evaluator_version, int(r.revision), int(r.turns), int(r.created_at),
                    r.superseded_at,
                )  # fmt: skip
            entry.results.append((r.metric, r.score, r.label, r.explanation))
    return list(found.values())
