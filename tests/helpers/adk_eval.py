"""ADK's own evaluation of the invocations toolpath scores, to hold toolpath's numbers to ADK's.

Import this module only after ``pytest.importorskip("google.adk.evaluation")``. Data stays plain so both
sides are built from the same values: a call is ``(name, args)`` with ``args`` ``None`` for a call that has no
arguments at all, an actual turn is ``(response, calls)`` with ``response`` ``None`` when the agent gave none.

:func:`adk_case_results` scores an eval set's cases from given turns with ADK's ``LocalEvalService``;
:func:`adk_eval_run` is ADK's whole evaluation of a real agent (``LocalEvalService`` inferring and evaluating, as
``AgentEvaluator`` drives it); :func:`adk_verdict` is ADK's ``AgentEvaluator`` verdict over the runs of a case.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.base_eval_service import (
    EvaluateConfig,
    EvaluateRequest,
    InferenceConfig,
    InferenceRequest,
    InferenceResult,
    InferenceStatus,
)
from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.evaluator import EvaluationResult, Evaluator
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
from google.adk.evaluation.local_eval_service import LocalEvalService
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types

from toolpath.evaluation.agent_runs import AgentOutcome
from toolpath.model import ToolCall

Call = tuple[str, dict[str, Any] | None]
Turn = tuple[str | None, Sequence[Call]]


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
    """ADK's ``EvalCaseResult`` of every run of every case of ``eval_set`` (the JSON of an ``*.evalset.json``),
    from ADK's ``LocalEvalService`` evaluating given inferences: ``actual[eval_id]`` holds, per run, the turns the
    agent produced."""
    adk_set = EvalSet.model_validate(dict(eval_set))
    service = eval_service(LlmAgent(name="unused"), adk_set)
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
    results: dict[str, list[EvalCaseResult]] = {case.eval_id: [] for case in adk_set.eval_cases}
    for run in range(max(len(r) for r in inferences.values())):  # one request per run: results in run order
        given = [
            InferenceResult(
                app_name=APP,
                eval_set_id=adk_set.eval_set_id,
                eval_case_id=eval_id,
                inferences=per_run[run],
                session_id=None,
                status=InferenceStatus.SUCCESS,
            )
            for eval_id, per_run in inferences.items()
        ]
        for result in asyncio.run(_evaluate(service, given, adk_metrics(criteria))):
            results[result.eval_id].append(result)
    return results


def adk_eval_run(agent: BaseAgent, eval_set: EvalSet, config: EvalConfig) -> dict[str, EvalCaseResult]:
    """ADK's own evaluation of ``agent`` on ``eval_set``, as ``AgentEvaluator`` drives it: ``LocalEvalService``
    infers each case (``InferenceRequest`` -> ``perform_inference``: the real agent in ADK's sessions) and
    evaluates the inferences with the config's metrics (ADK's informational efficiency metrics included)."""

    async def run() -> list[EvalCaseResult]:
        service = eval_service(agent, eval_set)
        request = InferenceRequest(app_name=APP, eval_set_id=eval_set.eval_set_id, inference_config=InferenceConfig())
        inferred = [result async for result in service.perform_inference(inference_request=request)]
        return await _evaluate(service, inferred, get_eval_metrics_from_config(config))

    return {result.eval_id: result for result in asyncio.run(run())}


APP = "app"


def eval_service(agent: BaseAgent, eval_set: EvalSet) -> LocalEvalService:
    """ADK's ``LocalEvalService`` over ``agent``, with ``eval_set`` in an in-memory eval sets manager."""
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(APP, eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(APP, eval_set.eval_set_id, case)
    return LocalEvalService(root_agent=agent, eval_sets_manager=manager)


async def _evaluate(
    service: LocalEvalService, inferences: list[InferenceResult], metrics: list[EvalMetric]
) -> list[EvalCaseResult]:
    request = EvaluateRequest(inference_results=inferences, evaluate_config=EvaluateConfig(eval_metrics=metrics))
    return [result async for result in service.evaluate(evaluate_request=request)]


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


@contextlib.contextmanager
def importable(folder: Path, package: str) -> Iterator[None]:
    """``folder`` importable, as ``adk eval`` makes an agents folder; the modules of ``package`` imported from it
    are forgotten after."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m.split(".")[0] == package]:
            del sys.modules[name]


def adk_metric_results(result: Any, *, informational: bool = True) -> dict[str, Any]:
    """Per metric ADK scored on a case (an ``EvalCaseResult``): score, status, per-invocation scores and statuses;
    ``informational=False`` leaves out ADK's informational efficiency figures."""
    per_invocation = result.eval_metric_result_per_invocation
    return {
        m.metric_name: {
            "score": m.score,
            "status": m.eval_status.name,
            "per_invocation": [
                next(r.score for r in i.eval_metric_results if r.metric_name == m.metric_name) for i in per_invocation
            ],
            "per_invocation_status": [
                next(r.eval_status.name for r in i.eval_metric_results if r.metric_name == m.metric_name)
                for i in per_invocation
            ],
        }
        for m in result.overall_eval_metric_results
        if informational or m.eval_status.name != "INFORMATIONAL"
    }
