"""OpenInference (Arize Phoenix; Agent Engine's LangChain tracing): ``TOOL`` spans, the tool calls the model
asked for, and serialised LangChain state."""

from __future__ import annotations

from typing import Any

from toolpath.collector.reconstruct.common import error_text, parse_json, str_or_none
from toolpath.model import ToolCall
from toolpath.store.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.tracer import semconv as sc


def tool_call(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    raw = attrs.get(sc.OI_INPUT_VALUE)
    args = parse_json(raw) if attrs.get(sc.OI_INPUT_MIME_TYPE) == "application/json" else raw
    result, call_id = parse_json(attrs.get(sc.OI_OUTPUT_VALUE)), None
    if isinstance(result, dict) and isinstance(result.get("data"), dict):  # a serialised ToolMessage
        call_id = str_or_none(result["data"].get("tool_call_id"))
        result = parse_json(result["data"].get("content"))
    return ToolCall.model_construct(
        name=str(attrs.get(sc.OI_TOOL_NAME) or span.name),
        args=args if isinstance(args, dict) else ({} if args is None else {"input": args}),
        result=result,
        call_id=call_id,
        error=error_text(span) if span.status_code == STATUS_ERROR else None,
        start_time=span.start_time,
        end_time=span.end_time,
    )


def with_requested_args(calls: list[ToolCall], tool_spans: list[SpanRecord], spans: list[SpanRecord]) -> list[ToolCall]:
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
            if call.args is not None and set(call.args) == {"input"} and isinstance(requested_args, dict):
                update["args"] = requested_args
            if call.call_id is None and requested_id:
                update["call_id"] = str(requested_id)
            call = call.model_copy(update=update) if update else call
        fixed.append(call)
    return fixed


def langchain_messages_text(value: Any, kind: str | None) -> str | None:
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
