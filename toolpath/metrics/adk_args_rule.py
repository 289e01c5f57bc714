"""Whether ADK's ``tool_trajectory_avg_score`` holds a call without arguments (``args`` absent or null) equal to
the same call with ``{}``: asked of the installed google-adk's own ``TrajectoryEvaluator``, once per process.

google-adk 2.15 compares ``args or {}``, so the two are equal; earlier releases compare ``args`` as given, so
they differ. toolpath reads ADK's answer rather than its version number. Without google-adk installed, toolpath
follows the newest release it is tested with (equal). google-adk is imported here only when a score needs the
answer, never by ``import toolpath``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cache

from toolpath.model import ToolCall


def _adk_present() -> bool:
    try:
        return importlib.util.find_spec("google.adk") is not None
    except (ImportError, ValueError):
        return False


@cache
def none_args_equal_empty() -> bool:
    """ADK's answer (see the module): ``True`` when a call with ``args=None`` matches one with ``args={}``."""
    if not _adk_present():
        return True
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
    from google.genai import types

    def turn(args: dict[str, object] | None) -> Invocation:
        return Invocation(
            user_content=types.Content(parts=[types.Part(text="")], role="user"),
            intermediate_data=IntermediateData(tool_uses=[types.FunctionCall(name="call", args=args)]),
        )

    evaluator = TrajectoryEvaluator(eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", threshold=1.0))
    result = evaluator.evaluate_invocations([turn(None)], [turn({})])
    return result.overall_score == 1.0


def empty_for_none(trajectories: Sequence[Sequence[ToolCall]]) -> Sequence[Sequence[ToolCall]]:
    """``trajectories`` with every call whose ``args`` is ``None`` given ``{}`` instead (the same object when
    no call has ``None``)."""
    for calls in trajectories:  # plain loops: this runs on every score, and the usual trajectory has no None
        for call in calls:
            if call.args is None:
                return [[_with_empty_args(c) if c.args is None else c for c in turn] for turn in trajectories]
    return trajectories


def _with_empty_args(call: ToolCall) -> ToolCall:
    fields = {name: getattr(call, name) for name in ToolCall.model_fields}
    return ToolCall.model_validate({**fields, "args": {}})
