"""Whole sessions scored online, once they have gone quiet: a :class:`SessionScorer` scores each stored session
with its evaluator's metrics, judged as the recorded sessions ``toolpath eval --from-store`` scores are
(:func:`~toolpath.evaluation.evalsets.case_judging.judge_case`, the conversation built as ADK builds it).

- A metric over a whole conversation (ADK's multi-turn criteria, ``tool_trajectory_avg_score`` …) gives one
  result per session.
- A turn metric gives one result per way its ``aggregate`` names: the mean, the lowest or the last of the
  session's turn scores (``metric:mean`` …).
- With an ADK eval set as the evaluator's ``reference_dataset``, a session is judged as the case whose first user
  text is its first (as online turns find their golden turn: ``match``), by that case's eval set's criteria, as
  ``toolpath eval SET --from-store`` judges it: one result per criterion and the case's verdict (``eval_case``).

Each result also says how many turns the session had and its last turn (what its exported result is parented
to)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import passes
from toolpath.evaluation.evalsets.case_judging import LazyJudge, judge_case
from toolpath.evaluation.evalsets.case_results import CaseResult, CriterionResult
from toolpath.evaluation.evalsets.criteria import Criterion
from toolpath.evaluation.evalsets.files import EvalSet, load_eval_sets
from toolpath.evaluation.evalsets.recorded_cases import Pairing, score_recorded_sessions
from toolpath.evaluation.online.evaluator_specs import Aggregate
from toolpath.evaluation.online.evaluator_units import BatchSpend, EvaluatorUnit
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.evaluation.prompt_match import PromptMatch, prompt_key
from toolpath.judges.messages import JudgeOutcome
from toolpath.model import EvalCase, EvalStatus, Session, agent_span_id
from toolpath.store.job_queue import Job
from toolpath.store.job_status import ResultLabel

__all__ = ["CASE_VERDICT", "ScoredSessions", "SessionScorer", "score_sessions", "warm_up"]

CASE_VERDICT = "eval_case"
"""The result naming the eval case a session was judged as, and its verdict (1 passed, 0 failed)."""
_LABELS = {EvalStatus.PASSED: ResultLabel.PASS, EvalStatus.FAILED: ResultLabel.FAIL}


class SessionScorer:
    """One evaluator of sessions, ready to score them."""

    def __init__(self, unit: EvaluatorUnit, store: Any, match: PromptMatch = PromptMatch.NORMALIZED) -> None:
        spec = unit.spec
        self.unit, self.store = unit, store
        where = f"online: evaluator {spec.name!r}"
        names = {m.name for m in unit.metrics}
        for metric in unit.metrics:
            if not metric.case_level and metric.name not in spec.aggregate:
                raise ConfigError(
                    f"{where}: {metric.name} scores single turns; say how a session's turns make one score: "
                    f'aggregate = {{ {metric.name} = "mean" }} ("mean", "min" or "last", or a list of them)'
                )
        stray = sorted(set(spec.aggregate) - names)
        if stray:
            raise ConfigError(f"{where}: aggregate names {', '.join(stray)}, which 'metrics' does not")
        whole = sorted(m.name for m in unit.metrics if m.case_level and m.name in spec.aggregate)
        if whole:
            raise ConfigError(f"{where}: aggregate: {', '.join(whole)} already scores the session as a whole")
        self.plan = {
            m.name: Criterion(m.name, _threshold(unit.rules[m.name]), m, {}) for m in unit.metrics
        }  # fmt: skip
        self.key = prompt_key(match)
        self.cases: dict[str, tuple[EvalSet, EvalCase]] = {}
        """The reference eval set's cases by their first user text (as ``match`` compares it)."""
        if spec.reference_dataset is not None:
            for eval_set in load_eval_sets(spec.reference_dataset):
                for case in eval_set.cases:
                    if case.invocations and isinstance(case.invocations[0].prompt, str):
                        self.cases.setdefault(self.key(case.invocations[0].prompt), (eval_set, case))

    @property
    def name(self) -> str:
        return self.unit.name

    def score(self, sessions: Sequence[Session]) -> tuple[list[list[dict[str, Any]]], BatchSpend]:
        """Each session's results, and what their scoring spent of the judge."""
        judge, spent = self.unit.batch_judge()
        judges = LazyJudge(judge, self.store)
        table: list[list[dict[str, Any]]] = []
        for session in sessions:
            before = len(spent.calls)  # sessions are scored one after another: the calls since are this one's
            results = self._metrics(session, judges)
            if self.cases:
                results += self._case(session, judge)
            mine = spent.calls[before:]
            if any(c.outcome is JudgeOutcome.OVER_BUDGET for c in mine):
                spent.over_budget.add(len(table))
            last = session.invocations[-1].invocation_id if session.invocations else None
            table.append(
                [{**r, "turns": len(session.invocations), "last_invocation_id": last,
                  "judge_usage": spent.usage_of(c for c in mine if _for(c.tag, r["metric"]))} for r in results]
            )  # fmt: skip
        return table, spent.counted(self.unit, judge)

    def _metrics(self, session: Session, judges: LazyJudge) -> list[dict[str, Any]]:
        """The evaluator's own metrics over the session: as a case of its turns, with no expectations."""
        if not self.plan:
            return []
        case = EvalCase(eval_set_id="online", eval_id=session.session_id, invocations=[])
        outcomes = [
            AgentOutcome(inv.response, inv.tool_calls, inv.latency_seconds, inv.failure, inv.error, inv)
            for inv in session.invocations
        ]
        judged = judge_case(case, self.plan, [outcomes], judges, sessions=[session.session_id], efficiency=[[]])
        out = []
        for name, criterion in judged.metrics.items():
            ways = self.unit.spec.aggregate.get(name)
            if not ways:
                out.append(self._result(name, criterion.score, criterion.explanation, self.unit.rules[name]))
                continue
            for way in ways:
                score = _aggregate(way, criterion)
                why = criterion.explanation if score is None else None
                out.append(self._result(f"{name}:{way}", score, why or _unscored(score), self.unit.rules[name]))
        return out

    def _case(self, session: Session, judge: Any) -> list[dict[str, Any]]:
        """The session judged as the reference eval set's case that begins with its first user text."""
        first = session.invocations[0].prompt if session.invocations else None
        found = self.cases.get(self.key(first)) if isinstance(first, str) else None
        if found is None:
            why = "no case of the reference eval set begins with this session's first user text"
            return [_row(CASE_VERDICT, None, ResultLabel.ERROR, why)]
        eval_set, case = found
        pairing = Pairing(eval_set, case, [session], "user text")
        played, turns = len(session.invocations), len(case.invocations)
        if played != turns and not (played < turns and session.invocations[-1].failure):
            pairing.sessions, pairing.reason = [], f"the case has {turns} turn(s); the session has {played}"
        scored = score_recorded_sessions([pairing], judge=judge, store=self.store)
        (result,) = scored.result.cases
        return [*(_criterion_row(name, c) for name, c in result.metrics.items()), _verdict(result)]

    def _result(
        self, name: str, score: float | None, explanation: str | None, rule: Mapping[str, Any]
    ) -> dict[str, Any]:
        verdict = passes(score, **rule)
        label = ResultLabel.SCORED if verdict is None else ResultLabel.PASS if verdict else ResultLabel.FAIL
        return _row(name, score, ResultLabel.ERROR if score is None else label, explanation)


