"""ADK's own evaluation of the invocations toolpath scores, to hold toolpath's numbers to ADK's.

Import this module only after ``pytest.importorskip("google.adk.evaluation")``. Data stays plain so both
sides are built from the same values: a call is ``(name, args)`` with ``args`` ``None`` for a call that has no
arguments at all, an actual turn is ``(response, calls)`` with ``response`` ``None`` when the agent gave none.

:func:`adk_case_results` scores an eval set's cases with ADK's ``LocalEvalService`` where it can be imported
(it needs ADK's ``eval`` extra: pandas, Vertex AI); elsewhere with ADK's own evaluators, assembled into ADK's
``EvalCaseResult`` records as that service assembles them (:func:`_evaluate_case`). :func:`adk_verdict` is
ADK's ``AgentEvaluator`` verdict over the runs of a case.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.eval_metrics import (
    EvalMetric,
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    ToolTrajectoryCriterion,
)
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.evaluator import EvalStatus, EvaluationResult, Evaluator, PerInvocationResult
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types

from toolpath.evaluation.inference import AgentOutcome
from toolpath.model import ToolCall

Call = tuple[str, dict[str, Any] | None]
Turn = tuple[str | None, Sequence[Call]]

ADK_EVALUATORS: dict[str, type[Evaluator]] = {
    "tool_trajectory_avg_score": TrajectoryEvaluator,
    "response_match_score": RougeEvaluator,
}
"""The evaluators ADK's default registry gives these metric names."""


def adk_invocation(prompt: str, response: str | None, calls: Sequence[Call] = ()) -> Invocation:
    """An ADK ``Invocation``: the user's text, the final response (none when ``None``) and the tool calls."""
    return Invocation(
        user_content=types.Content(parts=[types.Part(text=prompt)], role="user"),
        final_response=None if response is None else types.Content(parts=[types.Part(text=response)], role="model"),
        intermediate_data=IntermediateData(tool_uses=[types.FunctionCall(name=n, args=a) for n, a in calls]),
    )


def toolpath_calls(calls: Sequence[Call]) -> list[ToolCall]:
    return [ToolCall(name=name, args=args) for name, args in calls]


def outcome(turn: Turn) -> AgentOutcome:
    """What toolpath's runner records for an agent turn that answered ``response`` after ``calls``."""
    response, calls = turn
    return AgentOutcome(response, toolpath_calls(calls), 0.1, 0, None, None)


def trajectory_evaluator(match_type: str = "EXACT", ignore_args: bool = False, threshold: float = 1.0) -> Evaluator:
    criterion = ToolTrajectoryCriterion(
        threshold=threshold, match_type=ToolTrajectoryCriterion.MatchType[match_type], ignore_args=ignore_args
    )
    return TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion))


def rouge_evaluator(threshold: float = 0.8) -> Evaluator:
    return RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=threshold))


def evaluate(evaluator: Evaluator, actual: Sequence[Invocation], expected: Sequence[Invocation]) -> EvaluationResult:
    result = evaluator.evaluate_invocations(list(actual), list(expected))
    assert isinstance(result, EvaluationResult)
    return result


def adk_metrics(criteria: Mapping[str, Any]) -> list[EvalMetric]:
    """ADK's metrics for a ``test_config.json``'s criteria, as ADK reads them (its always-on informational
    efficiency metrics left out: toolpath has no such criteria)."""
    config = EvalConfig.model_validate({"criteria": dict(criteria)})
    return [m for m in get_eval_metrics_from_config(config) if m.metric_name in criteria]


def adk_case_results(
    eval_set: Mapping[str, Any],
    actual: Mapping[str, Sequence[Sequence[Turn]]],
    criteria: Mapping[str, Any],
) -> dict[str, list[EvalCaseResult]]:
    """ADK's ``EvalCaseResult`` of every run of every case of ``eval_set`` (the JSON of an ``*.evalset.json``):
    ``actual[eval_id]`` holds, per run, the turns the agent produced."""
    adk_set = EvalSet.model_validate(dict(eval_set))
    metrics = adk_metrics(criteria)
    inferences = {
        case.eval_id: [
            [
                adk_invocation(_prompt(expected), response, calls)
                for expected, (response, calls) in zip(case.conversation or [], run, strict=True)
            ]
            for run in actual[case.eval_id]
        ]
        for case in adk_set.eval_cases
    }
    by_service = _service_results(adk_set, inferences, metrics)
    if by_service is not None:
        return by_service
    return {
        case.eval_id: [_evaluate_case(adk_set.eval_set_id, case, run, metrics) for run in inferences[case.eval_id]]
        for case in adk_set.eval_cases
    }


