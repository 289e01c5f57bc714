"""The collector's own Prometheus metrics (``GET /metrics``), in a registry of its own per service.

Two kinds of families:

- ``toolpath_*``: the service's health — spans received, stored and rejected, export requests by status and
  their duration, invocations written, store errors and retries, rebuild time, exports in flight and refused,
  ingestion limits hit, and, with online evaluation, its jobs, scoring lag and judge usage;
- ``gen_ai_evaluation_score`` (histogram) and ``gen_ai_evaluation_results_total`` (counter), labelled by metric,
  agent and evaluator (and the counter by ``pass`` / ``fail`` / ``error`` / ``scored``): the names the OTLP
  export of online scores gets in Prometheus, so dashboards work whether Prometheus scrapes the collector or an
  OTel Collector.
- ``toolpath_online_skipped_total`` by evaluator and reason (``not_sampled``, ``rate``, ``budget``), and each
  evaluator's use of its limits this hour and day (read from the store, every process's together).
- ``toolpath_judge_spend_*_total`` by evaluator: its judge's requests, tokens, time and cost, read from the store
  (:mod:`toolpath.collector.spend_metrics`).

Events are counted as they happen; totals that other parts already keep (limits, online job counters, judge
usage, online workers) are read when Prometheus scrapes — or, when several processes serve one port, counted
as they change in each process (prometheus-client's multiprocess mode), so that every family adds up all of
them whichever process answers.
"""

from __future__ import annotations

