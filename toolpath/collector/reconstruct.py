"""Spans -> invocations: rebuild each agent run's prompt, final response and ordered tool calls (SPEC §3).

Pure functions over :class:`SpanRecord` lists, so the same code serves the in-process collector and the
OTLP receiver, and the result does not depend on the order spans arrived in.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from toolpath.collector.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.model import Invocation, ToolCall, ns_to_datetime
from toolpath.tracer import semconv as sc

_AGENT_OPERATIONS = frozenset({sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW})
AGENT_SPAN_PREFIXES = (sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW)
"""GenAI agent spans are named ``{operation} {agent}``."""


def is_agent_span(attributes: Mapping[str, Any]) -> bool:
    return attributes.get(sc.GEN_AI_OPERATION_NAME) in _AGENT_OPERATIONS


def is_tool_span(attributes: Mapping[str, Any]) -> bool:
    return attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL


def build_invocations(spans: Iterable[SpanRecord]) -> list[Invocation]:
    """Every outermost agent run among ``spans`` (one trace or many), in start order."""
    spans = list(spans)
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    children: dict[tuple[str, str], list[SpanRecord]] = defaultdict(list)
    for span in spans:
        if span.parent_span_id is not None:
            children[(span.trace_id, span.parent_span_id)].append(span)
    roots = [s for s in spans if is_agent_span(s.attributes) and not _has_agent_ancestor(s, by_id)]
    roots.sort(key=_order_key)
    return [build_invocation(root, _descendants(root, children)) for root in roots]


def build_invocation(root: SpanRecord, descendants: Iterable[SpanRecord]) -> Invocation:
    """The invocation of one agent root span, given the spans below it (any order, any depth)."""
    attrs = root.attributes
    tool_spans = sorted((s for s in descendants if is_tool_span(s.attributes)), key=_order_key)
    calls = [tool_call_from_span(s) for s in tool_spans]
    if not calls:
        calls = _returned_trajectory(attrs)
    failed = root.status_code == STATUS_ERROR
    latency = None
    if not failed and root.end_time is not None:
        latency = (root.end_time - root.start_time) / 1e9
    invocation_attrs: dict[str, Any] = {}
    if service := root.resource.get(sc.SERVICE_NAME):
        invocation_attrs[sc.SERVICE_NAME] = service
    if truncated := attrs.get(sc.TOOLPATH_TRUNCATED):
        invocation_attrs[sc.TOOLPATH_TRUNCATED] = list(truncated)
    # model_construct: every field below is already well-formed, and validation would double the cost
    return Invocation.model_construct(
        invocation_id=root.span_id,
        session_id=str(attrs.get(sc.GEN_AI_CONVERSATION_ID) or attrs.get(sc.SESSION_ID) or root.trace_id),
        agent_name=_str_or_none(attrs.get(sc.GEN_AI_AGENT_NAME)),
        prompt=last_text(attrs.get(sc.GEN_AI_INPUT_MESSAGES), "user"),
        response=last_text(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES), None),
        tool_calls=calls,
        latency_seconds=latency,
        failure=1 if failed else 0,
        error=_error_text(root) if failed else None,
        trace_id=root.trace_id,
        started_at=ns_to_datetime(root.start_time),
        attributes=invocation_attrs,
        intermediate_responses=[],
    )


def tool_call_from_span(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    args = parse_json(attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS))
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        args = {"input": args}
    return ToolCall.model_construct(
        name=str(attrs.get(sc.GEN_AI_TOOL_NAME) or span.name.removeprefix(f"{sc.OP_EXECUTE_TOOL} ")),
        args=args,
        result=parse_json(attrs.get(sc.GEN_AI_TOOL_CALL_RESULT)),
        call_id=_str_or_none(attrs.get(sc.GEN_AI_TOOL_CALL_ID)),
        error=_error_text(span) if span.status_code == STATUS_ERROR else None,
        start_time=span.start_time,
        end_time=span.end_time,
    )


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def parse_json(value: Any) -> Any:
    """A JSON attribute's value; text that is not JSON (e.g. truncated) is kept as the string itself."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def last_text(messages_json: Any, role: str | None) -> str | None:
    """The text of the last message (with ``role``, if given) of a GenAI ``*.messages`` attribute."""
    messages = parse_json(messages_json)
    if not isinstance(messages, list):
        return messages if isinstance(messages, str) else None
    for message in reversed(messages):
        if not isinstance(message, dict) or (role is not None and message.get("role") != role):
            continue
        texts = [
            str(part.get("content", ""))
            for part in message.get("parts") or []
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        if texts:
            return "".join(texts)
    return None


def _returned_trajectory(attrs: Mapping[str, Any]) -> list[ToolCall]:
    items = parse_json(attrs.get(sc.TOOLPATH_PREDICTED_TRAJECTORY))
    if not isinstance(items, list):
        return []
    calls = []
    for item in items:
        try:
            call = ToolCall.from_item(item)
        except ValueError:
            continue  # an agent that returned junk in its trajectory: keep the well-formed calls
        calls.append(call.model_copy(update={"args": call.args or {}}))
    return calls


def _error_text(span: SpanRecord) -> str:
    for event in span.events:
        if event.get("name") == "exception":
            ev = event.get("attributes") or {}
            kind, message = ev.get("exception.type"), ev.get("exception.message")
            if kind or message:
                return f"{kind}: {message}" if kind and message else str(kind or message)
    kind, message = span.attributes.get(sc.ERROR_TYPE), span.status_message
    if kind and message and not str(message).startswith(str(kind)):
        return f"{kind}: {message}"
    return str(message or kind or "error")


def _has_agent_ancestor(span: SpanRecord, by_id: Mapping[tuple[str, str], SpanRecord]) -> bool:
    seen = set()
    parent_id = span.parent_span_id
    while parent_id is not None and parent_id not in seen:
        seen.add(parent_id)
        parent = by_id.get((span.trace_id, parent_id))
        if parent is None:
            return False
        if is_agent_span(parent.attributes):
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


def _order_key(span: SpanRecord) -> tuple[int, str]:
    return span.start_time, span.span_id
