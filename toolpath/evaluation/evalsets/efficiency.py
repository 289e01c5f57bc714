"""ADK's informational efficiency figures for each eval case: tool calls, model calls, tokens and duration.

ADK 2.x reports them for every case under these names (``_efficiency_evaluators.py``), per invocation and, for
the case, as the mean over its invocations — never passing or failing, ``None`` meaning "not available", never
zero:

- ``tool_call_count_v1``: the invocation's tool calls.
- ``inference_call_count_v1``: its model calls — its own agents' (a sub-agent it transferred to included), not
  those made inside a tool (an ``AgentTool``'s agent runs an invocation of its own, whose events ADK does not
  count as the turn's).
- ``token_usage_v1``: input + output tokens over those model calls; ``token_usage_details`` breaks them down (a
  count no call reported is ``None``; the case mean counts an invocation that did not report it as 0, as ADK).
- ``invocation_duration_v1``: its wall-clock seconds; ``duration_details`` splits them into model seconds (at
  least one model call in flight), tool seconds (inside a tool and not awaiting a model) and the rest, the
  framework's (the case mean is over the timed invocations, rounded to milliseconds, as ADK; a model call inside
  a tool is model time, as ADK's ``model_duration`` counts it).

For a run toolpath traced they come from the stored invocation (its tool calls and latency) and the stored spans
under it (model calls: GenAI ``chat`` / ``generate_content`` / ``text_completion`` spans, OpenInference LLM spans,
else ADK 1.x's ``call_llm``; tokens from their ``gen_ai.usage.*`` attributes); without the spans (a run traced
without a store) the model figures are ``None``. Where toolpath read the turn's ADK events, the agent span says
which model calls ADK counts (``toolpath.agent.model_usage``): those and their usage reports are the model calls
and tokens, so an answer ADK leaves out of the invocation (an empty text) is no call, as in ADK; the model spans
still give the model time. Where ADK's own ``EvaluationGenerator`` made the turn's invocation (an ADK agent run by
``toolpath eval``), its model calls and tokens are that invocation's, as the installed google-adk keeps them
(:mod:`toolpath.evaluation.evalsets.adk_efficiency`). For ADK's recorded results they are computed from the recorded
invocations exactly as ADK computes them (:func:`toolpath.evaluation.evalsets.conversions.efficiency`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.evaluation.evalsets.adk_efficiency import token_mean_over_reported
from toolpath.evaluation.evalsets.adk_models import DurationDetails, TokenUsageDetails
from toolpath.metrics.adk_args_rule import client_call_names
from toolpath.model import Invocation
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

FIGURES = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
_MODEL_OPERATIONS = (sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION)
_TOKENS = (
    ("input_tokens", (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.OI_TOKEN_COUNT_PROMPT)),
    ("output_tokens", (sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.OI_TOKEN_COUNT_COMPLETION)),
    ("cached_tokens", (sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,)),
    ("reasoning_tokens", (sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,)),
)


def spans_under(store: Any, invocation: Invocation | None) -> list[SpanRecord] | None:
    """The stored spans of ``invocation``'s run (its agent span and everything below it); ``None`` when they
    are not in ``store``."""
    if store is None or invocation is None or not invocation.trace_id:
        return None
    spans = store.spans_of_trace(invocation.trace_id)
    children: dict[str | None, list[SpanRecord]] = defaultdict(list)
    root = None
    for span in spans:
        children[span.parent_span_id].append(span)
        if span.span_id == invocation.span_id:
            root = span
    if root is None:
        return None
    found, stack = [root], [root]
    while stack:
        for child in children[stack.pop().span_id]:
            found.append(child)
            stack.append(child)
    return found


def traced_efficiency(invocation: Invocation | None, spans: Sequence[SpanRecord] | None) -> dict[str, Any]:
    """The figures of one traced invocation (see the module docstring)."""
    tokens: dict[str, float | None] = dict.fromkeys(TokenUsageDetails.model_fields)
    duration: dict[str, float | None] = dict.fromkeys(DurationDetails.model_fields)
    if invocation is None:
        return _figures(None, None, tokens, duration)
    duration["total_seconds"] = invocation.latency_seconds
    model_calls: float | None = None
    if spans:
        models = [s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION_NAME) in _MODEL_OPERATIONS]
        models += [s for s in spans if s.attributes.get(sc.OPENINFERENCE_SPAN_KIND) == "LLM"]
        models = models or [s for s in spans if s.name == sc.ADK_CALL_LLM]
        counted = _event_model_usage(invocation, spans)
        if counted is not None:  # ADK's events said which model calls its figures count
            model_calls, tokens = counted
        else:
            own = _outside_tools(models, spans)
            model_calls = float(len(own))
            _span_tokens(own, tokens)
        tools = [s for s in spans if _is_tool(s)]
        model_time = _union([_interval(s) for s in models])
        model_seconds = _length(model_time) / 1e9
        tool_seconds = _length(_minus(_union([_interval(s) for s in tools]), model_time)) / 1e9
        duration["model_seconds"], duration["tool_seconds"] = model_seconds, tool_seconds
        total = duration["total_seconds"]
        if total is not None:
            duration["framework_seconds"] = round(max(total - model_seconds - tool_seconds, 0.0), 3)
    left_out = client_call_names()  # calls ADK sends its client, where the installed google-adk leaves them out
    tool_calls = float(sum(call.name not in left_out for call in invocation.tool_calls))
    return _figures(tool_calls, model_calls, tokens, duration)


def _span_tokens(models: Sequence[SpanRecord], tokens: dict[str, float | None]) -> None:
    """Add up the ``gen_ai.usage.*`` (or OpenInference) token counts of ``models`` into ``tokens``."""
    for key, attributes in _TOKENS:
        for span in models:
            count = next((span.attributes[a] for a in attributes if span.attributes.get(a) is not None), None)
            if count is not None:
                tokens[key] = (tokens[key] or 0) + _number(count)
    if tokens["input_tokens"] is not None or tokens["output_tokens"] is not None:
        tokens["total_tokens"] = (tokens["input_tokens"] or 0) + (tokens["output_tokens"] or 0)


def _event_model_usage(
    invocation: Invocation, spans: Sequence[SpanRecord]
) -> tuple[float, dict[str, float | None]] | None:
    """The model calls and tokens ADK's figures count, from ``toolpath.agent.model_usage`` on the invocation's
    agent span (ADK's events, read by :mod:`toolpath.adapters.adk_events`); ``None`` when the span has none, or
    one that is not a list of usage reports (then the model spans count)."""
    from pydantic import ValidationError

    root = next((s for s in spans if s.span_id == invocation.span_id), None)
    text = root.attributes.get(sc.TOOLPATH_MODEL_USAGE) if root is not None else None
    if not isinstance(text, str):
        return None
    try:
        items = json.loads(text)
    except ValueError:
        return None
    if not isinstance(items, list) or not all(item is None or isinstance(item, dict) for item in items):
        return None
    from google.genai import types as genai_types

    from toolpath.evaluation.evalsets.conversions import token_usage

    try:
        reports = [genai_types.GenerateContentResponseUsageMetadata.model_validate(i) for i in items if i is not None]
    except ValidationError:
        return None
    return float(len(items)), token_usage(reports)


def case_efficiency(per_invocation: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A case's figures: each the mean over its invocations (``None`` excluded; token counts missing from some
    invocations count as 0 there, over the invocations whose total is known where the installed google-adk averages
    so, :func:`~toolpath.evaluation.evalsets.adk_efficiency.token_mean_over_reported`; durations rounded to
    milliseconds), plus ``per_invocation``."""
    out: dict[str, Any] = {}
    for name in ("tool_call_count_v1", "inference_call_count_v1"):
        out[name] = _mean([f[name] for f in per_invocation])
    token_details: dict[str, float | None] = {}
    counted = per_invocation
    if token_mean_over_reported():  # google-adk 2.14 and later: the invocations whose total is known
        counted = [f for f in per_invocation if f["token_usage_details"].get("total_tokens") is not None]
    for key in TokenUsageDetails.model_fields:
        values = [f["token_usage_details"].get(key) for f in counted]
        present = [v for v in values if v is not None]
        token_details[key] = sum(present) / len(values) if present else None
    duration_details: dict[str, float | None] = {}
    for key in DurationDetails.model_fields:
        present = [f["duration_details"].get(key) for f in per_invocation if f["duration_details"].get(key) is not None]
        duration_details[key] = round(sum(present) / len(present), 3) if present else None
    out["token_usage_v1"] = token_details["total_tokens"]
    out["invocation_duration_v1"] = duration_details["total_seconds"]
    out["token_usage_details"] = token_details
    out["duration_details"] = duration_details
    out["per_invocation"] = [dict(f) for f in per_invocation]
    return out


def _figures(
    tool_calls: float | None,
    model_calls: float | None,
    tokens: dict[str, float | None],
    duration: dict[str, float | None],
) -> dict[str, Any]:
    return {
        "tool_call_count_v1": tool_calls,
        "inference_call_count_v1": model_calls,
        "token_usage_v1": tokens["total_tokens"],
        "invocation_duration_v1": duration["total_seconds"],
        "token_usage_details": tokens,
        "duration_details": duration,
    }


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _outside_tools(models: Sequence[SpanRecord], spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """The model spans of ``models`` with no tool span above them in ``spans`` (the run's)."""
    by_id = {s.span_id: s for s in spans}
    inside: dict[str, bool] = {}

    def under_tool(span: SpanRecord) -> bool:
        path, found = [], False
        parent = by_id.get(span.parent_span_id or "")
        while parent is not None:
            if parent.span_id in inside:
                found = inside[parent.span_id]
                break
            path.append(parent.span_id)
            if _is_tool(parent):
                found = True
                break
            parent = by_id.get(parent.parent_span_id or "")
        for span_id in path:
            inside[span_id] = found or inside.get(span_id, False)
        return found

    return [s for s in models if not under_tool(s)]


def _is_tool(span: SpanRecord) -> bool:
    return (
        span.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL
        or span.attributes.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL"
    )


def _interval(span: SpanRecord) -> tuple[int, int]:
    return span.start_time, span.end_time if span.end_time is not None else span.start_time


def _union(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _minus(intervals: list[tuple[int, int]], cut: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``intervals`` (disjoint, sorted) without the parts covered by ``cut`` (disjoint, sorted)."""
    out = []
    for start, end in intervals:
        for cut_start, cut_end in cut:
            if cut_end <= start or cut_start >= end:
                continue
            if cut_start > start:
                out.append((start, cut_start))
            start = max(start, cut_end)
            if start >= end:
                break
        if start < end:
            out.append((start, end))
    return out


def _length(intervals: Sequence[tuple[int, int]]) -> int:
    return sum(end - start for start, end in intervals)