def _row(metric: str, score: float | None, label: ResultLabel, explanation: str | None) -> dict[str, Any]:
    return {"metric": metric, "score": score, "label": label, "explanation": explanation}


def _criterion_row(name: str, criterion: CriterionResult) -> dict[str, Any]:
    label = ResultLabel.ERROR if criterion.score is None else _LABELS.get(criterion.status, ResultLabel.ERROR)
    return _row(name, criterion.score, label, criterion.explanation)


def _verdict(result: CaseResult) -> dict[str, Any]:
    where = f"{result.eval_set_id}/{result.eval_id}: {result.status.value}"
    if result.status is EvalStatus.NOT_EVALUATED:
        reasons = {c.explanation for c in result.metrics.values() if c.explanation}
        return _row(CASE_VERDICT, None, ResultLabel.ERROR, "; ".join([where, *sorted(reasons)]))
    score = 1.0 if result.status is EvalStatus.PASSED else 0.0
    return _row(CASE_VERDICT, score, _LABELS[result.status], where + (f" ({result.error})" if result.error else ""))


def _threshold(rule: Mapping[str, Any]) -> float:
    threshold = rule.get("threshold")
    return float(threshold) if isinstance(threshold, int | float) else 0.0


def _aggregate(way: Aggregate, criterion: CriterionResult) -> float | None:
    scores = criterion.per_invocation
    if way is Aggregate.LAST:
        return scores[-1] if scores else None
    known = [s for s in scores if s is not None]
    if not known:
        return None
    return statistics.mean(known) if way is Aggregate.MEAN else min(known)