import collections
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from toolpath.collector.limits import LIMIT_KINDS
from toolpath.collector.spend_metrics import spend_families
from toolpath.store.job_status import UNFINISHED, SkipReason
from toolpath.tracer import semconv as sc

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The classic text format, which every Prometheus reads (the names here need none of the newer escaping)."""
METRIC_LABEL = sc.GEN_AI_EVALUATION_NAME.replace(".", "_")
AGENT_LABEL = sc.GEN_AI_AGENT_NAME.replace(".", "_")
EVALUATOR_LABEL = sc.GEN_AI_EVALUATION_EVALUATOR_NAME.replace(".", "_")
RESULT_LABEL = sc.GEN_AI_EVALUATION_SCORE_LABEL.replace(".", "_")
SCORE_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 100.0)
"""Scores are mostly 0..1 (computation metrics) or 1..5 (judge rubrics); counts and latencies go higher."""
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LIMIT_HITS_HELP = "Ingestion limits hit (values cut, spans, tool calls dropped)"
TOKENS_HELP = "Judge tokens used"
WORKERS_ALIVE_HELP = "Online worker threads running"
WORKERS_HELP = "Online worker threads started"
LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

ONLINE_COUNTERS: dict[str, tuple[str, str]] = {  # an online evaluator's counters() key -> family, help
    "jobs_queued": ("toolpath_online_jobs_queued", "Online jobs enqueued here (invocations past filters and sample)"),
    "jobs_claimed": ("toolpath_online_jobs_claimed", "Online jobs claimed by this process's workers"),
    "jobs_done": ("toolpath_online_jobs_done", "Online jobs scored and closed by this process's workers"),
    "jobs_failed": ("toolpath_online_jobs_failed", "Online jobs given up after too many attempts"),
    "jobs_shed": ("toolpath_online_jobs_shed", "Online jobs shed because the backlog was over max_backlog"),
    "scoring_errors": ("toolpath_online_scoring_errors", "Online batches whose scoring raised (tried again later)"),
    "judge_requests": ("toolpath_judge_requests", "Judge requests sent (cache hits not included)"),
    "judge_cached": ("toolpath_judge_cached", "Judge requests answered from the cache"),
    "judge_errors": ("toolpath_judge_errors", "Judge requests that failed after retries"),
    "judge_retries": ("toolpath_judge_retries", "Judge requests retried"),
}


MAX_AGENT_LABELS = 100
"""Distinct agent names a collector process labels series with; the rest are ``other``."""
OTHER_AGENTS = "other"
MAX_EVALUATOR_LABELS = 100
"""Distinct evaluator names a collector process labels series with (its online.toml's; the rest are ``other``)."""
SKIPPED_HELP = "Online targets not scored, by evaluator and reason: not_sampled (outside the sample), rate, budget"
SKIPPED_PREFIX = "skipped:"
"""An online evaluator's ``counters()`` keys of skipped targets: ``skipped:{evaluator}:{reason}``."""


REJECT_REASONS = ("store_error", "trace_limit", "quarantined")
"""The ``reason`` label values of ``toolpath_spans_rejected``."""
UNSPOOLED_REASONS = ("too_big", "unspoolable_value")
"""The ``reason`` label values of ``toolpath_exports_unspooled``."""
TOKEN_DIRECTIONS = ("input", "output")
_LIMITS = ("max_per_hour", "tokens_per_hour", "tokens_per_day", "cost_per_hour", "cost_per_day")
"""The ``limit`` label values of ``toolpath_online_evaluator_limit`` (an evaluator's limits it declares)."""


class ServiceMetrics:
    """The families of one collector service; ``expose()`` renders them in the Prometheus text format."""

    def __init__(self, multiprocess_dir: str | None = None) -> None:
        self.multiprocess_dir = multiprocess_dir
        """Set: several processes serve one port and ``expose()`` adds up all of their values, kept in this folder
        (prometheus-client's multiprocess mode, which ``PROMETHEUS_MULTIPROC_DIR`` turns on at its import)."""
        self.registry = CollectorRegistry()
        r = self.registry
        self.spans_received = Counter("toolpath_spans_received", "Spans decoded from OTLP exports", registry=r)
        self.spans_stored = Counter("toolpath_spans_stored", "Spans committed to the store", registry=r)
        self.spans_rejected = Counter(
            "toolpath_spans_rejected",
            "Decoded spans not stored: store_error (503), trace_limit "
            "(over max_spans_per_trace), quarantined (refused by the store even alone; its neighbours are stored)",
            ["reason"],
            registry=r,
        )
        for reason in REJECT_REASONS:  # label values known in advance start at 0: panels show 0, not "No data"
            self.spans_rejected.labels(reason)
        self.requests = Counter(
            "toolpath_requests", "OTLP export requests by protocol and status code", ["protocol", "code"], registry=r
        )
        self.request_seconds = Histogram(
            "toolpath_request_duration_seconds",
            "Time to answer an OTLP export request (read, decode, store, rebuild)",
            ["protocol"],
            buckets=SECONDS_BUCKETS,
            registry=r,
        )
        self.invocations_written = Counter(
            "toolpath_invocations_written", "Invocations (re)built and written from stored spans", registry=r
        )
        self.store_errors = Counter("toolpath_store_errors", "Store writes that failed after retries", registry=r)
        self.store_retries = Counter(
            "toolpath_store_retries", "Store writes retried after a transient database error", registry=r
        )
        self.rebuild_seconds = Histogram(
            "toolpath_rebuild_duration_seconds",
            "Time to rebuild the invocations of the traces an export touched",
            buckets=SECONDS_BUCKETS,
            registry=r,
        )
        self.exports_in_flight = Gauge(
            "toolpath_exports_in_flight",
            "Exports admitted now, being stored or waiting their turn (at most max_in_flight per process)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.exports_refused = Counter(
            "toolpath_exports_refused",
            "Exports refused (503) because max_in_flight were admitted (not decoded) or the spool was full",
            registry=r,
        )
        self.exports_unspooled = Counter(
            "toolpath_exports_unspooled",
            "Exports a collector with a spool wrote to the store before answering: too_big (larger than the spool's "
            "bound alone), unspoolable_value (a value the spool's format cannot hold)",
            ["reason"],
            registry=r,
        )
        for reason in UNSPOOLED_REASONS:
            self.exports_unspooled.labels(reason)
        self.spool_spans = Gauge(
            "toolpath_spool_spans",
            "Spans answered and waiting in the spool to be written to the store (collect --spool)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.scoring_lag = Histogram(
            "toolpath_online_scoring_lag_seconds",
            "From the end of an agent run to its online scores being stored",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.scores = Histogram(
            "gen_ai_evaluation_score",
            "Online evaluation scores",
            [METRIC_LABEL, AGENT_LABEL, EVALUATOR_LABEL],
            buckets=SCORE_BUCKETS,
            registry=r,
        )
        self.results = Counter(
            "gen_ai_evaluation_results",
            "Online evaluation results by pass/fail",
            [METRIC_LABEL, AGENT_LABEL, EVALUATOR_LABEL, RESULT_LABEL],
            registry=r,
        )
        self.folded = Counter(
            "toolpath_label_values_folded",
            f"Series updates whose {AGENT_LABEL} label (from traffic) was folded into 'other': past the first "
            f"{MAX_AGENT_LABELS} agent names this process saw",
            registry=r,
        )
        self._agents: set[str] = set()
        self._evaluators: set[str] = set()
        self.skipped = (
            Counter("toolpath_online_skipped", SKIPPED_HELP, ["evaluator", "reason"], registry=r)
            if multiprocess_dir
            else None
        )
        # counted as they happen when processes share a port; read from the service's limits at scrape otherwise
        self.limit_hits = (
            Counter("toolpath_limit_hits", LIMIT_HITS_HELP, ["limit"], registry=r) if multiprocess_dir else None
        )
        self.judge_tokens = (
            Counter("toolpath_judge_tokens", TOKENS_HELP, ["direction"], registry=r) if multiprocess_dir else None
        )
        for counter, values in ((self.limit_hits, LIMIT_KINDS), (self.judge_tokens, TOKEN_DIRECTIONS)):
            for label in values if counter is not None else ():
                counter.labels(label)  # type: ignore[union-attr]
        self._limits: Callable[[], Mapping[str, int]] | None = None
        self._online: Any = None
        self._online_families: dict[str, tuple[Counter | Gauge, tuple[str, ...]]] = {}
        r.register(_ReadAtScrape(self))

    def watch(self, *, limits: Callable[[], Mapping[str, int]] | None = None, online: Any = None) -> None:
        """Read these at every scrape: ingestion limit hits, and an online evaluator's ``counters()`` /
        ``workers_alive()`` / ``backlog()`` (it also reports each scored batch through ``record_batch``).
        When processes share the port, the online counters and workers are counted as they change instead
        (the evaluator's ``add_listener``); the backlog, read from the store, is every process's already."""
        if limits is not None:
            self._limits = limits
        if online is None:
            return
        self._online = online
        if self.multiprocess_dir is not None and not self._online_families:
            r = self.registry
            families: dict[str, tuple[Counter | Gauge, tuple[str, ...]]] = {
                key: (Counter(family, description, registry=r), ())
                for key, (family, description) in ONLINE_COUNTERS.items()
            }
            tokens = self.judge_tokens
            assert tokens is not None  # made with the multiprocess folder
            families["judge_input_tokens"] = (tokens, ("input",))
            families["judge_output_tokens"] = (tokens, ("output",))
            for key, name, description in (
                ("workers_alive", "toolpath_online_workers_alive", WORKERS_ALIVE_HELP),
                ("workers", "toolpath_online_workers", WORKERS_HELP),
            ):
                families[key] = (Gauge(name, description, registry=r, multiprocess_mode="livesum"), ())
            self._online_families = families
            assert self.skipped is not None  # made with the multiprocess folder
            for name in online.units:  # known in advance: each evaluator's reasons start at 0
                for reason in SkipReason:
                    self.skipped.labels(self._evaluator_label(name), reason)
            online.add_listener(self.online_changed)

    def online_changed(self, key: str, delta: int) -> None:
        """An online evaluator's counter or worker count moved by ``delta`` (see :meth:`watch`)."""
        if key.startswith(SKIPPED_PREFIX) and self.skipped is not None:
            evaluator, reason = key.removeprefix(SKIPPED_PREFIX).rsplit(":", 1)
            self.skipped.labels(self._evaluator_label(evaluator), reason).inc(delta)
            return
        family = self._online_families.get(key)
        if family is None:
            return
        metric, labels = family
        (metric.labels(*labels) if labels else metric).inc(delta)

    def request(self, protocol: str, code: int | str, started: float) -> None:
        self.requests.labels(protocol, str(code)).inc()
        self.request_seconds.labels(protocol).observe(time.perf_counter() - started)

    # --- online evaluation results (an online evaluator's result sink) -------------------------------------

    def record_batch(self, results: Sequence[tuple[str | None, Mapping[str, Any]]], lags: Sequence[float]) -> None:
        """A scored batch: each result (``evaluator``, ``metric``, ``score``, ``label``) with its invocation's agent
        name, and how long after each run ended it was scored. Each series is updated once a batch: in
        multiprocess mode every update writes a shared file (a lock, a pid check, a write), which one at a time
        cost online scoring as much as its metrics did."""
        counted: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
        scores: dict[tuple[str, str, str], list[float]] = {}
        folded = 0
        for agent_name, result in results:
            agent = self._agent_label(agent_name or "unknown")
            folded += agent == OTHER_AGENTS
            metric, evaluator = result["metric"], self._evaluator_label(result.get("evaluator") or "default")
            counted[metric, agent, evaluator, result["label"]] += 1
            if result["score"] is not None:
                scores.setdefault((metric, agent, evaluator), []).append(float(result["score"]))
        for key, n in counted.items():
            self.results.labels(*key).inc(n)
        for labels, values in scores.items():
            observe_all(self.scores.labels(*labels), values)
        if lags:
            observe_all(self.scoring_lag, [max(lag, 0.0) for lag in lags])
        if folded:
            self.folded.inc(folded)

    def _agent_label(self, agent: str) -> str:
        """``agent`` as a label value: agent names come from traffic, so past :data:`MAX_AGENT_LABELS` distinct
        ones a process folds the rest into ``other`` (each series costs every scrape, for ever)."""
        if agent in self._agents:
            return agent
        if len(self._agents) < MAX_AGENT_LABELS:
            self._agents.add(agent)
            return agent
        return OTHER_AGENTS

    def _evaluator_label(self, evaluator: str) -> str:
        """``evaluator`` as a label value, bounded as agent names are (:data:`MAX_EVALUATOR_LABELS`)."""
        if evaluator in self._evaluators:
            return evaluator
        if len(self._evaluators) < MAX_EVALUATOR_LABELS:
            self._evaluators.add(evaluator)
            return evaluator
        return OTHER_AGENTS

    def limit_hit(self, limit: str, n: int) -> None:
        if self.limit_hits is not None:
            self.limit_hits.labels(limit).inc(n)

    def expose(self) -> bytes:
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, self.multiprocess_dir)
        registry.register(_ReadAtScrape(self))
        return generate_latest(registry)


class _ReadAtScrape:
    """Families whose values other parts keep; read on each scrape."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # families vary with what is watched; not checked against the other collectors' names

    def collect(self) -> Iterator[Metric]:
        if self.metrics._limits is not None:
            hits = CounterMetricFamily("toolpath_limit_hits", LIMIT_HITS_HELP, labels=["limit"])
            counts = {**dict.fromkeys(LIMIT_KINDS, 0), **self.metrics._limits()}
            for limit, n in sorted(counts.items()):
                hits.add_metric([limit], n)
            yield hits
        online = self.metrics._online
        if online is None:
            if self.metrics.judge_tokens is None:  # no judge here: none of its tokens spent, shown as 0
                yield _tokens_family({})
            return
        if not self.metrics._online_families:  # else counted as they change (several processes)
            yield from self._online_totals(online)
            yield self._skipped(online)
        from toolpath.store.judge_spend import by_evaluator

        try:
            backlog = online.backlog()
            usage = online.usage()
            spend = by_evaluator(online.store)
        except Exception:  # the store is down: the other families still scrape; readyz says why
            return
        yield from _usage_families(usage)
        yield from spend_families(spend, self.metrics._evaluator_label)
        jobs = GaugeMetricFamily(
            "toolpath_online_backlog", "Online jobs in the store by status (all workers)", labels=["status"]
        )
        for status in UNFINISHED:
            jobs.add_metric([status], backlog.get(status, 0))
        yield jobs

    def _skipped(self, online: Any) -> Metric:
        skipped = CounterMetricFamily("toolpath_online_skipped", SKIPPED_HELP, labels=["evaluator", "reason"])
        counts = {(name, str(reason)): 0 for name in online.units for reason in SkipReason}  # start at 0
        for key, n in online.counters().items():
            if key.startswith(SKIPPED_PREFIX):
                evaluator, reason = key.removeprefix(SKIPPED_PREFIX).rsplit(":", 1)
                counts[evaluator, reason] = n
        folded: collections.Counter[tuple[str, str]] = collections.Counter()
        for (evaluator, reason), n in counts.items():
            folded[self.metrics._evaluator_label(evaluator), reason] += n
        for labels, n in sorted(folded.items()):
            skipped.add_metric(list(labels), n)
        return skipped

    @staticmethod
    def _online_totals(online: Any) -> Iterator[Metric]:
        counters = online.counters()
        for key, (family, description) in ONLINE_COUNTERS.items():
            yield CounterMetricFamily(family, description, value=counters.get(key, 0))
        yield _tokens_family(counters)
        alive, total = online.workers_alive()
        yield GaugeMetricFamily("toolpath_online_workers_alive", WORKERS_ALIVE_HELP, value=alive)
        yield GaugeMetricFamily("toolpath_online_workers", WORKERS_HELP, value=total)


def _usage_families(usage: Mapping[str, Any]) -> Iterator[Metric]:
    """Each evaluator with limits: what it took this clock hour and UTC day, its limits, whether its budget is
    spent (``usage``: an online evaluator's ``usage()``, every process's use, read from the store)."""
    targets = GaugeMetricFamily(
        "toolpath_online_evaluator_targets",
        "Targets an online evaluator took to score this clock hour",
        labels=["evaluator"],
    )
    tokens = GaugeMetricFamily(
        "toolpath_online_evaluator_tokens",
        "Judge tokens an online evaluator spent this clock hour (window=hour) or UTC day (window=day)",
        labels=["evaluator", "window"],
    )
    cost = GaugeMetricFamily(
        "toolpath_online_evaluator_cost",
        "The judge cost an online evaluator with a budget in cost spent this clock hour (window=hour) or UTC day "
        "(window=day), at the model price table's prices; +Inf while a model it called has no price",
        labels=["evaluator", "window"],
    )
    limits = GaugeMetricFamily(
        "toolpath_online_evaluator_limit",
        "An online evaluator's limits: max_per_hour, tokens_per_hour, tokens_per_day, cost_per_hour, cost_per_day",
        labels=["evaluator", "limit"],
    )
    spent = GaugeMetricFamily(
        "toolpath_online_evaluator_budget_spent",
        "1 while an online evaluator's judge budget for the hour or the day is spent (its targets skipped)",
        labels=["evaluator"],
    )
    for name, used in sorted(usage.items()):
        targets.add_metric([name], used.targets)
        tokens.add_metric([name, "hour"], used.tokens)
        tokens.add_metric([name, "day"], used.day_tokens)
        if used.limits.costed:
            cost.add_metric([name, "hour"], used.cost)
            cost.add_metric([name, "day"], used.day_cost)
        for limit in _LIMITS:
            if (value := getattr(used.limits, limit)) is not None:
                limits.add_metric([name, limit], value)
        spent.add_metric([name], int(used.budget_spent))
    yield from (targets, tokens, cost, limits, spent)


def _tokens_family(counters: Mapping[str, int]) -> Metric:
    tokens = CounterMetricFamily("toolpath_judge_tokens", TOKENS_HELP, labels=["direction"])
    for direction in TOKEN_DIRECTIONS:
        tokens.add_metric([direction], counters.get(f"judge_{direction}_tokens", 0))
    return tokens


def observe_all(histogram: Any, values: Sequence[float]) -> None:
    """``histogram.observe(v)`` for each of ``values`` (a histogram without labels, or one series of one), its sum and
    each bucket updated once. prometheus-client has no call for it: this does what ``observe`` does, on the same
    parts (a test checks the two expose the same)."""
    histogram._raise_if_not_observable()
    histogram._sum.inc(sum(values))
    bounds = histogram._upper_bounds
    found = collections.Counter(bisect_left(bounds, v) for v in values if v == v)  # NaN: in the sum alone
    for index, n in found.items():
        histogram._buckets[index].inc(n)
