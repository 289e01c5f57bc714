"""Spans -> invocations: rebuild each agent run's prompt, final response and ordered tool calls (SPEC §3).

Pure functions over :class:`SpanRecord` lists, so the same code serves the in-process collector and the
OTLP receiver, and the result does not depend on the order spans arrived in.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from toolpath.model import Invocation, ToolCall, ns_to_datetime
from toolpath.store.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.tracer import semconv as sc

_AGENT_OPERATIONS = frozenset({sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW})
AGENT_SPAN_PREFIXES = (sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW)
"""GenAI agent spans are named ``{operation} {agent}``."""


def is_agent_span(attributes: Mapping[str, Any]) -> bool:
    return attributes.get(sc.GEN_AI_OPERATION_NAME) in _AGENT_OPERATIONS


_MODEL_OPERATIONS = frozenset({sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION})
_TOOL_PREFIX = f"{sc.OP_EXECUTE_TOOL} "


def is_tool_span(attributes: Mapping[str, Any], name: str = "") -> bool:
    """A tool call: the GenAI operation, or ADK 1.x's ``execute_tool <tool>`` spans; never ADK's
    ``(merged tools)`` summary span."""
    if attributes.get(sc.GEN_AI_TOOL_NAME) == sc.ADK_MERGED_TOOLS:
        return False
    if attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL:
        return True
    if attributes.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL":
        return True
    return name.startswith(_TOOL_PREFIX) and sc.GEN_AI_TOOL_NAME in attributes


def is_run_span(span: SpanRecord) -> bool:
    """An agent run: a GenAI agent or workflow span, an OpenInference AGENT span, or the trace root of an
    OpenInference trace (a LangGraph graph is a CHAIN, and its tools sit outside the AGENT node)."""
    if is_agent_span(span.attributes):
        return True
    kind = span.attributes.get(sc.OPENINFERENCE_SPAN_KIND)
    return kind == "AGENT" or (kind == "CHAIN" and span.parent_span_id is None)


def build_invocations(spans: Iterable[SpanRecord]) -> list[Invocation]:
    """Every outermost agent run among ``spans`` (one trace or many), in start order."""
    spans = list(spans)
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    children: dict[tuple[str, str], list[SpanRecord]] = defaultdict(list)
    for span in spans:
        if span.parent_span_id is not None:
            children[(span.trace_id, span.parent_span_id)].append(span)
    roots = [s for s in spans if is_run_span(s) and not _has_agent_ancestor(s, by_id)]
    roots.sort(key=_order_key)
    return [build_invocation(root, _descendants(root, children)) for root in roots]


def build_invocation(root: SpanRecord, descendants: Iterable[SpanRecord]) -> Invocation:
    """The invocation of one agent root span, given the spans below it (any order, any depth)."""
    attrs = root.attributes
    descendants = sorted(descendants, key=_order_key)
    tool_spans = [s for s in descendants if is_tool_span(s.attributes, s.name)]
    calls = [tool_call_from_span(s) for s in tool_spans]
    if any(sc.OPENINFERENCE_SPAN_KIND in s.attributes for s in tool_spans):
        calls = _openinference_args(calls, tool_spans, descendants)
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
        agent_name=_agent_name(root, descendants),
        prompt=_prompt(root, descendants),
        response=_response(root, descendants),
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
    if attrs.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL":
        return _openinference_tool_call(span)
    args = parse_json(_first(attrs, sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.ADK_TOOL_CALL_ARGS))
    if args is None:
        args = {}
    elif not isinstance(args, dict):
        args = {"input": args}
    result = parse_json(_first(attrs, sc.GEN_AI_TOOL_CALL_RESULT, sc.ADK_TOOL_RESPONSE))
    call_id = _str_or_none(attrs.get(sc.GEN_AI_TOOL_CALL_ID))
    if attrs.get(sc.TRACELOOP_SPAN_KIND) == "tool":
        args, result, call_id = _unwrap_traceloop(args, result, call_id)
    error = _error_text(span) if span.status_code == STATUS_ERROR else None
    if span.scope == sc.ADK_SCOPE and isinstance(result, dict) and result.get("error"):
        # ADK reports a tool failure handled by a callback as an {"error", "error_type"} payload (1.x leaves the
        # span unmarked; 2.x marks it TOOL_ERROR): the payload says what actually went wrong
        kind = result.get("error_type")
        error = f"{kind}: {result['error']}" if kind else str(result["error"])
    return ToolCall.model_construct(
        name=str(attrs.get(sc.GEN_AI_TOOL_NAME) or span.name.removeprefix(_TOOL_PREFIX)),
        args=args,
        result=result,
        call_id=call_id,
        error=error,
        start_time=span.start_time,
        end_time=span.end_time,
    )


def _openinference_tool_call(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    raw = attrs.get(sc.OI_INPUT_VALUE)
    args = parse_json(raw) if attrs.get(sc.OI_INPUT_MIME_TYPE) == "application/json" else raw
    result, call_id = parse_json(attrs.get(sc.OI_OUTPUT_VALUE)), None
    if isinstance(result, dict) and isinstance(result.get("data"), dict):  # a serialised ToolMessage
        call_id = _str_or_none(result["data"].get("tool_call_id"))
        result = parse_json(result["data"].get("content"))
    return ToolCall.model_construct(
        name=str(attrs.get(sc.OI_TOOL_NAME) or span.name),
        args=args if isinstance(args, dict) else ({} if args is None else {"input": args}),
        result=result,
        call_id=call_id,
        error=_error_text(span) if span.status_code == STATUS_ERROR else None,
        start_time=span.start_time,
        end_time=span.end_time,
    )


def _openinference_args(calls: list[ToolCall], tool_spans: list[SpanRecord], spans: list[SpanRecord]) -> list[ToolCall]:
    """OpenInference records a one-argument tool's input as the bare value, without the parameter name, and an
    erroring tool with no id. Both are in the tool calls the model asked for: pair each tool span with the
    first unused requested call of the same name made before it."""
    requested: list[tuple[int, str, Any, str | None]] = []
    for span in spans:
        attrs = span.attributes
        for index in range(64):
            prefix = f"{sc.OI_TOOL_CALLS_PREFIX}{index}.tool_call."
            name = attrs.get(prefix + "function.name")
            if name is None:
                break
            requested.append(
                (span.start_time, name, parse_json(attrs.get(prefix + "function.arguments")), attrs.get(prefix + "id"))
            )
    used: set[int] = set()
    fixed = []
    for call, span in zip(calls, tool_spans, strict=True):
        match = next(
            (
                i
                for i, (at, name, _, _) in enumerate(requested)
                if i not in used and name == call.name and at <= span.start_time
            ),
            None,
        )
        if match is not None:
            used.add(match)
            _, _, requested_args, requested_id = requested[match]
            update: dict[str, Any] = {}
            if set(call.args) == {"input"} and isinstance(requested_args, dict):
                update["args"] = requested_args
            if call.call_id is None and requested_id:
                update["call_id"] = str(requested_id)
            call = call.model_copy(update=update) if update else call
        fixed.append(call)
    return fixed


def _unwrap_traceloop(args: dict[str, Any], result: Any, call_id: str | None) -> tuple[dict[str, Any], Any, str | None]:
    """OpenLLMetry wraps LangChain tool input as ``{"input_str", "inputs", "kwargs": {"tool_call_id"}}`` and the
    output as ``{"output": <serialised ToolMessage>}`` whose ``kwargs.content`` holds the return value."""
    if isinstance(args.get("inputs"), dict):
        call_id = call_id or _str_or_none((args.get("kwargs") or {}).get("tool_call_id"))
        args = args["inputs"]
    if isinstance(result, dict) and isinstance(result.get("output"), dict):
        message = result["output"]
        content = (message.get("kwargs") or {}).get("content", message.get("content"))
        result = parse_json(content) if content is not None else message
    return args, result, call_id


def _first(attrs: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) is not None:
            return attrs[key]
    return None


def _agent_name(root: SpanRecord, descendants: list[SpanRecord]) -> str | None:
    name = _first(root.attributes, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_WORKFLOW_NAME)
    if name is None:  # e.g. ADK 1.x's bare "invocation" root: the first agent below names it
        name = next((s.attributes.get(sc.GEN_AI_AGENT_NAME) for s in descendants if is_agent_span(s.attributes)), None)
    if name is None and sc.OPENINFERENCE_SPAN_KIND in root.attributes:
        name = root.name  # a LangGraph graph's span is named after the agent
    return _str_or_none(name)


def _model_spans(descendants: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in descendants if s.attributes.get(sc.GEN_AI_OPERATION_NAME) in _MODEL_OPERATIONS]


def _prompt(root: SpanRecord, descendants: list[SpanRecord]) -> str | None:
    """The user's text: on the agent span, else the last user message the first model call received."""
    text = last_text(root.attributes.get(sc.GEN_AI_INPUT_MESSAGES), "user") or _langchain_messages_text(
        root.attributes.get(sc.OI_INPUT_VALUE), "human"
    )
    for span in _model_spans(descendants)[:1]:
        text = text or last_text(span.attributes.get(sc.GEN_AI_INPUT_MESSAGES), "user")
    if text is None:  # ADK 1.x: the first call_llm's request holds the conversation
        requests = (parse_json(s.attributes.get(sc.ADK_LLM_REQUEST)) for s in descendants)
        request = next((r for r in requests if isinstance(r, dict) and r.get("contents")), None)
        if isinstance(request, dict):
            text = _genai_contents_text(request.get("contents"), "user")
    return text


