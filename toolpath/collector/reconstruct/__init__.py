"""Rebuild invocations (docs/spec.md §1) from the spans of any convention toolpath understands (docs/spec.md §3):
one module per convention, and here the walk that finds each agent run's root, its tool calls, prompt and response."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from toolpath.collector.clean import mark_clean
from toolpath.collector.reconstruct import adk_spans, mcp_calls, openinference, openllmetry
from toolpath.collector.reconstruct.attribution import Agents
from toolpath.collector.reconstruct.calls import merge_calls
from toolpath.collector.reconstruct.genai import (
    AGENT_SPAN_PREFIXES,
    agent_description,
    intermediate_responses,
    is_agent_span,
    last_text,
    model_spans,
    reported_trajectory,
)
from toolpath.collector.reconstruct.log_events import fold_log_events
from toolpath.collector.reconstruct.order import in_model_order
from toolpath.collector.reconstruct.span_values import error_text, first, order_key, parse_clean_json, str_or_none
from toolpath.model import Invocation, ToolCall, constructed, invocation_key, ns_to_datetime
from toolpath.store.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.tracer import semconv as sc

__all__ = [
    "AGENT_SPAN_PREFIXES",
    "build_invocation",
    "build_invocations",
    "invocation_of_run",
    "is_agent_span",
    "is_run_span",
    "is_tool_span",
]

_TOOL_PREFIX = f"{sc.OP_EXECUTE_TOOL} "
logger = logging.getLogger("toolpath.collector.reconstruct")


def is_tool_span(attributes: Mapping[str, Any], name: str = "") -> bool:
    """A tool call: the GenAI operation, or ADK 1.x's ``execute_tool <tool>`` spans; never ADK's
    ``(merged tools)`` summary span."""
    if attributes.get(sc.GEN_AI_TOOL_NAME) == sc.ADK_MERGED_TOOLS:
        return False
    if attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL:
        return True
    if attributes.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL":
        return True
    if sc.TRACELOOP_SPAN_KIND in attributes and mcp_calls.is_openllmetry_mcp_tool(attributes):
        return True
    return name.startswith(_TOOL_PREFIX) and sc.GEN_AI_TOOL_NAME in attributes


def is_run_span(span: SpanRecord) -> bool:
    """An agent run: a GenAI agent or workflow span, an OpenInference AGENT span, or the trace root of an
    OpenInference trace (a LangGraph graph is a CHAIN, and its tools sit outside the AGENT node)."""
    attributes = span.attributes
    if is_agent_span(attributes):
        return True
    kind = attributes.get(sc.OPENINFERENCE_SPAN_KIND)
    if kind is None:  # the usual span of no run: neither of OpenInference's, nor ADK's "invocation"
        return span.name == "invocation" and adk_spans.is_invocation_root(span)
    return kind == "AGENT" or (kind == "CHAIN" and span.parent_span_id is None) or adk_spans.is_invocation_root(span)


def build_invocations(spans: Iterable[SpanRecord]) -> list[Invocation]:
    """Every outermost agent run among ``spans`` (one trace or many), in start order; GenAI events sent as logs
    fill in the spans they belong to (:mod:`.log_events`)."""
    spans = fold_log_events(spans)
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    children: dict[tuple[str, str], list[SpanRecord]] = defaultdict(list)
    for span in spans:
        if span.parent_span_id is not None:
            children[(span.trace_id, span.parent_span_id)].append(span)
    roots = [s for s in spans if is_run_span(s) and not _has_agent_ancestor(s, by_id)]
    roots.sort(key=order_key)
    return [invocation_of_run(root, _descendants(root, children)) for root in roots]


def invocation_of_run(root: SpanRecord, descendants: list[SpanRecord]) -> Invocation:
    """The run's invocation; when its spans cannot be read (a value no reader foresaw), the run still counts: an
    invocation of what its root says, with the error (a rebuild is total: one bad span never stops a batch)."""
    try:
        return build_invocation(root, descendants)
    except Exception as exc:  # RecursionError included
        logger.warning("toolpath: rebuilding run %s/%s failed: %r", root.trace_id, root.span_id, exc)
        conversation = root.attributes.get(sc.GEN_AI_CONVERSATION_ID)
        return Invocation.model_construct(
            invocation_id=invocation_key(root.trace_id, root.span_id),
            session_id=conversation if isinstance(conversation, str) and conversation else root.trace_id,
            agent_name=None,
            prompt=None,
            response=None,
            tool_calls=[],
            latency_seconds=None,
            failure=1 if root.status_code == STATUS_ERROR else 0,
            error=None,
            trace_id=root.trace_id,
            started_at=ns_to_datetime(root.start_time),
            attributes={sc.TOOLPATH_REBUILD_ERROR: f"{type(exc).__name__}: {exc}"[:1000]},
            intermediate_responses=[],
        )


def build_invocation(root: SpanRecord, descendants: Iterable[SpanRecord]) -> Invocation:
    """The invocation of one agent root span, given the spans below it (any order, any depth)."""
    attrs = root.attributes
    descendants = sorted(descendants, key=order_key)
    tool_spans = [s for s in descendants if is_tool_span(s.attributes, s.name)]
    calls = list(map(tool_call_from_span, tool_spans))
    if any(mcp_calls.is_mcp_span(s.attributes) or s.resource != tool_spans[0].resource for s in tool_spans):
        # one call recorded by the framework and by MCP, or by the caller and by the server in another process
        by_id = {s.span_id: s for s in descendants}
        calls, tool_spans = mcp_calls.fold_same_calls(
            calls, tool_spans, lambda s: by_id.get(s.parent_span_id or ""), is_run_span
        )
    calls, tool_spans = in_model_order(calls, tool_spans, descendants)  # parallel calls: the model's order
    if any(sc.OPENINFERENCE_SPAN_KIND in s.attributes for s in tool_spans):
        calls = openinference.with_requested_args(calls, tool_spans, descendants)
    agent_name = _agent_name(root, descendants)
    agents = Agents(root, descendants, agent_name)
    calls = agents.attribute(calls, tool_spans)
    calls, content_notes = merge_calls(attrs, tool_spans, calls, reported_trajectory(attrs))
    if agent_name is not None:  # a call no run encloses (or that the agent span reported): the root agent's
        calls = [c if c.agent_name else c.model_copy(update={"agent_name": agent_name}) for c in calls]
    failed = root.status_code == STATUS_ERROR
    cleaned = attrs.get(sc.TOOLPATH_CLEANED)
    cleaned = cleaned if isinstance(cleaned, list) else []
    latency = None
    if not failed and root.end_time is not None and root.end_time >= root.start_time:
        latency = (root.end_time - root.start_time) / 1e9  # an end before the start (a bad clock) is unknown
    if "start_time" in cleaned or "end_time" in cleaned:
        latency = None  # a clamped time is not when the run started or ended
    invocation_attrs: dict[str, Any] = {}
    if service := root.resource.get(sc.SERVICE_NAME):
        invocation_attrs[sc.SERVICE_NAME] = service
    if description := agent_description(root, descendants, agent_name):
        invocation_attrs[sc.GEN_AI_AGENT_DESCRIPTION] = description
    for key in (sc.TOOLPATH_TRUNCATED, sc.TOOLPATH_CLEANED):  # what was changed in the root span, said again
        if isinstance(changed := attrs.get(key), list) and changed:
            invocation_attrs[key] = list(changed)
    invocation_attrs.update(content_notes)
    if isinstance(not_text := attrs.get(sc.TOOLPATH_RESPONSE_NOT_TEXT), str):  # why there is no response
        invocation_attrs[sc.TOOLPATH_RESPONSE_NOT_TEXT] = not_text
    if attrs.get(sc.TOOLPATH_EVALUATION):  # an evaluation ran it: not production traffic
        invocation_attrs[sc.TOOLPATH_EVALUATION] = True
    if attrs.get(sc.TOOLPATH_SIMULATED_USER):  # the prompt was a simulated user's
        invocation_attrs[sc.TOOLPATH_SIMULATED_USER] = True
        if (turn := attrs.get(sc.TOOLPATH_SIMULATED_TURN)) is not None:
            invocation_attrs[sc.TOOLPATH_SIMULATED_TURN] = turn
    models = model_spans(descendants)
    # constructed: every field below is already well-formed, and validation would double the cost
    return constructed(
        Invocation,
        {
            "invocation_id": invocation_key(root.trace_id, root.span_id),
            "session_id": str(
                attrs.get(sc.GEN_AI_CONVERSATION_ID)
                or attrs.get(sc.SESSION_ID)
                or (adk_spans.session_id(descendants) if adk_spans.is_invocation_root(root) else None)
                or root.trace_id
            ),
            "agent_name": agent_name,
            "prompt": _prompt(root, descendants, models),
            "response": _response(root, descendants, models),
            "tool_calls": calls,
            "intermediate_responses": intermediate_responses(attrs),
            "latency_seconds": latency,
            "failure": 1 if failed else 0,
            "error": error_text(root) if failed else None,
            "trace_id": root.trace_id,
            "started_at": ns_to_datetime(root.start_time),
            "attributes": invocation_attrs,
            "answered_by": str_or_none(attrs.get(sc.TOOLPATH_ANSWERED_BY)) or agents.answered_by(descendants),
        },
    )


def tool_call_from_span(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    if attrs.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL":
        return openinference.tool_call(span)
    if sc.TRACELOOP_SPAN_KIND in attrs and mcp_calls.is_openllmetry_mcp_tool(attrs):
        return mcp_calls.openllmetry_tool_call(span)
    raw = attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
    args, args_clean = parse_clean_json(
        raw if raw is not None else first(attrs, sc.ADK_TOOL_CALL_ARGS, sc.PYDANTIC_AI_TOOL_ARGUMENTS)
    )
    if args is None:
        args = {}
    elif args.__class__ is not dict and not isinstance(args, dict):
        args = {"input": args}
    raw = attrs.get(sc.GEN_AI_TOOL_CALL_RESULT)
    result, result_clean = parse_clean_json(
        raw if raw is not None else first(attrs, sc.ADK_TOOL_RESPONSE, sc.PYDANTIC_AI_TOOL_RESPONSE)
    )
    call_id = attrs.get(sc.GEN_AI_TOOL_CALL_ID)
    if call_id is not None and call_id.__class__ is not str:
        call_id = str(call_id)
    if attrs.get(sc.TRACELOOP_SPAN_KIND) == "tool":  # parses text inside the values again: no longer known clean
        args, result, call_id = openllmetry.unwrap_tool_io(args, result, call_id)
        args_clean = result_clean = False
    error = error_text(span) if span.status_code == STATUS_ERROR else None
    if span.scope == sc.ADK_SCOPE:  # the result, or a value inside it
        error = adk_spans.tool_error(result) or error
        result, call_id = adk_spans.tool_result(result), adk_spans.tool_call_id(call_id)
    if result.__class__ is dict and "content" in result:  # an MCP CallToolResult, as ADK records one
        result, tool_error = mcp_calls.read_result(result)
        error = tool_error or error  # the result's own text says more than a span's bare error.type
    name = attrs.get(sc.GEN_AI_TOOL_NAME)
    call = constructed(
        ToolCall,
        {
            "name": name if name and name.__class__ is str else str(name or span.name.removeprefix(_TOOL_PREFIX)),
            "args": args,
            "result": result,
            "call_id": call_id,
            "error": error,
            "start_time": span.start_time,
            "end_time": span.end_time,
            "agent_name": None,
        },
    )
    if args_clean or result_clean:
        mark_clean(call, args_clean, result_clean)
    return call


def _agent_name(root: SpanRecord, descendants: list[SpanRecord]) -> str | None:
    name = first(root.attributes, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_WORKFLOW_NAME)
    if name is None:  # e.g. ADK 1.x's bare "invocation" root: the first agent below names it
        name = next((s.attributes.get(sc.GEN_AI_AGENT_NAME) for s in descendants if is_agent_span(s.attributes)), None)
    if name is None and sc.OPENINFERENCE_SPAN_KIND in root.attributes:
        name = openinference.agent_name(root, descendants) or root.name  # a LangGraph graph's span: the agent
    return str_or_none(name)


def _prompt(root: SpanRecord, descendants: list[SpanRecord], models: list[SpanRecord]) -> str | None:
    """The user's text: on the agent span, else the last user message the first model call received."""
    text = last_text(root.attributes.get(sc.GEN_AI_INPUT_MESSAGES), "user") or openinference.langchain_messages_text(
        root.attributes.get(sc.OI_INPUT_VALUE), "human"
    )
    for span in models[:1]:
        text = text or last_text(span.attributes.get(sc.GEN_AI_INPUT_MESSAGES), "user")
    text = text if text is not None else openinference.prompt_from_llm_spans(descendants)
    return text if text is not None else adk_spans.prompt_from_requests(descendants)


