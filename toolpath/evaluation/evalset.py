"""Run ADK eval sets against an agent and judge each case by its criteria (``test_config.json``).

Each case's conversation is replayed turn by turn in one session (a fresh session per run), traced like
any agent run, and scored per criterion as ADK scores it. In each run, each invocation gets a score and a
status (PASSED when the score reaches the threshold, FAILED below it, NOT_EVALUATED without a score) and the
criterion gets the evaluator's mean over the invocations (ADK's ``EvalCaseResult``). Over the runs, a
criterion's score is the mean of every scored invocation of every run, and it passes when that reaches the
threshold (ADK's ``AgentEvaluator`` with ``num_runs``). A case fails when any criterion failed, passes when
one passed and none failed, and is NOT_EVALUATED when none could be scored — as a case with no invocations.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.datasets.adk import EvalSet
from toolpath.errors import ConfigError, MetricError
from toolpath.evaluation.catalog import criterion_metric
from toolpath.evaluation.inference import AgentOutcome, outcome_row, run_agent
from toolpath.evaluation.scoring import judge_rows, score_row, summarize
from toolpath.evaluation.targets import describe_target
from toolpath.evaluators.judge.client import Judge, settings_from
from toolpath.evaluators.judge.vertex import JudgeMetric
from toolpath.evaluators.metrics.registry import Metric, invocation_mean
from toolpath.evaluators.metrics.rows import with_parsed_trajectories
from toolpath.model import EvalCase, MetricResult, Trajectory
from toolpath.store.store import Store

PASSED, FAILED, NOT_EVALUATED = "PASSED", "FAILED", "NOT_EVALUATED"


def eval_status(score: float | None, threshold: float) -> str:
    """ADK's status of a score: NOT_EVALUATED without one, PASSED when it reaches the threshold, else FAILED."""
    if score is None:
        return NOT_EVALUATED
    return PASSED if score >= threshold else FAILED


@dataclass
class RunResult:
    """One criterion in one run of a case, as ADK's ``EvalCaseResult`` records it."""

    score: float | None
    """The evaluator's overall score: the mean over the run's invocations."""
    status: str
    per_invocation: list[float | None]
    per_invocation_status: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "status": self.status,
            "per_invocation": self.per_invocation,
            "per_invocation_status": self.per_invocation_status,
        }


@dataclass
class CriterionResult:
    score: float | None
    """The mean of every scored invocation over every run (ADK's ``AgentEvaluator``)."""
    threshold: float
    status: str
    per_invocation: list[float | None]
    """Each invocation's score, averaged over the runs."""
    explanation: str | None = None
    per_invocation_status: list[str] = field(default_factory=list)
    """Each invocation's status: of its score in a single run (as ADK records it), of its mean over several."""
    runs: list[RunResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "threshold": self.threshold,
            "status": self.status,
            "per_invocation": self.per_invocation,
            "per_invocation_status": self.per_invocation_status,
            "explanation": self.explanation,
            "runs": [run.to_dict() for run in self.runs],
        }


