"""The online evaluator: worker threads that claim the store's online jobs, score each invocation (its row, plus
the golden reference when its prompt is found), store the results with the job, and tell them to the sinks and
the OTLP exporter."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluation.online.evalset_runs import OnlineRun
from toolpath.evaluation.online.evaluator_units import BatchSpend, EvaluatorUnit, spending
from toolpath.evaluation.online.references import EvalSetReferences, References, check_metrics, is_eval_set_path
from toolpath.evaluation.online.selection import TargetKind
from toolpath.evaluation.online.session_scoring import SessionScorer, score_sessions, warm_up
from toolpath.evaluation.online.settings import FLAT_EVALUATOR, OnlineConfig, default_batch
from toolpath.evaluation.prompt_match import prompt_key
from toolpath.judges.client import settings_from
from toolpath.metrics.base import RESPONSE_NOTE, Metric
from toolpath.metrics.rows import row_ids, stored_row, with_parsed_trajectories
from toolpath.model import agent_span_id
from toolpath.redact import Redactor
from toolpath.store.job_queue import Job, JobQueue
from toolpath.store.job_status import UNFINISHED, JobStatus, SkipReason
from toolpath.store.online_usage import EvaluatorUsage
from toolpath.store.reads import StoredTurn
from toolpath.store.session_queue import SessionQueue
from toolpath.store.store import Store

__all__ = ["OnlineEvaluator", "OnlineStats", "ResultSink"]

logger = logging.getLogger("toolpath.online")


class ResultSink(Protocol):
    def record_batch(self, results: Sequence[tuple[str | None, Mapping[str, Any]]], lags: Sequence[float]) -> None:
        """A scored batch: each result (``evaluator``, ``metric``, ``score``, ``label``, ``explanation``) with its
        invocation's agent name, and how long after each run ended it was scored (seconds)."""


