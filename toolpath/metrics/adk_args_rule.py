"""How the installed google-adk's trajectory criterion reads calls, where its releases differ: asked of ADK's own
code once per process, never of its version number.

- A call without arguments (``args`` absent or null) and the same call with ``{}``: google-adk 2.15 compares
  ``args or {}``, so they are equal; earlier releases compare ``args`` as given, so they differ
  (:func:`none_args_equal_empty`, asked of ADK's ``TrajectoryEvaluator``).
- The function calls ADK itself sends to its client (``adk_request_confirmation`` for a tool that needs
  confirmation, ``adk_request_credential``): google-adk 2.15's ``get_all_tool_calls`` leaves them out of an
  invocation's tool calls, as the model did not choose them; earlier releases keep them
  (:func:`client_call_names`).

Without google-adk installed, toolpath follows the newest release it is tested with (2.15). google-adk is imported
here only when a score needs the answer, never by ``import toolpath``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cache

from toolpath.model import ToolCall

_CLIENT_CALLS_2_15 = frozenset({"adk_request_confirmation", "adk_request_credential"})
_CLIENT_CALL_CANDIDATES = (*sorted(_CLIENT_CALLS_2_15), "adk_request_input")


def adk_present() -> bool:
    """Whether google-adk is installed (found without importing it)."""
    try:
        return importlib.util.find_spec("google.adk") is not None
    except (ImportError, ValueError):
        return False


@cache
def none_args_equal_empty() -> bool:
    """ADK's answer (see the module): ``True`` when a call with ``args=None`` matches one with ``args={}``."""
    if not adk_present():
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


@cache
def client_call_names() -> frozenset[str]:
    """The names of the calls ADK sends its client that the installed google-adk leaves out of an invocation's
    tool calls (see the module); empty when it keeps them all."""
    if not adk_present():
        return _CLIENT_CALLS_2_15
    from google.adk.evaluation.eval_case import IntermediateData, get_all_tool_calls
    from google.genai import types

    try:
        from google.adk.utils._function_call_names import CLIENT_FUNCTION_CALL_NAMES as named
    except ImportError:  # a release without the list: the names toolpath knows
        named = frozenset()
    candidates = sorted({*_CLIENT_CALL_CANDIDATES, *named})
    data = IntermediateData(tool_uses=[types.FunctionCall(name=name, args={}) for name in candidates])
    kept = {call.name for call in get_all_tool_calls(data)}
    return frozenset(name for name in candidates if name not in kept)


def as_adk_reads(
    trajectories: Sequence[Sequence[ToolCall]], *, none_as_empty: bool, left_out: frozenset[str]
) -> Sequence[Sequence[ToolCall]]:
    """``trajectories`` as ADK's criterion reads them: with ``none_as_empty``, every call whose ``args`` is
    ``None`` given ``{}``; the calls named in ``left_out`` dropped. The same object when nothing changes."""
    for calls in trajectories:  # plain loops: this runs on every score, and the usual trajectory needs nothing
        for call in calls:
            if (none_as_empty and call.args is None) or call.name in left_out:
                return [
                    [
                        _with_empty_args(c) if none_as_empty and c.args is None else c
                        for c in turn
                        if c.name not in left_out
                    ]
                    for turn in trajectories
                ]
    return trajectories


def read_pair(
    actual: Sequence[Sequence[ToolCall]],
    expected: Sequence[Sequence[ToolCall]],
    none_as_empty: bool | None,
    null_args_wildcard: bool,
) -> tuple[Sequence[Sequence[ToolCall]], Sequence[Sequence[ToolCall]]] | None:
    """A case's actual and expected trajectories as ADK's criterion reads them (:func:`as_adk_reads`; a
    ``None`` ``none_as_empty`` is the installed ADK's answer, and a wildcard reference stays one); ``None`` when
    the reading changes nothing. The reading only makes calls equal or drops the same calls on both sides, so it
    never undoes a match: a perfect score needs no reading."""
    none_as_empty = none_args_equal_empty() if none_as_empty is None else none_as_empty
    left_out = client_call_names()
    if not none_as_empty and not left_out:
        return None
    read_actual = as_adk_reads(actual, none_as_empty=none_as_empty, left_out=left_out)
    read_expected = as_adk_reads(expected, none_as_empty=none_as_empty and not null_args_wildcard, left_out=left_out)
    if read_actual is actual and read_expected is expected:
        return None
    return read_actual, read_expected


def empty_for_none(trajectories: Sequence[Sequence[ToolCall]]) -> Sequence[Sequence[ToolCall]]:
    """``trajectories`` with every call whose ``args`` is ``None`` given ``{}`` instead (the same object when
    no call has ``None``)."""
    return as_adk_reads(trajectories, none_as_empty=True, left_out=frozenset())


def _with_empty_args(call: ToolCall) -> ToolCall:
    fields = {name: getattr(call, name) for name in ToolCall.model_fields}
    return ToolCall.model_validate({**fields, "args": {}})