@dataclass
class CaseResult:
    eval_set_id: str
    eval_id: str
    status: str
    metrics: dict[str, CriterionResult]
    sessions: list[str] = field(default_factory=list)
    """The session id of each run, to find the traced invocations in the store."""
    turns: list[list[dict[str, Any]]] = field(default_factory=list)
    """Per run, per turn: prompt, response, predicted and reference trajectories."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_set_id": self.eval_set_id,
            "eval_id": self.eval_id,
            "status": self.status,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "sessions": self.sessions,
        }


@dataclass
class EvalSetResult:
    cases: list[CaseResult]
    summary_metrics: dict[str, Any]
    metrics_table: list[dict[str, Any]]
    metric_names: list[str]
    run_id: str

    @property
    def passed(self) -> bool:
        return all(case.status != FAILED for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary_metrics": self.summary_metrics,
            "metrics_table": self.metrics_table,
            "eval_cases": [case.to_dict() for case in self.cases],
        }


def evaluate_eval_sets(
    eval_sets: Sequence[EvalSet],
    agent: Any,
    *,
    runs: int = 1,
    criteria: dict[str, Any] | None = None,
    timeout: float = 30.0,
    on_case: Callable[[CaseResult], None] | None = None,
    store: Any = None,
    judge: Judge | None = None,
) -> EvalSetResult:
    """Run every case of ``eval_sets`` against ``agent`` ``runs`` times and judge it.

    ``criteria`` overrides each eval set's own (from its ``test_config.json`` or the defaults). With
    ``store``, the run and each case's result are saved there. Judge criteria (``final_response_match_v2``…)
    ask ``judge`` (by default one configured from the environment, caching replies in the store).
    """
    started_ns = time.time_ns()
    if runs < 1:
        raise ConfigError(f"runs must be at least 1, got {runs}")
    run_id = uuid.uuid4().hex[:12]
    cases: list[CaseResult] = []
    judges = _LazyJudge(judge, store)
    for eval_set in eval_sets:
        for case in eval_set.cases:
            case_result = _run_case(case, agent, criteria or eval_set.criteria, runs, run_id, timeout, judges)
            cases.append(case_result)
            if on_case is not None:
                on_case(case_result)
    names = sorted({name for case in cases for name in case.metrics})
    table = [
        {
            "eval_set_id": case.eval_set_id,
            "eval_id": case.eval_id,
            "status": case.status,
            **{f"{n}/score": case.metrics[n].score for n in case.metrics},
            **{f"{n}/explanation": case.metrics[n].explanation for n in case.metrics},
        }
        for case in cases
    ]
    result = EvalSetResult(cases, summarize(table, names), table, names, run_id)
    if store is not None:
        save_evalset_run(
            store,
            result,
            dataset=", ".join(str(s.path or s.eval_set_id) for s in eval_sets),
            agent=describe_target(agent),
            criteria=criteria if criteria is not None else {str(s.path): s.criteria for s in eval_sets},
            started_ns=started_ns,
        )
    return result


class _LazyJudge:
    """The judge of a run, made on first use (runs without judge criteria need no credentials)."""

    def __init__(self, judge: Judge | None, store: Any) -> None:
        self._judge, self._store = judge, store

    def get(self) -> Judge:
        if self._judge is None:
            self._judge = Judge(settings_from(None), cache=self._store)
        return self._judge


def _run_case(
    case: EvalCase, agent: Any, criteria: dict[str, Any], runs: int, run_id: str, timeout: float, judges: _LazyJudge
) -> CaseResult:
    per_run: list[list[AgentOutcome]] = []
    sessions = []
    for run in range(runs):
        session_id = f"eval-{run_id}-{case.eval_set_id}-{case.eval_id}-{run}"
        sessions.append(session_id)
        per_run.append(
            [run_agent(agent, inv.prompt, session_id=session_id, timeout=timeout) for inv in case.invocations]
        )
    return _judge_case(case, per_run, criteria, judges, sessions)


def score_case(
    case: EvalCase,
    per_run: Sequence[Sequence[AgentOutcome]],
    criteria: Mapping[str, Any],
    *,
    judge: Judge | None = None,
    store: Any = None,
) -> CaseResult:
    """Judge one case from what its agent did: per run, one :class:`AgentOutcome` per invocation of the case.
    This is how :func:`evaluate_eval_sets` judges each case after running the agent."""
    for run, outcomes in enumerate(per_run):
        if len(outcomes) != len(case.invocations):
            count = len(case.invocations)
            raise ConfigError(f"{case.eval_id}: run {run + 1} has {len(outcomes)} outcome(s) for {count} invocation(s)")
    return _judge_case(case, per_run, dict(criteria), _LazyJudge(judge, store), [])


def _judge_case(
    case: EvalCase,
    per_run: Sequence[Sequence[AgentOutcome]],
    criteria: dict[str, Any],
    judges: _LazyJudge,
    sessions: list[str],
) -> CaseResult:
    metrics = {name: _criterion(name, spec, case, per_run, judges) for name, spec in criteria.items()}
    statuses = {m.status for m in metrics.values()}
    status = FAILED if FAILED in statuses else PASSED if PASSED in statuses else NOT_EVALUATED
    turns = [
        [
            {
                "prompt": inv.prompt,
                "response": outcome.response,
                "reference": inv.reference,
                "predicted_trajectory": [c.to_item() for c in outcome.tool_calls],
                "reference_trajectory": [c.to_vertex() for c in inv.reference_trajectory],
                "failure": outcome.failure,
                "error": outcome.error,
            }
            for inv, outcome in zip(case.invocations, outcomes, strict=True)
        ]
        for outcomes in per_run
    ]
    return CaseResult(case.eval_set_id, case.eval_id, status, metrics, sessions, turns)


def _criterion(
    name: str, spec: Any, case: EvalCase, per_run: Sequence[Sequence[AgentOutcome]], judges: _LazyJudge
) -> CriterionResult:
    options = dict(spec) if isinstance(spec, dict) else {"threshold": spec}
    threshold = float(options.pop("threshold", 0.0))
    count = len(case.invocations)
    try:
        metric: Metric | None = criterion_metric(name, options)
    except MetricError as exc:
        metric, reason = None, str(exc)
    if metric is None or not count:
        # ADK: an evaluator with no invocations to score, or one that could not run, is NOT_EVALUATED
        explanation = reason if metric is None else "the case has no invocations"
        empty = RunResult(None, NOT_EVALUATED, [None] * count, [NOT_EVALUATED] * count)
        return CriterionResult(
            None, threshold, NOT_EVALUATED, [None] * count, explanation, [NOT_EVALUATED] * count, [empty] * len(per_run)
        )
    results = [_score_run(metric, case, outcomes, judges) for outcomes in per_run]
    runs = []
    for result in results:
        scores = result.details.get("per_invocation_scores")
        if not isinstance(scores, list) or len(scores) != count:  # not attributable to invocations
            scores = [None] * count
        runs.append(
            RunResult(
                result.score,
                eval_status(result.score, threshold),
                scores,
                [eval_status(s, threshold) for s in scores],
            )
        )
    per_invocation = _mean_columns([run.per_invocation for run in runs])
    per_invocation_status = [eval_status(s, threshold) for s in per_invocation]
    scored = [s for run in runs for s in run.per_invocation if s is not None]
    if not scored:
        why = results[0].explanation
        return CriterionResult(None, threshold, NOT_EVALUATED, per_invocation, why, per_invocation_status, runs)
    score = statistics.mean(scored)
    failing = [r.explanation for r in results if r.score is not None and r.score < threshold]
    return CriterionResult(
        score,
        threshold,
        eval_status(score, threshold),
        per_invocation,
        failing[0] if failing else None,
        per_invocation_status,
        runs,
    )


def _score_run(metric: Metric, case: EvalCase, outcomes: Sequence[AgentOutcome], judges: _LazyJudge) -> MetricResult:
    """One run of a case: a case-level metric scores all its invocations at once; any other metric (judge
    metrics included) scores each invocation, and the case gets the mean (ADK's per-invocation averaging)."""
    rows = [with_parsed_trajectories(row) for row in _invocation_rows(case, outcomes)]
    if metric.case_level:
        return score_row(metric, {"invocations": rows})
    if isinstance(metric, JudgeMetric):
        judged = judge_rows(rows, [metric], judges.get(), None)[0]
        return _mean_over_invocations([judged[i, metric.name] for i in range(len(rows))])
    return _mean_over_invocations([score_row(metric, row) for row in rows])


def _invocation_rows(case: EvalCase, outcomes: Sequence[AgentOutcome]) -> list[dict[str, Any]]:
    rows = []
    for inv, outcome in zip(case.invocations, outcomes, strict=True):
        row = outcome_row(outcome, inv.prompt)
        row["reference"] = inv.reference
        row["reference_trajectory"] = Trajectory(inv.reference_trajectory)  # keeps null (absent) arguments
        rows.append(row)
    return rows


def _mean_over_invocations(results: list[MetricResult]) -> MetricResult:
    scores = [r.score for r in results if r.score is not None]
    if not scores:
        return MetricResult.not_evaluated(results[0].explanation or "not evaluated")
    return MetricResult(
        invocation_mean(scores),
        "; ".join(f"invocation {i + 1}: {r.explanation}" for i, r in enumerate(results) if r.explanation),
        {"per_invocation_scores": [r.score for r in results]},
    )


def _mean_columns(rows: list[list[float | None]]) -> list[float | None]:
    if not rows:
        return []
    out: list[float | None] = []
    for column in zip(*rows, strict=True):
        known = [v for v in column if v is not None]
        out.append(statistics.mean(known) if known else None)
    return out


def save_evalset_run(
    store: Store, result: EvalSetResult, *, dataset: str, agent: str | None, criteria: Any, started_ns: int
) -> None:
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": "evalset",
            "dataset": dataset,
            "agent": agent,
            "metrics": criteria if criteria is not None else {},
            "started_at": started_ns,
            "finished_at": time.time_ns(),
            "row_count": len(result.cases),
            "failed_count": sum(case.status == "FAILED" for case in result.cases),
            "summary": result.summary_metrics,
        },
        [
            {
                "run_id": result.run_id,
                "position": i,
                "case_id": f"{case.eval_set_id}/{case.eval_id}",
                "invocation_id": None,
                "status": case.status,
                "scores": {name: m.score for name, m in case.metrics.items()},
                "row": {**case.to_dict(), "turns": case.turns},
            }
            for i, case in enumerate(result.cases)
        ],
    )
