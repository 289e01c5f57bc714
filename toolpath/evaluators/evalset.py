"""Run ADK eval sets against an agent and judge each case by its criteria (``test_config.json``).

Each case's conversation is replayed turn by turn in one session (a fresh session per run), traced like
any agent run, and scored per criterion over its invocations. A criterion passes when its score reaches
the threshold; a case fails when any criterion failed, and is NOT_EVALUATED when none could be scored.
With several runs, a criterion's score is its mean over the runs (as ADK's ``num_runs``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.datasets.adk import EvalSet
from toolpath.evaluators import text, trajectory
from toolpath.evaluators.adk_judge import ADK_JUDGE_METRICS
from toolpath.evaluators.agent_runner import AgentOutcome, run_agent
from toolpath.evaluators.judge import Judge, settings_from
from toolpath.evaluators.registry import resolve_metric
from toolpath.evaluators.runner import judge_rows, score_row, summarize
from toolpath.model import EvalCase, MetricResult, Trajectory

PASSED, FAILED, NOT_EVALUATED = "PASSED", "FAILED", "NOT_EVALUATED"


@dataclass
class CriterionResult:
    score: float | None
    threshold: float
    status: str
    per_invocation: list[float | None]
    explanation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "threshold": self.threshold,
            "status": self.status,
            "per_invocation": self.per_invocation,
            "explanation": self.explanation,
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
        raise ValueError(f"runs must be at least 1, got {runs}")
    run_id = uuid.uuid4().hex[:12]
    cases: list[CaseResult] = []
    judges = _LazyJudge(judge, store)
    for eval_set in eval_sets:
        for case in eval_set.cases:
            result = _run_case(case, agent, criteria or eval_set.criteria, runs, run_id, timeout, judges)
            cases.append(result)
            if on_case is not None:
                on_case(result)
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
        from toolpath.evaluators.history import describe_target, save_evalset_run

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
    name: str, spec: Any, case: EvalCase, per_run: list[list[AgentOutcome]], judges: _LazyJudge
) -> CriterionResult:
    options = dict(spec) if isinstance(spec, dict) else {"threshold": spec}
    threshold = float(options.pop("threshold", 0.0))
    if name in ADK_JUDGE_METRICS:
        results = [_judge_run(name, options, case, outcomes, judges.get()) for outcomes in per_run]
    else:
        results = [_score_run(name, options, case, outcomes) for outcomes in per_run]
    scores = [r.score for r in results if r.score is not None]
    if not scores:
        return CriterionResult(None, threshold, NOT_EVALUATED, [], results[0].explanation)
    score = sum(scores) / len(scores)
    per_invocation = _mean_columns([r.details.get("per_invocation_scores") or [] for r in results])
    failing = [r.explanation for r in results if r.score is not None and r.score < threshold]
    return CriterionResult(
        score, threshold, PASSED if score >= threshold else FAILED, per_invocation, failing[0] if failing else None
    )


def _score_run(name: str, options: dict[str, Any], case: EvalCase, outcomes: list[AgentOutcome]) -> MetricResult:
    expected = case.invocations
    if name == "tool_trajectory_avg_score":
        try:
            return trajectory.tool_trajectory_avg_score(
                [Trajectory(o.tool_calls) for o in outcomes],
                [Trajectory(inv.reference_trajectory) for inv in expected],
                match_type=str(options.get("match_type", "EXACT")),
                ignore_args=bool(options.get("ignore_args", False)),
            )
        except ValueError as exc:
            return MetricResult.not_evaluated(str(exc))
    if name == "response_match_score":
        if all(inv.reference is None for inv in expected):
            return MetricResult.not_evaluated("the case gives no expected final responses")
        return text.response_match_score(
            [o.response or "" for o in outcomes], [inv.reference or "" for inv in expected]
        )
    return _registered_metric(name, options, case, outcomes)


def _judge_run(
    name: str, options: dict[str, Any], case: EvalCase, outcomes: list[AgentOutcome], judge: Judge
) -> MetricResult:
    """A judge criterion on each invocation of one run, then the mean (as ADK's per-invocation averaging)."""
    try:
        metric = ADK_JUDGE_METRICS[name].from_criterion(options)
    except (TypeError, ValueError) as exc:
        return MetricResult.not_evaluated(f"{name}: {exc}")
    rows = _invocation_rows(case, outcomes)
    results = judge_rows(rows, [metric], judge, None)[0]
    return _mean_over_invocations([results[i, metric.name] for i in range(len(rows))])


def _registered_metric(
    name: str, options: dict[str, Any], case: EvalCase, outcomes: list[AgentOutcome]
) -> MetricResult:
    """Any registered row metric, averaged over the case's invocations."""
    try:
        metric = resolve_metric(name if not options else f"{name}({', '.join(f'{k}={v}' for k, v in options.items())})")
    except ValueError as exc:
        return MetricResult.not_evaluated(str(exc))
    return _mean_over_invocations([score_row(metric, row) for row in _invocation_rows(case, outcomes)])


def _invocation_rows(case: EvalCase, outcomes: list[AgentOutcome]) -> list[dict[str, Any]]:
    return [
        {
            "prompt": inv.prompt,
            "response": outcome.response,
            "reference": inv.reference,
            "predicted_trajectory": Trajectory(outcome.tool_calls),
            "reference_trajectory": Trajectory(inv.reference_trajectory),
            "latency_in_seconds": outcome.latency_in_seconds,
            "failure": outcome.failure,
            # (author, text) pairs the traced run recorded between tool calls: hallucinations_v1 can check them
            "intermediate_responses": [text for _, text in outcome.invocation.intermediate_responses]
            if outcome.invocation is not None
            else [],
        }
        for inv, outcome in zip(case.invocations, outcomes, strict=True)
    ]


def _mean_over_invocations(results: list[MetricResult]) -> MetricResult:
    scores = [r.score for r in results if r.score is not None]
    if not scores:
        return MetricResult.not_evaluated(results[0].explanation or "not evaluated")
    return MetricResult(
        sum(scores) / len(scores),
        "; ".join(f"invocation {i + 1}: {r.explanation}" for i, r in enumerate(results) if r.explanation),
        {"per_invocation_scores": [r.score for r in results]},
    )


def _mean_columns(rows: list[list[float | None]]) -> list[float | None]:
    if not rows:
        return []
    out: list[float | None] = []
    for column in zip(*rows, strict=False):
        known = [v for v in column if v is not None]
        out.append(sum(known) / len(known) if known else None)
    return out
