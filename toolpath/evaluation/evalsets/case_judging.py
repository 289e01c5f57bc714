"""An eval case judged by its criteria from its runs' outcomes, as ADK judges it: each invocation gets a score and a
status (PASSED when the score reaches the threshold, FAILED below it, NOT_EVALUATED without a score), and the
criterion the evaluator's mean over the invocations (ADK's ``EvalCaseResult``; an ADK custom metric reports its own
status). Over the runs, a criterion's score is the mean of every scored invocation of every run, and it passes when
that reaches the threshold (ADK's ``AgentEvaluator`` with ``num_runs``). A case fails when any criterion failed,
passes when one passed and none failed, and is NOT_EVALUATED when none could be scored — as a case with no
invocations.

The runs come from an agent run live (:mod:`toolpath.evaluation.evalsets.evaluator`), from recorded sessions
(:mod:`toolpath.evaluation.evalsets.recorded_cases`) or from ADK's recorded results
(:mod:`toolpath.evaluation.evalsets.history`): all are judged here, alike.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.evaluation.evalsets.adk_invocations import judge_columns
from toolpath.evaluation.evalsets.case_results import (
    FAILED,
    NOT_EVALUATED,
    PASSED,
    CaseResult,
    CriterionResult,
    eval_status,
)
from toolpath.evaluation.evalsets.criteria import Criterion
from toolpath.evaluation.evalsets.efficiency import case_efficiency
from toolpath.evaluation.like_with_like import scrubbed
from toolpath.evaluation.outcome_rows import compared_rows, content_notes, outcome_row, response_note, stored_ids
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.evaluation.scoring import judge_rows, score_row
from toolpath.judges.client import Judge, settings_from
from toolpath.judges.vertex import JudgeMetric
from toolpath.metrics.base import Metric, invocation_mean
from toolpath.model import EvalCase, EvalStatus, MetricResult
from toolpath.trajectory import Trajectory


class LazyJudge:
    """The judge of a run, made on first use (runs without judge criteria need no credentials)."""

    def __init__(self, judge: Judge | None, store: Any) -> None:
        self._judge, self._store = judge, store

    def get(self) -> Judge:
        if self._judge is None:
            self._judge = Judge(settings_from(None), cache=self._store)
        return self._judge


def judge_case(
    case: EvalCase,
    plan: Mapping[str, Criterion],
    per_run: list[list[AgentOutcome]],
    judges: LazyJudge,
    *,
    sessions: list[str],
    efficiency: list[list[dict[str, Any]]],
    errors: Sequence[str | None] = (),
) -> CaseResult:
    """A case judged by ``plan`` from its runs' outcomes (one list of turns per run) and the runs' per-invocation
    efficiency figures. A case with no invocations is NOT_EVALUATED, as in ADK. A run that failed (``errors``: a
    turn that raised, a simulated conversation that could not go on) is not judged, and fails the case, as ADK's
    failed inference; the other runs are judged as usual (ADK's ``AgentEvaluator`` with ``num_runs``)."""
    failed_runs = [f"run {i + 1}: {e}" if len(per_run) > 1 else e for i, e in enumerate(errors) if e]
    if failed_runs:
        judged_runs = [outcomes if not errors[i] else [] for i, outcomes in enumerate(per_run)]
        case_result = judge_case(case, plan, judged_runs, judges, sessions=sessions, efficiency=efficiency)
        case_result.status, case_result.error = FAILED, "; ".join(failed_runs)
        case_result.run_errors = list(errors)
        case_result.outcomes, case_result.turns = per_run, _turns(case, per_run)
        for metric in case_result.metrics.values():
            metric.explanation = metric.explanation if metric.score is not None else case_result.error
        return case_result
    if not any(per_run):
        metrics = {
            name: CriterionResult(
                None,
                c.threshold,
                NOT_EVALUATED,
                [],
                "the case has no invocations",
                run_scores=[None] * len(per_run),
                run_per_invocation=[[] for _ in per_run],
                run_status=[NOT_EVALUATED] * len(per_run),
                run_per_invocation_status=[[] for _ in per_run],
            )
            for name, c in plan.items()
        }
    else:
        metrics = {name: _criterion(criterion, case, per_run, judges) for name, criterion in plan.items()}
    statuses = {m.status for m in metrics.values()}
    status = FAILED if FAILED in statuses else PASSED if PASSED in statuses else NOT_EVALUATED
    turns = _turns(case, per_run)
    run_efficiency = [case_efficiency(figures) for figures in efficiency]
    every = [figure for figures in efficiency for figure in figures]
    return CaseResult(
        case.eval_set_id,
        case.eval_id,
        status,
        metrics,
        sessions,
        turns,
        efficiency=case_efficiency(every),
        run_efficiency=run_efficiency,
        case=case,
        outcomes=per_run,
        criteria=plan,
    )


def _turns(case: EvalCase, per_run: list[list[AgentOutcome]]) -> list[list[dict[str, Any]]]:
    # a run that ended in a raising turn has fewer turns than the case: its turns keep their own references
    scripted = case.conversation_scenario is None and all(len(o) <= len(case.invocations) for o in per_run)
    references = case.invocations if scripted else []
    turns = [
        [
            {
                "prompt": outcome_prompt(case, i, outcome),
                "response": outcome.response,
                "reference": references[i].reference if i < len(references) else None,
                "predicted_trajectory": [c.to_item() for c in outcome.tool_calls],
                "reference_trajectory": [c.to_vertex() for c in references[i].reference_trajectory]
                if i < len(references)
                else None,
                "failure": outcome.failure,
                "error": outcome.error,
                **content_notes(outcome.invocation) | response_note(outcome) | stored_ids(outcome.invocation),
            }
            for i, outcome in enumerate(outcomes)
        ]
        for outcomes in per_run
    ]
    if case.conversation_scenario is None:
        return turns
    return [[{**turn, "simulated_user": True} for turn in run] for run in turns]  # the simulated user's turns


def outcome_prompt(case: EvalCase, index: int, outcome: AgentOutcome) -> str | None:
    if outcome.prompt is not None:
        return outcome.prompt
    if index < len(case.invocations):
        return case.invocations[index].prompt
    return outcome.invocation.prompt if outcome.invocation is not None else None


def _criterion(
    criterion: Criterion, case: EvalCase, per_run: Sequence[Sequence[AgentOutcome]], judges: LazyJudge
) -> CriterionResult:
    threshold = criterion.threshold
    results = [_score_run(criterion.metric, case, outcomes, judges) for outcomes in per_run]
    run_per_invocation: list[list[float | None]] = []
    for result, outcomes in zip(results, per_run, strict=True):
        count = len(outcomes)  # simulated conversations: each run has its own number of turns
        scores = result.details.get("per_invocation_scores")
        if not isinstance(scores, list) or len(scores) != count:  # not attributable to invocations
            scores = [None] * count
        run_per_invocation.append(list(scores))
    run_status = [_status(r, threshold) for r in results]
    run_per_invocation_status = [[eval_status(s, threshold) for s in scores] for scores in run_per_invocation]
    per_invocation = _mean_columns(run_per_invocation)
    # ADK's AgentEvaluator: the mean of every scored invocation of every run (for a metric that scores a case as a
    # whole, without per-invocation scores, the mean of the runs' scores)
    scored = [s for scores in run_per_invocation for s in scores if s is not None]
    if not scored:
        scored = [r.score for r in results if r.score is not None]
    if not scored:
        return CriterionResult(
            None,
            threshold,
            NOT_EVALUATED,
            per_invocation,
            results[0].explanation if results else "not evaluated",
            per_invocation_status=[eval_status(s, threshold) for s in per_invocation],
            run_scores=[r.score for r in results],
            run_per_invocation=run_per_invocation,
            run_status=run_status,
            run_per_invocation_status=run_per_invocation_status,
        )
    score = statistics.mean(scored)
    reported = [r.details.get("eval_status") for r in results if r.score is not None]
    if reported and all(reported):  # an ADK custom metric decides its own status
        status = FAILED if FAILED in reported else PASSED if PASSED in reported else NOT_EVALUATED
    else:
        status = eval_status(score, threshold)
    reported_each = results[0].details.get("per_invocation_status") if len(results) == 1 else None
    per_invocation_status = (
        [EvalStatus(s) for s in reported_each] if reported_each else [eval_status(s, threshold) for s in per_invocation]
    )
    failing = [r.explanation for r in results if r.score is not None and r.score < threshold]
    return CriterionResult(
        score,
        threshold,
        status,
        per_invocation,
        failing[0] if failing else None,
        per_invocation_status=per_invocation_status,
        run_scores=[r.score for r in results],
        run_per_invocation=run_per_invocation,
        run_status=run_status,
        run_per_invocation_status=run_per_invocation_status,
    )


def _status(result: MetricResult, threshold: float) -> EvalStatus:
    reported = result.details.get("eval_status")
    if result.score is None:
        return NOT_EVALUATED
    if reported in (PASSED, FAILED, NOT_EVALUATED):
        return EvalStatus(reported)
    return eval_status(result.score, threshold)


def _score_run(metric: Metric, case: EvalCase, outcomes: Sequence[AgentOutcome], judges: LazyJudge) -> MetricResult:
    """One run of a case: a case-level metric scores all its invocations at once; any other metric (judge
    metrics included) scores each invocation, and the case gets the mean (ADK's per-invocation averaging)."""
    # computed metrics: what the agent did, in memory; a judge: the redacted values and references (like_with_like)
    rows, redactor = compared_rows(_invocation_rows(case, outcomes), outcomes, not isinstance(metric, JudgeMetric))
    if metric.case_level and isinstance(metric, JudgeMetric):  # a multi-turn judge: the whole conversation at once
        if not rows:
            return MetricResult.not_evaluated("no invocations")
        whole = {"invocations": rows, "conversation_scenario": case.conversation_scenario}
        return judge_rows([whole], [metric], judges.get(), None)[0][0, metric.name]
    if metric.case_level:
        return scrubbed(score_row(metric, {"invocations": rows}), redactor, rows)
    if isinstance(metric, JudgeMetric):
        judged = judge_rows(rows, [metric], judges.get(), None)[0]
        return _mean_over_invocations([judged[i, metric.name] for i in range(len(rows))])
    return _mean_over_invocations([scrubbed(score_row(metric, row), redactor, [row]) for row in rows])


def _invocation_rows(case: EvalCase, outcomes: Sequence[AgentOutcome]) -> list[dict[str, Any]]:
    """One row per turn; with the expected turn's reference and trajectory when the case gives them (a recorded
    ADK result of a simulated-user case has none)."""
    rows = []
    references = case.invocations if len(case.invocations) == len(outcomes) else None
    for i, outcome in enumerate(outcomes):
        row = outcome_row(outcome, outcome_prompt(case, i, outcome) or "")
        row.update(judge_columns(case, i, outcome, expected=references is not None))  # what ADK's judges read
        if references is not None:
            row["reference"] = references[i].reference
            row["reference_trajectory"] = Trajectory(references[i].reference_trajectory)  # keeps wildcard (null) args
        rows.append(row)
    return rows


def _mean_over_invocations(results: list[MetricResult]) -> MetricResult:
    if not results:
        return MetricResult.not_evaluated("no invocations")
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
    for column in itertools.zip_longest(*rows):  # runs of a simulated conversation may differ in length
        known = [v for v in column if v is not None]
        out.append(statistics.mean(known) if known else None)
    return out