def _response(root: SpanRecord, descendants: list[SpanRecord], models: list[SpanRecord]) -> str | None:
    """The final text: on the agent span, else the text of the last model call that answered with text; none when
    the agent span says the agent's own response had no text (a model's text was not its answer)."""
    if sc.TOOLPATH_RESPONSE_NOT_TEXT in root.attributes:
        return None
    text = last_text(root.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES), None) or openinference.langchain_messages_text(
        root.attributes.get(sc.OI_OUTPUT_VALUE), None
    )
    for span in reversed(models):
        if text is not None:
            break
        text = last_text(span.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES), None)
    text = text if text is not None else openinference.response_from_llm_spans(descendants)
    return text if text is not None else adk_spans.response_from_responses(descendants)


def _has_agent_ancestor(span: SpanRecord, by_id: Mapping[tuple[str, str], SpanRecord]) -> bool:
    seen = set()
    parent_id = span.parent_span_id
    while parent_id is not None and parent_id not in seen:
        seen.add(parent_id)
        parent = by_id.get((span.trace_id, parent_id))
        if parent is None:
            return False
        if is_run_span(parent):
            return True
        parent_id = parent.parent_span_id
    return False


def _descendants(root: SpanRecord, children: Mapping[tuple[str, str], list[SpanRecord]]) -> list[SpanRecord]:
    found: list[SpanRecord] = []
    stack = [root]
    seen = {root.span_id}
    while stack:
        for child in children.get((root.trace_id, stack.pop().span_id), ()):
            if child.span_id not in seen:
                seen.add(child.span_id)
                found.append(child)
                stack.append(child)
    return found
