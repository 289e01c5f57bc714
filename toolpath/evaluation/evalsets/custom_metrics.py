"""ADK custom metrics (``custom_metrics`` of a ``test_config.json``), run as ADK runs them.

The config names a ``module.function`` taking ADK's types: ``fn(eval_metric, actual_invocations,
expected_invocations, conversation_scenario) -> EvaluationResult`` (or an awaitable of one). toolpath imports it as
ADK does, gives it the case's invocations as ADK ``Invocation`` objects and an ``EvalMetric`` whose threshold is
cleared and whose criterion holds the threshold and options (as ADK's ``_CustomMetricEvaluator`` does), and reads
back the overall score and status and the per-invocation scores and statuses. Such a function needs google-adk
installed; nothing else in toolpath does.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from toolpath.errors import MetricError
from toolpath.evaluation.evalsets.conversions import invocation_json
from toolpath.metrics.base import CustomMetric, Row
from toolpath.model import EvalStatus, MetricResult
from toolpath.trajectory import parse_trajectory


def adk_custom_metric(name: str, function_path: str, options: Mapping[str, Any], threshold: float) -> AdkCustomMetric:
    try:
        importlib.import_module("google.adk.evaluation.eval_metrics")
    except ImportError:
        raise MetricError(
            f"custom metric {function_path!r} takes ADK's types (EvalMetric, Invocation): install google-adk"
        ) from None
    module_name, _, attr = function_path.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module_name), attr) if module_name else None
    except (ImportError, AttributeError) as exc:
        raise MetricError(f"cannot import custom metric function {function_path!r}: {exc}") from None
    if not callable(fn):
        raise MetricError(f"custom metric {function_path!r} is not a function")
    return AdkCustomMetric(name, fn, function_path, options, threshold)


class AdkCustomMetric(CustomMetric):
    """A custom metric of ADK's shape over a whole case (``row["invocations"]``, else the row as one turn)."""

    case_level: ClassVar[bool] = True

    def __init__(
        self, name: str, fn: Callable[..., Any], function_path: str, options: Mapping[str, Any], threshold: float
    ) -> None:
        super().__init__(self._evaluate, name)
        self.adk_function = fn
        self.function_path = function_path
        self.criterion = {"threshold": threshold, **options}

    def _evaluate(self, row: Row) -> MetricResult:
        from google.adk.evaluation.eval_case import Invocation
        from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric

        turns = row["invocations"] if isinstance(row.get("invocations"), list) else [row]
        actual = [Invocation.model_validate(_invocation(turn, "predicted_trajectory", "response")) for turn in turns]
        has_expected = all("reference_trajectory" in turn or "reference" in turn for turn in turns)
        expected = (
            [Invocation.model_validate(_invocation(turn, "reference_trajectory", "reference")) for turn in turns]
            if has_expected
            else None
        )
        eval_metric = EvalMetric(
            metric_name=self.name,
            threshold=None,
            criterion=BaseCriterion.model_validate(self.criterion),
            custom_function_path=self.function_path,
        )
        result = self.adk_function(eval_metric, actual, expected, None)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        status = getattr(result, "overall_eval_status", None)
        if status is None or not hasattr(result, "per_invocation_results"):
            raise MetricError(f"{self.function_path} returned {type(result).__name__}, not an ADK EvaluationResult")
        per_invocation = list(result.per_invocation_results)
        score = result.overall_score
        overall = self._status(status)
        evaluated = overall is not EvalStatus.NOT_EVALUATED
        return MetricResult(
            score if evaluated else None,
            None if evaluated else f"{self.function_path} did not evaluate the case",
            {
                "eval_status": overall,
                "per_invocation_scores": [r.score for r in per_invocation],
                "per_invocation_status": [self._status(r.eval_status) for r in per_invocation],
            },
        )

    def _status(self, status: Any) -> EvalStatus:
        """ADK's ``EvalStatus`` member as toolpath's, by its name."""
        try:
            return EvalStatus(getattr(status, "name", status))
        except ValueError:
            raise MetricError(f"{self.function_path} returned the status {status!r}, not an ADK EvalStatus") from None


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _invocation(turn: Row, calls_column: str, text_column: str) -> dict[str, Any]:
    authored = [
        ("agent", text) if isinstance(text, str) else tuple(text) for text in turn.get("intermediate_responses") or []
    ]
    return invocation_json(
        prompt=str(turn.get("prompt") or ""),
        response=turn.get(text_column),
        tool_calls=parse_trajectory(turn.get(calls_column)),
        intermediate_responses=authored if calls_column == "predicted_trajectory" else (),
    )