def _response(root: SpanRecord, descendants: list[SpanRecord]) -> str | None:
    """The final text: on the agent span, else the text of the last model call that answered with text."""
    text = last_text(root.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES), None) or _langchain_messages_text(
        root.attributes.get(sc.OI_OUTPUT_VALUE), None
    )
    for span in reversed(_model_spans(descendants)):
        if text is not None:
            break
        text = last_text(span.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES), None)
    if text is None:
        for span in reversed(descendants):
            payload = parse_json(span.attributes.get(sc.ADK_LLM_RESPONSE))
            if isinstance(payload, dict) and payload.get("content"):
                text = _genai_contents_text([payload["content"]], None)
                if text is not None:
                    break
    return text


def _langchain_messages_text(value: Any, kind: str | None) -> str | None:
    """Content of the last message (of ``kind``) in serialised LangChain state ``{"messages": [...]}``."""
    state = parse_json(value)
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if not isinstance(message, dict) or (kind is not None and message.get("type") != kind):
            continue
        data = message.get("data") or message.get("kwargs") or {}
        content = data.get("content") if isinstance(data, dict) else None
        if isinstance(content, str) and content:
            return content
    return None


def _genai_contents_text(contents: Any, role: str | None) -> str | None:
    """Text of the last content (with ``role``) of a google-genai ``contents`` list."""
    if not isinstance(contents, list):
        return None
    for content in reversed(contents):
        if not isinstance(content, dict) or (role is not None and content.get("role") != role):
            continue
        texts = [
            p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        if texts:
            return "".join(texts)
    return None


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


def _order_key(span: SpanRecord) -> tuple[int, str]:
    return span.start_time, span.span_id
