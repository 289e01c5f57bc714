"""What an online-evaluation job's ``eval_jobs.status`` can say, how a backlog is shed, and how a job's results are
labelled: plain enums that import nothing, so that the ingest (which rescores jobs), the job queue, the sessions
filter and the collector's metrics (which must not load SQLAlchemy) all name them from here. Each member is stored
and printed as its value."""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    """A job's ``eval_jobs.status``, stored as its value."""

    PENDING = "pending"
    """Waiting to be claimed (again, when its worker gave it back or its invocation was rewritten)."""
    CLAIMED = "claimed"
    """Held by a worker until its lease runs out."""
    DONE = "done"
    """Completed together with its results."""
    SHED = "shed"
    """Dropped from a backlog over ``max_backlog``."""
    FAILED = "failed"
    """Given up after ``max_attempts`` claims."""
    SKIPPED = "skipped"
    """Not scored: its evaluator's limits said no when it was claimed (``eval_jobs.reason``, a
    :class:`SkipReason`)."""


UNFINISHED = (JobStatus.PENDING, JobStatus.CLAIMED)
"""The statuses of a job still in the backlog; the others are final."""


class SkipReason(StrEnum):
    """Why an evaluator's target was not scored. A target outside its sample gets no job (the sample is a hash of
    its id: whether it was sampled can always be worked out again); those are only counted. A sampled target
    over its evaluator's limits is a job of status ``skipped``, its reason in ``eval_jobs.reason``."""

    NOT_SAMPLED = "not_sampled"
    """Admitted by the evaluator's filters, outside its sample (counted, no job)."""
    RATE = "rate"
    """Over the evaluator's ``max_per_hour``."""
    BUDGET = "budget"
    """The evaluator's judge budget for the hour or the day was spent."""


class ShedPolicy(StrEnum):
    """Which waiting jobs a backlog over ``max_backlog`` sheds."""

    OLDEST = "oldest"
    NEWEST = "newest"


SHED_POLICIES = tuple(ShedPolicy)


class ResultLabel(StrEnum):
    """An online result's ``online_results.label`` (and its OTel ``gen_ai.evaluation.score.label``)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    """No score: the metric could not be computed."""
    SCORED = "scored"
    """A score with no pass mark (a metric that only measures, e.g. latency, and no threshold)."""