def adk_verdict(results: Sequence[EvalCaseResult]) -> dict[str, tuple[float | None, str]]:
    """Per metric, ADK's ``AgentEvaluator`` verdict over a case's runs: the overall score and its status.

    The score is the mean ``AgentEvaluator._process_metrics_and_get_failures`` takes; the status is read from
    the failures that method reports (``NOT_EVALUATED`` for a metric it never saw scored)."""
    grouped = AgentEvaluator._get_eval_metric_results_with_invocation(list(results))
    failures = AgentEvaluator._process_metrics_and_get_failures(grouped, False, "agent")
    verdict: dict[str, tuple[float | None, str]] = {}
    for name, entries in grouped.items():
        scores = [e.eval_metric_result.score for e in entries if e.eval_metric_result.score is not None]
        overall = statistics.mean(scores) if scores else None
        if any(f.startswith(f"{name} for agent Failed.") for f in failures):
            status = "FAILED"
        elif overall is None or any(f.startswith(f"{name} for agent was not evaluated") for f in failures):
            status = "NOT_EVALUATED"
        else:
            status = "PASSED"
        verdict[name] = (overall, status)
    return verdict


def _prompt(invocation: Invocation) -> str:
    parts = invocation.user_content.parts or []
    return "\n".join(p.text for p in parts if p.text)


def _evaluate_case(
    eval_set_id: str, case: Any, actual: list[Invocation], metrics: Sequence[EvalMetric]
) -> EvalCaseResult:
    """One run of a case as ``LocalEvalService._evaluate_single_inference_result`` records it: each metric's
    evaluator on all invocations (an evaluator that raises is NOT_EVALUATED), its per-invocation results
    copied onto the invocations when they align, and the case's final status from the metrics' statuses."""
    expected = list(case.conversation or [])
    per_invocation = [
        EvalMetricResultPerInvocation(actual_invocation=a, expected_invocation=e, eval_metric_results=[])
        for a, e in zip(actual, expected, strict=True)
    ]
    overall: list[EvalMetricResult] = []
    for metric in metrics:
        try:
            result = evaluate(ADK_EVALUATORS[metric.metric_name](eval_metric=metric), actual, expected)
        except Exception:
            result = EvaluationResult(overall_eval_status=EvalStatus.NOT_EVALUATED)
        overall.append(
            EvalMetricResult(score=result.overall_score, eval_status=result.overall_eval_status, **metric.model_dump())
        )
        aligned = len(result.per_invocation_results) == len(per_invocation)
        for index, invocation in enumerate(per_invocation):
            one = (
                result.per_invocation_results[index]
                if aligned
                else PerInvocationResult(actual_invocation=invocation.actual_invocation)
            )
            invocation.eval_metric_results.append(
                EvalMetricResult(score=one.score, eval_status=one.eval_status, **metric.model_dump())
            )
    return EvalCaseResult(
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        final_eval_status=_final_status(overall),
        overall_eval_metric_results=overall,
        eval_metric_result_per_invocation=per_invocation,
        session_id="",
    )


def _final_status(results: Sequence[EvalMetricResult]) -> EvalStatus:
    """``LocalEvalService._generate_final_eval_status``: FAILED at the first failed metric, else PASSED if one
    passed, else NOT_EVALUATED."""
    status = EvalStatus.NOT_EVALUATED
    for result in results:
        if result.eval_status == EvalStatus.PASSED:
            status = EvalStatus.PASSED
        elif result.eval_status == EvalStatus.FAILED:
            return EvalStatus.FAILED
    return status


def _service_results(
    eval_set: EvalSet, inferences: Mapping[str, list[list[Invocation]]], metrics: list[EvalMetric]
) -> dict[str, list[EvalCaseResult]] | None:
    """The same through ADK's ``LocalEvalService``, when ADK's evaluation extra is installed; else ``None``."""
    try:
        from google.adk.agents import LlmAgent
        from google.adk.evaluation.base_eval_service import (
            EvaluateConfig,
            EvaluateRequest,
            InferenceResult,
            InferenceStatus,
        )
        from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
        from google.adk.evaluation.local_eval_service import LocalEvalService
    except ImportError:
        return None
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set("app", eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case("app", eval_set.eval_set_id, case)
    service = LocalEvalService(root_agent=LlmAgent(name="unused"), eval_sets_manager=manager)
    results: dict[str, list[EvalCaseResult]] = {case.eval_id: [] for case in eval_set.eval_cases}
    runs = max(len(r) for r in inferences.values())
    for run in range(runs):  # one request per run, so the results come back in run order
        request = EvaluateRequest(
            inference_results=[
                InferenceResult(
                    app_name="app",
                    eval_set_id=eval_set.eval_set_id,
                    eval_case_id=eval_id,
                    inferences=per_run[run],
                    session_id=None,
                    status=InferenceStatus.SUCCESS,
                )
                for eval_id, per_run in inferences.items()
            ],
            evaluate_config=EvaluateConfig(eval_metrics=metrics),
        )

        async def collect(request: EvaluateRequest = request) -> list[EvalCaseResult]:
            return [result async for result in service.evaluate(evaluate_request=request)]

        for result in asyncio.run(collect()):
            results[result.eval_id].append(result)
    return results
