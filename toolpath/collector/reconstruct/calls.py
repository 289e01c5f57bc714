"""An invocation's tool calls when there are two records of them: the tool spans, and the trajectory the agent
span itself carries (``toolpath.agent.predicted_trajectory``). Neither silently loses what the other knows.

- The agent span's trajectory taken from the framework's own events (``toolpath.agent.trajectory_source`` =
  ``events``: toolpath running an ADK agent, an ``AdkApp`` stream) is complete: it is the trajectory, and the tool
  spans (matched by call id) add only their timings, and a result or error the events lacked.
- Otherwise the tool spans are the trajectory. A tool span that recorded no arguments at all (no arguments
  attribute: content capture was off — not a call made with ``{}``) takes them, and its result, from the agent
  span's trajectory: the call with the same id, else the call at the same position with the same name.
- A run whose tool spans recorded no arguments is flagged (``toolpath.content_missing``), and the calls whose
  arguments stay unknown are counted (``toolpath.arguments_unknown``), so a trajectory stored with ``{}`` where
  the arguments were not recorded is never mistaken for a call made without arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.model import ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

_ARGUMENTS, _ADK_ARGUMENTS, _OI_INPUT = sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.ADK_TOOL_CALL_ARGS, sc.OI_INPUT_VALUE


def has_arguments(span: SpanRecord) -> bool:
    """Whether the tool span recorded its arguments (an empty object counts: that is a call without any)."""
    attributes = span.attributes
    return _ARGUMENTS in attributes or _ADK_ARGUMENTS in attributes or _OI_INPUT in attributes


def merge_calls(
    root_attributes: Mapping[str, Any],
    tool_spans: Sequence[SpanRecord],
    span_calls: list[ToolCall],
    reported: list[ToolCall] | None,
) -> tuple[list[ToolCall], dict[str, Any]]:
    """The invocation's calls from its tool spans (``span_calls``, one per span of ``tool_spans``) and the agent
    span's own trajectory (``reported``), and the invocation attributes that say what content was missing."""
    missing = [not has_arguments(span) for span in tool_spans]
    notes: dict[str, Any] = {sc.TOOLPATH_CONTENT_MISSING: True} if any(missing) else {}
    if reported is not None and root_attributes.get(sc.TOOLPATH_TRAJECTORY_SOURCE) == sc.TRAJECTORY_SOURCE_EVENTS:
        return _with_span_details(reported, span_calls), notes
    if not span_calls:
        return reported or [], notes
    calls = list(span_calls)
    unknown = 0
    if any(missing):
        by_id = {call.call_id: call for call in reported or () if call.call_id}
        positional = reported if reported is not None and len(reported) == len(calls) else None
        for index, call in enumerate(calls):
            if not missing[index]:
                continue
            source = by_id.get(call.call_id) if call.call_id else None
            if source is None and positional is not None:
                source = positional[index]
            if source is None or source.name != call.name:
                unknown += 1
                continue
            update: dict[str, Any] = {"args": source.args if source.args is not None else {}}
            if call.result is None and source.result is not None:
                update["result"] = source.result
            calls[index] = call.model_copy(update=update)
    if unknown:
        notes[sc.TOOLPATH_ARGUMENTS_UNKNOWN] = unknown
    return calls, notes


def _with_span_details(reported: list[ToolCall], span_calls: list[ToolCall]) -> list[ToolCall]:
    """The reported calls, each with the timings (and a result or error it lacks) of the span of its call id; a
    span without an id (ADK's span of a tool that raised has none) goes with the first call of its name that no
    span has, in order."""
    spans_by_id = {call.call_id: call for call in span_calls if call.call_id}
    without_id = [call for call in span_calls if not call.call_id]
    merged = []
    for call in reported:
        span_call = spans_by_id.get(call.call_id) if call.call_id else None
        if span_call is None:
            span_call = next((c for c in without_id if c.name == call.name), None)
            if span_call is not None:
                without_id.remove(span_call)
        if span_call is not None and span_call.name == call.name:
            update: dict[str, Any] = {"start_time": span_call.start_time, "end_time": span_call.end_time}
            if call.agent_name is None and span_call.agent_name is not None:
                update["agent_name"] = span_call.agent_name
            if call.result is None and span_call.result is not None:
                update["result"] = span_call.result
            if call.error is None and span_call.error is not None:
                update["error"] = span_call.error
            call = call.model_copy(update=update)
        merged.append(call)
    return merged