def _unscored(score: float | None) -> str | None:
    return "no turn of the session was scored" if score is None else None


@dataclass
class ScoredSessions:
    """A batch of sessions' results (a session no longer stored: none), and what each evaluator's judge spent."""

    results: dict[Job, list[dict[str, Any]]] = field(default_factory=dict)
    spent: dict[str, BatchSpend] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    over_budget: set[Job] = field(default_factory=set)
    """Sessions not scored: their evaluator's judge budget had no room for a call their scoring made."""

    def agent(self, job: Job) -> str | None:
        """The agent of the session's last turn."""
        session = self.sessions.get(job.invocation_id)
        return session.invocations[-1].agent_name if session and session.invocations else None

    def parent(self, job: Job) -> tuple[str | None, str, str | None]:
        """The trace and span of the session's last turn's agent (what its results are parented to), and the
        agent."""
        session = self.sessions.get(job.invocation_id)
        if session is None or not session.invocations:
            return None, "0" * 16, None
        last = session.invocations[-1]
        return last.trace_id, agent_span_id(last.invocation_id, last.trace_id) or "0" * 16, last.agent_name

    def lags(self, jobs: Sequence[Job]) -> list[float]:
        """How long after each session's last turn ended its results were stored (seconds)."""
        now, out = time.time(), []
        for job in jobs:
            session = self.sessions.get(job.invocation_id)
            last = session.invocations[-1] if session and session.invocations else None
            if last is not None and last.started_at is not None:
                out.append(now - last.started_at.timestamp() - (last.latency_seconds or 0.0))
        return out


def score_sessions(store: Any, scorers: Mapping[str, SessionScorer], jobs: Sequence[Job]) -> ScoredSessions:
    """Read the sessions of ``jobs`` as stored now and score each with its evaluator's scorer."""
    out = ScoredSessions()
    for session_id in dict.fromkeys(job.invocation_id for job in jobs):
        session = store.get_session(session_id)
        if session is not None and session.invocations:
            out.sessions[session_id] = session
    by_scorer: dict[str, list[Job]] = {}
    for job in jobs:
        by_scorer.setdefault(job.evaluator, []).append(job)
    for name, mine in by_scorer.items():
        found = [job for job in mine if job.invocation_id in out.sessions]
        table, out.spent[name] = scorers[name].score([out.sessions[job.invocation_id] for job in found])
        out.results.update(zip(found, table, strict=True))
        out.over_budget.update(found[i] for i in out.spent[name].over_budget)
        gone: dict[Job, list[dict[str, Any]]] = {}  # no longer stored: closed, nothing to say
        gone.update((job, []) for job in mine if job.invocation_id not in out.sessions)
        out.results.update(gone)
    return out


def _for(tag: tuple[int, str] | None, metric: str) -> bool:
    """Whether a judge request tagged ``tag`` was made for the session result ``metric`` (an aggregate
    ``metric:way`` is its turn metric's; the case's verdict, every criterion's)."""
    if tag is None:
        return False
    return metric == CASE_VERDICT or tag[1] == metric.rsplit(":", 1)[0] or tag[1] == metric


def warm_up() -> None:
    """Load what judging a conversation loads on first use — google-adk's evaluation modules, when installed
    (seconds of imports) — so that the first quiet session is not late by them: run off the workers' threads as
    online scoring starts."""
    import importlib

    with contextlib.suppress(ImportError):
        importlib.import_module("google.adk.evaluation.metric_evaluator_registry")