@dataclass
class OnlineStats:
    scored: int = 0
    results: int = 0
    errors: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class OnlineEvaluator:
    """Workers that score the store's online jobs; ``start()`` / ``stop()``."""

    def __init__(
        self,
        store: Store,
        config: OnlineConfig | str | Path | Mapping[str, Any],
        *,
        name: str | None = None,
        redactor: Redactor | bool | None = True,
        run: tuple[str, int] | None = None,
    ):
        """``redactor``: the rules the store's values went through (``True``: the defaults, ``False`` or ``None``:
        none); golden references are redacted by them, with the store's pseudonym key, before they are compared.
        ``run``: with an eval set as ``reference_dataset``, the id and start (ns) of the evaluation run its cases
        go to, when another process made it (``collect --workers``); else this evaluator's own
        (:mod:`toolpath.evaluation.online.evalset_runs`)."""
        self.store = store
        self.config = OnlineConfig.load(config)
        rules = Redactor.build() if redactor is True else redactor or None
        golden: EvalSetReferences | None = None
        extra: list[Metric] = []
        turns = [spec for spec in self.config.specs if spec.target is TargetKind.TURN]
        if is_eval_set_path(self.config.reference_dataset) and turns:  # its criteria: metrics passing at thresholds
            key = prompt_key(self.config.match)  # (a flat config's: its one evaluator's)
            golden = EvalSetReferences(str(self.config.reference_dataset), key, rules, store)
            check_metrics([resolve_metric(m) for m in self.config.specs[0].metrics], golden.metrics)
            extra = golden.metrics
        # judge metrics without credentials: refuse to start, rather than score nothing batch after batch
        settings = settings_from(self.config.judge)
        thresholds = {**(golden.thresholds if golden else {}), **self.config.thresholds}
        self.units = {
            spec.name: EvaluatorUnit.build(spec, settings, thresholds, store, extra if spec in turns else ())
            for spec in self.config.specs
        }
        """The evaluators the config declares, by name, ready to score."""
        self.scorers = {
            spec.name: SessionScorer(self.units[spec.name], store, self.config.match)
            for spec in self.config.specs
            if spec.target is TargetKind.SESSION
        }
        """Its evaluators of whole sessions, by name."""
        turns_judged = any(u.judge is not None for name, u in self.units.items() if name not in self.scorers)
        self.batch = self.config.batch_size or default_batch(turns_judged)
        """Turn jobs a worker claims at once: the config's ``batch_size``, or by default more when no judge scores
        them."""
        judged = any(scorer.unit.judge is not None for scorer in self.scorers.values())
        self.session_batch = 1 if judged else self.batch
        """Quiet sessions a worker claims at once: one at a time when a judge scores them (a session judged after
        the others of its batch would wait for them, and those falling due meanwhile for the batch), else a
        batch."""
        unknown = sorted(set(self.config.thresholds) - {m for u in self.units.values() for m in u.rules})
        if unknown:
            raise ConfigError(f"online: thresholds for {', '.join(unknown)}, which 'metrics' does not name")
        dataset = None if is_eval_set_path(self.config.reference_dataset) else self.config.reference_dataset
        self.references: References | EvalSetReferences = golden or References(
            dataset, self.config.match, rules, store
        )  # (an eval set of an evaluator of sessions: its cases, whole)
        self.run: OnlineRun | None = None
        """The evaluation run an eval set's scored cases are kept in (``None``: no eval set)."""
        if golden is not None:
            run_id, started_ns = run if run is not None else (None, None)
            source = str(self.config.reference_dataset)
            (unit,) = self.units.values()
            self.run = OnlineRun(golden, unit.rules, source=source, run_id=run_id, started_ns=started_ns)
        self.queue = JobQueue(
            store,
            evaluators=[unit.queued() for name, unit in self.units.items() if name not in self.scorers],
            max_backlog=self.config.max_backlog,
            shed=self.config.shed,
        )
        self.sessions = SessionQueue(store, evaluators=[self.units[name].queued() for name in self.scorers])
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.stats = OnlineStats()
        self.exporter = self._exporter()
        self.judge_tracer: Any = None
        """The judge's requests traced to ``judge_traces`` (``None``: not asked for)."""
        if self.config.judge_traces:  # the OTLP exporter loads only when asked for
            from toolpath.evaluation.online.judge_traces import JudgeTracer

            self.judge_tracer = JudgeTracer(self.config.judge_traces)
        self.sinks: list[ResultSink] = []
        """Told every stored result and each invocation's scoring lag (the collector's Prometheus metrics)."""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str, int], None]] = []
        self._published: dict[str, int] = {}
        self._running = 0
        self._publishing = threading.Lock()
        self.warm = threading.Event()
        """Set once what judging loads on first use is loaded (:func:`warm_up`): until then a collector is not
        ready (``/readyz``), so that traffic routed by readiness does not meet a cold judge."""
        self.turns: Callable[[], AbstractContextManager[Any]] = nullcontext
        """A turn, held while a batch is scored and written (a judge's calls excepted:
        they wait on the network): a collector gives its ingest turns here (:meth:`Turns.yielding
        <toolpath.collector.turns.Turns.yielding>`), so that its process scores in the gaps between exports
        instead of contending with them for the interpreter (the thread holding the store's write lock would wait
        for it longest)."""

    def _exporter(self) -> Any:
        endpoint = self.config.otlp_endpoint
        if endpoint is None and not any(
            os.environ.get(v) for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        ):
            return None
        from toolpath.evaluation.online.result_export import ResultExporter

        return ResultExporter(endpoint)

    def _enqueue(self, conn: Any, invocations: Sequence[Any]) -> None:
        """In the transaction that stores ``invocations``: their turns' jobs, and their sessions' (due again)."""
        self.queue.enqueue(conn, invocations)
        if self.scorers:
            self.sessions.enqueue(conn, invocations)

    def start(self) -> OnlineEvaluator:
        self.store.on_invocations = self._enqueue
        if self.scorers or self.run is not None:  # judging a conversation or a case loads google-adk's evaluation
            threading.Thread(target=self._warm_up, name="toolpath-online-warm-up", daemon=True).start()
        else:
            self.warm.set()
        for index in range(self.config.workers):
            thread = threading.Thread(target=self._work, args=(f"{self.name}/{index}",), daemon=True)
            thread.name = f"toolpath-online-{index}"
            with self._lock:
                self._threads.append(thread)
                self._running += 1  # until its loop ends
            thread.start()
        return self

    def _warm_up(self) -> None:
        try:
            warm_up()
        finally:
            self.warm.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop claiming and wait for the batches in hand; unclaimed jobs stay for the next worker."""
        if self.store.on_invocations == self._enqueue:
            self.store.on_invocations = None
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self.publish()
        if self.exporter is not None:
            self.exporter.shutdown()
        if self.judge_tracer is not None:
            self.judge_tracer.shutdown()

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until no job is waiting or claimed (for tests and shutdown); True if that happened in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts = self.queue.counts()
            if not any(counts.get(status) for status in UNFINISHED) and not self.sessions.has_work(0.0):
                return True
            time.sleep(0.05)
        return False

    def add_sink(self, sink: ResultSink) -> None:
        self.sinks.append(sink)

    def add_listener(self, listener: Callable[[str, int], None]) -> None:
        """Tell ``listener(key, delta)`` how :meth:`counters` and :meth:`workers_alive` (keys ``workers_alive``
        and ``workers``) change: at once what they are now, then each change as the workers see it (after every
        claim and batch, at least every ``poll_seconds`` while they run), so processes that serve one port can
        add up their values as they go (the collector's ``/metrics`` with ``--workers``)."""
        with self._publishing:
            for key, value in self._published.items():
                if value:
                    listener(key, value)
            self._listeners.append(listener)
        self.publish()

    def publish(self) -> None:
        """Tell the listeners what changed since they were last told."""
        if not self._listeners:
            return
        with self._publishing:  # one snapshot after another: a delta is never told twice, nor backwards
            alive, started = self.workers_alive()
            now = {**self.counters(), "workers_alive": alive, "workers": started}
            for key, value in now.items():
                delta = value - self._published.get(key, 0)
                if delta:
                    self._published[key] = value
                    for listener in self._listeners:
                        listener(key, delta)

    def counters(self) -> dict[str, int]:
        """This process's totals: jobs queued / claimed / done / failed / shed, scoring errors, judge usage (every
        evaluator's), and targets skipped by evaluator and reason (keys ``skipped:{evaluator}:{reason}``)."""
        q, s = self.queue.stats, self.sessions.stats
        with self._lock:
            totals = {"jobs_queued": q.enqueued + s.enqueued, "jobs_claimed": q.claimed + s.claimed,
                      "jobs_done": q.completed + s.completed, "jobs_failed": q.failed + s.failed,
                      "jobs_shed": q.shed, "scoring_errors": self.stats.errors}  # fmt: skip
        judged = [unit.judge_usage() for unit in self.units.values() if unit.judge is not None]
        if judged:
            totals |= {
                f"judge_{key}": sum(getattr(u, key) for u in judged)
                for key in ("requests", "cached", "errors", "retries", "input_tokens", "output_tokens")
            }
        totals |= {f"skipped:{name}:{reason}": n for (name, reason), n in self.skipped().items()}
        return totals

    def skipped(self) -> dict[tuple[str, SkipReason], int]:
        """Targets of this process's evaluators not scored, by evaluator and reason: outside the sample (as this
        process stored them), over the rate or the budget (as its workers claimed them)."""
        both = collections.Counter(self.queue.skipped_here())
        both.update(self.sessions.skipped_here())
        return dict(both)

    def workers_alive(self) -> tuple[int, int]:
        """Worker threads running, and started."""
        with self._lock:
            return self._running, len(self._threads)

    def described(self) -> str:
        """What it scores, for the collector's first lines: a flat config's metrics, else each evaluator's name,
        version and metrics; an evaluator of sessions says so, and after how long a quiet session is scored."""

        def what(unit: EvaluatorUnit) -> str:
            names = [m.name for m in unit.metrics]
            if unit.name in self.scorers:
                reference = unit.spec.reference_dataset
                names += [f"the cases of {reference}"] if reference else []
                return f"whole sessions once quiet for {unit.spec.idle_seconds:g} s: {', '.join(names)}"
            return ", ".join(names)

        if len(self.units) == 1 and FLAT_EVALUATOR[0] in self.units:
            return what(self.units[FLAT_EVALUATOR[0]])
        return "; ".join(f"{u.name} v{u.spec.version} ({what(u)})" for u in self.units.values())

    def metric_names(self) -> list[str]:
        """Every evaluator's metrics, each name once."""
        return list(dict.fromkeys(m.name for u in self.units.values() for m in u.metrics))

    def usage(self) -> dict[str, EvaluatorUsage]:
        """Each evaluator with limits: its targets and judge tokens this hour and day, every process's, beside its
        limits (the budget's state: spent or not)."""
        return {**self.queue.usage(), **self.sessions.usage()}

    def backlog(self) -> dict[JobStatus, int]:
        """Jobs in the store by status (every worker's, not only this process's)."""
        return self.queue.counts()

    def _work(self, worker: str) -> None:
        jobs: list[Job] = []  # claimed: with the last batch's results, or on their own when there was none
        try:
            while not self._stop.is_set():
                self.publish()
                if not jobs:
                    closing: list[Job] = []
                    try:
                        if self.queue.has_work(self.config.lease_seconds):  # an empty queue is polled by reads
                            jobs = self.queue.claim(worker, self.batch, self.config.lease_seconds)
                        if not jobs and self.sessions.has_work(self.config.lease_seconds):  # quiet sessions
                            closing = self.sessions.claim(worker, self.session_batch, self.config.lease_seconds)
                    except Exception:
                        logger.warning("toolpath: online worker could not claim jobs", exc_info=True)
                    if closing:
                        self._close_sessions(worker, closing)
                        continue
                    if not jobs:
                        self._stop.wait(self.config.poll_seconds)
                        continue
                try:
                    jobs = self._score(worker, jobs)
                except Exception:  # the jobs stay claimed; their lease runs out and they are tried again
                    with self._lock:
                        self.stats.errors += 1
                    logger.exception("toolpath: online scoring failed for %d job(s)", len(jobs))
                    jobs = []
                if not jobs:  # nothing waited as the batch closed: jobs gather for a poll, the next batch is fuller
                    self._stop.wait(self.config.poll_seconds)
        finally:
            if jobs:  # claimed with the last results, as the worker was told to stop: waiting again at once
                with contextlib.suppress(Exception):
                    self.queue.release(worker, jobs)
            with self._lock:
                self._running -= 1
            self.publish()

    def _score(self, worker: str, jobs: list[Job]) -> list[Job]:
        """Score the claimed ``jobs`` and store their results; returns the next batch, claimed with them."""
        by_unit: dict[str, list[Job]] = {}
        for job in jobs:
            by_unit.setdefault(job.evaluator, []).append(job)
        judged = any(self.units[name].judge is not None for name in by_unit)
        results: dict[Job, list[dict[str, Any]]] = {}
        spent: dict[str, BatchSpend] = {}
        over: set[Job] = set()  # a call of their scoring was over the budget: skipped
        with ExitStack() as held:
            if not judged:  # reading and computing: CPU work, in turn with ingest
                held.enter_context(self.turns())
            turns = {turn.invocation_id: turn for turn in self.store.turns_by_id(list({j.invocation_id for j in jobs}))}
            for name, mine in by_unit.items():
                found = [job for job in mine if job.invocation_id in turns]
                table, spent[name] = self.units[name].score(self.row(turns[job.invocation_id]) for job in found)
                results.update(zip(found, table, strict=True))
                over.update(found[i] for i in spent[name].over_budget)
            if judged:  # a judge waited on the network without the turns; the write takes them
                held.enter_context(self.turns())
            more = 0 if self._stop.is_set() else self.batch
            also = None
            if self.run is not None:
                by_turn = {job.invocation_id: rows for job, rows in results.items() if job not in over}
                also = self.run.writer(self.store, [turns[i] for i in by_turn], by_turn)
            # one transaction for the batch's results (and eval-set cases) and the next batch's claim
            closed, claimed = self.queue.complete_and_claim(
                worker, results, more, self.config.lease_seconds, also=also, over_budget=over, **spending(spent)
            )
        self._trace_judge(spent)
        # a job another worker took over is not closed here: its results count, not ours
        done = [job for job in results if job in closed]
        with self._lock:
            self.stats.scored += len(done)
            self.stats.results += sum(len(results[job]) for job in done)
        if self.sinks:
            now = time.time()
            batch = [
                (turns[job.invocation_id].agent_name, {**r, "evaluator": job.evaluator})
                for job in done
                for r in results[job]
            ]
            ended = {job.invocation_id for job in done}
            lags = [
                now - turn.started_at.timestamp() - (turn.latency_seconds or 0.0)
                for i, turn in turns.items()
                if i in ended and turn.started_at
            ]
            for sink in self.sinks:
                sink.record_batch(batch, lags)
        if self.exporter is None:
            return claimed
        for job in done:
            turn, spec = turns[job.invocation_id], self.units[job.evaluator].spec
            for r in results[job]:
                self.exporter.record(
                    trace_id=turn.trace_id,
                    span_id=agent_span_id(turn.invocation_id, turn.trace_id) or turn.invocation_id,
                    agent_name=turn.agent_name,
                    metric=r["metric"],
                    score=r["score"],
                    label=r["label"],
                    explanation=r["explanation"],
                    evaluator=spec.name,
                    evaluator_version=spec.version,
                    target=spec.target,
                    judge_usage=r.get("judge_usage"),
                )
        return claimed

    def _close_sessions(self, worker: str, jobs: list[Job]) -> None:
        """Score the quiet sessions claimed, store their results, tell the sinks and the exporter; a failure
        leaves them claimed, to be tried again once the lease runs out."""
        try:
            with self.turns() if not any(self.scorers[j.evaluator].unit.judge for j in jobs) else nullcontext():
                scored = score_sessions(self.store, self.scorers, jobs)
            with self.turns():
                closed, _ = self.sessions.complete_and_claim(
                    worker, scored.results, 0, 0.0, over_budget=scored.over_budget, **spending(scored.spent)
                )
        except Exception:
            with self._lock:
                self.stats.errors += 1
            logger.exception("toolpath: online scoring failed for %d session(s)", len(jobs))
            return
        self._trace_judge(scored.spent)
        done = [job for job in scored.results if job in closed]
        with self._lock:
            self.stats.scored += len(done)
            self.stats.results += sum(len(scored.results[job]) for job in done)
        if self.sinks:
            batch = [
                (scored.agent(job), {**r, "evaluator": job.evaluator}) for job in done for r in scored.results[job]
            ]
            for sink in self.sinks:
                sink.record_batch(batch, scored.lags(done))
        if self.exporter is not None:
            for job in done:
                spec, (trace_id, span_id, agent) = self.units[job.evaluator].spec, scored.parent(job)
                for r in scored.results[job]:
                    self.exporter.record(
                        trace_id=trace_id, span_id=span_id, agent_name=agent, metric=r["metric"], score=r["score"],
                        label=r["label"], explanation=r["explanation"], evaluator=spec.name,
                        evaluator_version=spec.version, target=spec.target, judge_usage=r.get("judge_usage"),
                    )  # fmt: skip

    def _trace_judge(self, spent: Mapping[str, BatchSpend]) -> None:
        """Each evaluator's judge requests of a batch, to the judge's own traces (when asked for)."""
        if self.judge_tracer is not None:
            for name, spend in spent.items():
                self.judge_tracer.record(name, self.units[name].spec.version, spend.calls)

    def row(self, turn: StoredTurn) -> tuple[dict[str, Any], Mapping[str, Any]]:
        """The dataset row a stored invocation is scored as (what it did, plus the golden reference when found),
        and the row as metrics read it (its trajectories parsed)."""
        row, predicted = stored_row(
            row_ids(turn),
            prompt=turn.prompt,
            response=turn.response,
            calls=turn.calls,
            latency_in_seconds=turn.latency_seconds,
            failure=turn.failure,
            intermediate_responses=turn.intermediate_responses,
            calls_dropped=turn.calls_dropped,
        )
        if turn.response_note:  # the response metrics give this reason instead of a score
            row[RESPONSE_NOTE] = turn.response_note
        golden = self.references.find(turn.prompt)
        if golden is not None:
            for key, value in golden.items():
                if key not in ("prompt", "response", "predicted_trajectory"):
                    row[key] = value
        return row, with_parsed_trajectories(row, predicted)
