"""Run ADK eval sets against an agent and judge each case by its criteria (``test_config.json``).

Each case's conversation is replayed turn by turn in one session (a fresh session per run, started from the
case's ``session_input`` for agents that keep sessions, such as ADK agents), traced like any agent run, and
scored per criterion over its invocations. A criterion passes when its score reaches the threshold; a case
fails when any criterion failed, and is NOT_EVALUATED when none could be scored.
With several runs, a criterion's score is its mean over the runs (as ADK's ``num_runs``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.datasets.adk import EvalSet
from toolpath.errors import ConfigError, MetricError
from toolpath.evaluation.catalog import criterion_metric
from toolpath.evaluation.inference import AgentOutcome, content_notes, outcome_row, run_agent
from toolpath.evaluation.scoring import judge_rows, score_row, summarize
from toolpath.evaluation.targets import Target, describe_target, resolve_target
from toolpath.evaluators.judge.client import Judge, settings_from
from toolpath.evaluators.judge.vertex import JudgeMetric
from toolpath.evaluators.metrics.registry import Metric
from toolpath.evaluators.metrics.rows import with_parsed_trajectories
from toolpath.model import EvalCase, MetricResult, Trajectory
from toolpath.store.store import Store

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
        raise ConfigError(f"runs must be at least 1, got {runs}")
    run_id = uuid.uuid4().hex[:12]
    cases: list[CaseResult] = []
    judges = _LazyJudge(judge, store)
    with resolve_target(agent) as target:
        for eval_set in eval_sets:
            for case in eval_set.cases:
                case_result = _run_case(case, target, criteria or eval_set.criteria, runs, run_id, timeout, judges)
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
    case: EvalCase, agent: Target, criteria: dict[str, Any], runs: int, run_id: str, timeout: float, judges: _LazyJudge
) -> CaseResult:
    per_run: list[list[AgentOutcome]] = []
    sessions = []
    for run in range(runs):
        session_id = f"eval-{run_id}-{case.eval_set_id}-{case.eval_id}-{run}"
        sessions.append(session_id)
        agent.start_session(session_id, app_name=case.app_name, user_id=case.user_id, state=case.initial_state)
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
                **content_notes(outcome.invocation),
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
    try:
        metric: Metric | None = criterion_metric(name, options)
    except MetricError as exc:
        metric, reason = None, str(exc)
    if metric is None:
        results = [MetricResult.not_evaluated(reason)]
    else:
        results = [_score_run(metric, case, outcomes, judges) for outcomes in per_run]
    scores = [r.score for r in results if r.score is not None]
    if not scores:
        return CriterionResult(None, threshold, NOT_EVALUATED, [], results[0].explanation)
    score = sum(scores) / len(scores)
    per_invocation = _mean_columns([r.details.get("per_invocation_scores") or [] for r in results])
    failing = [r.explanation for r in results if r.score is not None and r.score < threshold]
    return CriterionResult(
        score, threshold, PASSED if score >= threshold else FAILED, per_invocation, failing[0] if failing else None
    )


def _score_run(metric: Metric, case: EvalCase, outcomes: list[AgentOutcome], judges: _LazyJudge) -> MetricResult:
    """One run of a case: a case-level metric scores all its invocations at once; any other metric (judge
    metrics included) scores each invocation, and the case gets the mean (ADK's per-invocation averaging)."""
    rows = [with_parsed_trajectories(row) for row in _invocation_rows(case, outcomes)]
    if metric.case_level:
        return score_row(metric, {"invocations": rows})
    if isinstance(metric, JudgeMetric):
        judged = judge_rows(rows, [metric], judges.get(), None)[0]
        return _mean_over_invocations([judged[i, metric.name] for i in range(len(rows))])
    return _mean_over_invocations([score_row(metric, row) for row in rows])


def _invocation_rows(case: EvalCase, outcomes: list[AgentOutcome]) -> list[dict[str, Any]]:
    rows = []
    for inv, outcome in zip(case.invocations, outcomes, strict=True):
        row = outcome_row(outcome, inv.prompt)
        row["reference"] = inv.reference
        row["reference_trajectory"] = Trajectory(inv.reference_trajectory)  # keeps wildcard (null) arguments
        rows.append(row)
    return rows


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
