"""OpenInference (Arize Phoenix; Agent Engine's LangChain tracing): ``TOOL`` spans, the tool calls the model
asked for, and serialised LangChain state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.collector.reconstruct import requests
from toolpath.collector.reconstruct.mcp_calls import tool_message_outcome
from toolpath.collector.reconstruct.span_values import error_text, parse_json, str_or_none
from toolpath.model import ToolCall
from toolpath.store.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.tracer import semconv as sc


def tool_call(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    raw = attrs.get(sc.OI_INPUT_VALUE)
    args = parse_json(raw) if attrs.get(sc.OI_INPUT_MIME_TYPE) == "application/json" else raw
    result, call_id, error = parse_json(attrs.get(sc.OI_OUTPUT_VALUE)), None, None
    if isinstance(result, dict) and isinstance(result.get("data"), dict):  # a serialised ToolMessage
        call_id = str_or_none(result["data"].get("tool_call_id"))
        result, error = tool_message_outcome(result["data"], parse_json(result["data"].get("content")))
    return ToolCall.model_construct(
        name=str(attrs.get(sc.OI_TOOL_NAME) or span.name),
        args=args if isinstance(args, dict) else ({} if args is None else {"input": args}),
        result=result,
        call_id=call_id,
        error=error_text(span) if span.status_code == STATUS_ERROR else error,
        start_time=span.start_time,
        end_time=span.end_time,
    )


def requested_calls(attributes: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    """The tool calls (id, name, arguments) of an LLM span's ``llm.output_messages.*``, in order."""
    try:  # most spans have no such key: one look at all the keys at once says so
        if sc.OI_OUTPUT_MESSAGES_PREFIX not in "\n".join(attributes):
            return []
    except TypeError:  # a key that is not a string: the loop below decides
        pass
    found: dict[tuple[int, int], tuple[str | None, str, Any]] = {}
    for key, name in attributes.items():
        if not (key.startswith(sc.OI_OUTPUT_MESSAGES_PREFIX) and key.endswith(_NAME_SUFFIX)):
            continue
        head = key[: -len(_NAME_SUFFIX)]  # llm.output_messages.{m}.message.tool_calls.{n}
        message, _, rest = head[len(sc.OI_OUTPUT_MESSAGES_PREFIX) :].partition(".message.tool_calls.")
        if not (message.isdigit() and rest.isdigit()):
            continue
        call_id = attributes.get(f"{head}.tool_call.id")
        arguments = parse_json(attributes.get(f"{head}.tool_call.function.arguments"))
        found[int(message), int(rest)] = (str_or_none(call_id) or None, str(name), arguments)
    return [found[key] for key in sorted(found)]


_NAME_SUFFIX = ".tool_call.function.name"


def with_requested_args(calls: list[ToolCall], tool_spans: list[SpanRecord], spans: list[SpanRecord]) -> list[ToolCall]:
    """OpenInference records a one-argument tool's input as the bare value, without the parameter name, and an
    erroring tool with no id. Both are in the tool call the model asked for (:mod:`.requests` says which)."""
    asked = requests.collect((span, requested_calls(span.attributes)) for span in spans)
    fixed = []
    for call, request in zip(calls, requests.match(calls, tool_spans, asked), strict=True):
        if request is not None:
            update: dict[str, Any] = {}
            if call.args is not None and set(call.args) == {"input"} and isinstance(request.args, dict):
                update["args"] = request.args
            if call.call_id is None and request.call_id:
                update["call_id"] = request.call_id
            call = call.model_copy(update=update) if update else call
        fixed.append(call)
    return fixed


def messages_text(spans: Sequence[SpanRecord], key: str, role: str | None) -> str | None:
    """Text of the last message (with ``role``) in ``llm.{input,output}_messages.*`` of the first span that has
    one (``key``: the prefix), e.g. the user's prompt on an agent's first LLM span."""
    for span in spans:
        attrs = span.attributes
        indices = sorted(
            {
                int(k[len(key) :].partition(".")[0])
                for k in attrs
                if k.startswith(key) and k[len(key) :].partition(".")[0].isdigit()
            },
            reverse=True,
        )
        for index in indices:
            content = attrs.get(f"{key}{index}.message.content")
            if (
                (role is None or attrs.get(f"{key}{index}.message.role") == role)
                and isinstance(content, str)
                and content
            ):
                return content
    return None


def agent_name(root: SpanRecord, spans: Sequence[SpanRecord]) -> str | None:
    """The ``agent.name`` of the run's root, else of its first agent (openai-agents' root is its workflow)."""
    for span in (root, *spans):
        if span.attributes.get(sc.OI_AGENT_NAME):
            return str(span.attributes[sc.OI_AGENT_NAME])
    return None


def prompt_from_llm_spans(spans: Sequence[SpanRecord]) -> str | None:
    """The user's text an agent's first LLM span received (an agent span that records no input of its own, as
    openai-agents' does)."""
    return messages_text(_llm_spans(spans), sc.OI_INPUT_MESSAGES_PREFIX, "user")


def response_from_llm_spans(spans: Sequence[SpanRecord]) -> str | None:
    """The text of the last LLM span that answered with text."""
    return messages_text(list(reversed(_llm_spans(spans))), sc.OI_OUTPUT_MESSAGES_PREFIX, None)


def _llm_spans(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if s.attributes.get(sc.OPENINFERENCE_SPAN_KIND) == "LLM"]


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
