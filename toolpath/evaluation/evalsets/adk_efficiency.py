"""Where ADK's efficiency figures differ between google-adk releases, the installed release's own reading.

- Which of a turn's events are model calls, and their tokens: google-adk 2.14 keeps an event that only reports
  usage (an empty answer, say) among the invocation's events, where 2.13 leaves it out. When ADK's own
  ``EvaluationGenerator`` made the turn's invocation (:mod:`toolpath.evaluation.evalsets.adk_invocations`), its
  model calls and tokens are read from that invocation (:func:`adk_counted`), so whatever the installed ADK keeps
  is what counts.
- A case's mean token counts: google-adk 2.14 averages over the invocations whose total is known, 2.13 over every
  invocation (one that reported none counting 0). :func:`token_mean_over_reported` asks the installed ADK's
  ``token_usage_v1`` evaluator, once per process; without google-adk, toolpath follows the newest release it is
  tested with (over the reported ones).

google-adk is imported here only when the answer is needed, never by ``import toolpath``.
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Awaitable, Mapping
from functools import cache
from typing import Any, TypeVar

from toolpath.metrics.adk_args_rule import adk_present

_T = TypeVar("_T")

_COUNTED = ("inference_call_count_v1", "token_usage_v1", "token_usage_details")


def adk_counted(figures: Mapping[str, Any], adk_invocation: Mapping[str, Any] | None) -> dict[str, Any]:
    """``figures`` (one traced invocation's) with the model calls and tokens of ``adk_invocation``, the invocation
    ADK's own ``EvaluationGenerator`` made of the turn, when there is one (else ``figures`` unchanged)."""
    out = dict(figures)
    if adk_invocation is None:
        return out
    from toolpath.evaluation.evalsets import adk_models as schema
    from toolpath.evaluation.evalsets.conversions import efficiency

    adks = efficiency(schema.Invocation.model_validate(dict(adk_invocation)))
    if adks["inference_call_count_v1"] is None:  # ADK's invocation lists no events: the traced figures stand
        return out
    out.update({name: adks[name] for name in _COUNTED})
    return out


@cache
def token_mean_over_reported() -> bool:
    """Whether a case's mean token counts leave out the invocations that reported no tokens (see the module)."""
    if not adk_present():
        return True
    from google.adk.evaluation.eval_case import IntermediateData, Invocation, InvocationEvent, InvocationEvents
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.genai import types

    with warnings.catch_warnings():  # the registry is marked experimental in some releases
        warnings.simplefilter("ignore")
        from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

    def turn(tokens: int | None) -> Invocation:
        usage = None if tokens is None else types.GenerateContentResponseUsageMetadata(prompt_token_count=tokens)
        events = [] if usage is None else [InvocationEvent(author="agent", usage_metadata=usage)]
        return Invocation(
            user_content=types.Content(parts=[types.Part(text="")], role="user"),
            intermediate_data=InvocationEvents(invocation_events=events) if events else IntermediateData(),
        )

    evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(EvalMetric(metric_name="token_usage_v1"))
    result = evaluator.evaluate_invocations([turn(10), turn(None)], None)
    if inspect.isawaitable(result):  # ADK's efficiency evaluators answer at once; an awaitable one is awaited
        result = asyncio.run(_awaited(result))
    return result.overall_score == 10.0


async def _awaited(result: Awaitable[_T]) -> _T:
    return await result
