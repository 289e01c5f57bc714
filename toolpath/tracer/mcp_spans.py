"""Spans of Model Context Protocol calls (the OpenTelemetry MCP conventions), for :mod:`toolpath.adapters.mcp`.

A ``tools/call`` is a CLIENT span ``tools/call {tool}`` in the caller and a SERVER span of the same name in the
server, its child: the trace context travels in the request's ``params._meta`` (``traceparent``, ``tracestate``,
``baggage``, unprefixed). When a framework already traces the tool call (its ``execute_tool`` span is current),
the client side adds the MCP attributes to that span instead of making a second one. Both carry
``gen_ai.operation.name=execute_tool`` and ``gen_ai.tool.name``, so a reader that knows no MCP still sees one
tool call; arguments and results follow the content policy like every other value, and a result that says
``isError`` sets ``error.type=tool_error`` and an ERROR status with the result's text.

Only the OpenTelemetry API is used: until a provider is installed every helper is a cheap no-op.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import Token
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from toolpath.tracer import content, spans
from toolpath.tracer import semconv as sc

_tracer = trace.get_tracer(sc.TOOLPATH_SCOPE)
_TOOL_SPAN_PREFIX = sc.tool_span_name("")


def inject(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """``meta`` (a request's ``_meta``) with the current trace context written into it (a new dict)."""
    carrier: dict[str, Any] = dict(meta or {})
    for key in sc.MCP_META_KEYS:  # the caller's stale context (a framework injected its own) never mixes in
        carrier.pop(key, None)
    propagate.inject(carrier)
    return carrier


def extract(meta: Mapping[str, Any] | None) -> Context | None:
    """The remote parent a request's ``_meta`` carries, or ``None`` when it carries none."""
    if not meta or not any(isinstance(meta.get(key), str) for key in sc.MCP_META_KEYS):
        return None
    carrier = {key: meta[key] for key in sc.MCP_META_KEYS if isinstance(meta.get(key), str)}
    return propagate.extract(carrier)


def framework_tool_span(tool_name: str) -> Span | None:
    """The framework's own ``execute_tool`` span of this call, if one is current and carries no MCP call yet: a
    span of this tool (its name, or a name ending in it: a server prefix the framework added)."""
    span = trace.get_current_span()
    attributes = getattr(span, "attributes", None)
    if not span.is_recording() or not isinstance(attributes, Mapping):
        return None
    if sc.MCP_METHOD_NAME in attributes:
        return None
    span_name = getattr(span, "name", None)
    named = isinstance(span_name, str) and span_name.startswith(_TOOL_SPAN_PREFIX)
    if attributes.get(sc.GEN_AI_OPERATION_NAME) != sc.OP_EXECUTE_TOOL and not named:
        return None  # (ADK names its span ``execute_tool {tool}`` at once, and sets its attributes when it ends)
    name = attributes.get(sc.GEN_AI_TOOL_NAME)
    if not isinstance(name, str):
        name = span_name.removeprefix(_TOOL_SPAN_PREFIX) if named and isinstance(span_name, str) else ""
    return span if name == tool_name or name.endswith(tool_name) else None


def _call_attributes(method: str, tool_name: str | None, request_id: Any, transport: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {sc.MCP_METHOD_NAME: method}
    if tool_name is not None:
        attrs[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
        attrs[sc.GEN_AI_TOOL_NAME] = tool_name
        attrs[sc.GEN_AI_TOOL_TYPE] = "extension"
    if request_id is not None:
        attrs[sc.JSONRPC_REQUEST_ID] = str(request_id)
    if transport:
        attrs[sc.NETWORK_TRANSPORT] = transport
    return attrs


def _span_name(method: str, tool_name: str | None) -> str:
    return f"{method} {tool_name}" if tool_name else method


def start_client_call(
    tool_name: str, arguments: Any, request_id: Any, transport: str | None
) -> tuple[Span, Token[Context] | None]:
    """The client side of a ``tools/call``: the framework's current ``execute_tool`` span, enriched (the token is
    then ``None``), else a new CLIENT span made current (so the injected context names it)."""
    attrs = _call_attributes(sc.MCP_TOOLS_CALL, tool_name, request_id, transport)
    own = framework_tool_span(tool_name)
    if own is not None:
        attributes = getattr(own, "attributes", None) or {}
        for key in (sc.MCP_METHOD_NAME, sc.JSONRPC_REQUEST_ID, sc.NETWORK_TRANSPORT):
            if key in attrs:
                own.set_attribute(key, attrs[key])
        if content._policy.capture and sc.GEN_AI_TOOL_CALL_ARGUMENTS not in attributes:
            spans._set_json(own, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments or {})
        return own, None
    if content._policy.capture:
        spans._put_json(attrs, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments or {})
    span = _tracer.start_span(_span_name(sc.MCP_TOOLS_CALL, tool_name), kind=SpanKind.CLIENT, attributes=attrs)
    return span, context.attach(trace.set_span_in_context(span))


def start_server_call(
    tool_name: str,
    arguments: Any,
    request_id: Any,
    session_id: str | None,
    parent: Context | None,
    transport: str | None = None,
) -> tuple[Span, Token[Context]]:
    """The server side of a ``tools/call``: a SERVER span under the client's context (``parent``, from
    :func:`extract`; the current context when ``None``), made current while the tool runs."""
    attrs = _call_attributes(sc.MCP_TOOLS_CALL, tool_name, request_id, transport)
    if session_id:
        attrs[sc.MCP_SESSION_ID] = session_id
    if content._policy.capture:
        spans._put_json(attrs, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments or {})
    span = _tracer.start_span(_span_name(sc.MCP_TOOLS_CALL, tool_name), parent, SpanKind.SERVER, attrs)
    return span, context.attach(trace.set_span_in_context(span))


def start_light_call(method: str, request_id: Any, transport: str | None) -> tuple[Span, Token[Context]]:
    """A CLIENT span of a request that is no tool call (``tools/list``): its method and id, no content."""
    attrs = _call_attributes(method, None, request_id, transport)
    span = _tracer.start_span(method, kind=SpanKind.CLIENT, attributes=attrs)
    return span, context.attach(trace.set_span_in_context(span))


def finish_call(
    span: Span,
    token: Token[Context] | None,
    result: Any = None,
    *,
    tool_error: str | None = None,
    error_type: str = sc.MCP_TOOL_ERROR,
    failure: BaseException | None = None,
    record_result: bool = True,
) -> None:
    """Record a call's outcome: its result (``record_result``; never over a result already recorded), a result
    that says ``isError`` (``tool_error``: its text; ``error_type``: a JSON-RPC error's code instead), or an
    exception; the span ends if toolpath began it (``token`` given), else the framework ends its own."""
    try:
        if span.is_recording():
            attributes = getattr(span, "attributes", None) or {}
            if failure is not None:
                spans.record_failure(span, failure)
            elif tool_error is not None:
                message = tool_error
                if (redactor := content._policy.redactor) is not None:
                    message = redactor.text(message)
                span.set_attribute(sc.ERROR_TYPE, error_type)
                span.set_status(Status(StatusCode.ERROR, message[: content._policy.max_value_length]))
            if (
                record_result
                and failure is None
                and content._policy.capture
                and sc.GEN_AI_TOOL_CALL_RESULT not in attributes
            ):
                spans._set_json(span, sc.GEN_AI_TOOL_CALL_RESULT, result)
    finally:
        if token is not None:
            context.detach(token)
            span.end()


def result_value(result: Any) -> Any:
    """What a ``CallToolResult`` returned, as a value: its structured content (unwrapped from the ``{"result":
    x}`` a server adds around a value that is no object, when its text says the same ``x``), else its content
    blocks — a text block as the JSON it holds, or as text — one block as itself, several as a list."""
    blocks = [_block_value(block) for block in getattr(result, "content", None) or ()]
    structured = getattr(result, "structuredContent", None)
    if isinstance(structured, dict):
        if set(structured) == {"result"} and len(blocks) == 1 and blocks[0] == structured["result"]:
            return structured["result"]
        return structured
    return blocks[0] if len(blocks) == 1 else blocks


def error_text(result: Any) -> str:
    """The text of a result that says ``isError`` (its text blocks, joined)."""
    texts = [getattr(block, "text", None) for block in getattr(result, "content", None) or ()]
    return "\n".join(t for t in texts if isinstance(t, str)) or "tool_error"


def _block_value(block: Any) -> Any:
    text = getattr(block, "text", None)
    if getattr(block, "type", None) == "text" and isinstance(text, str):
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return text
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        value = dump(mode="json", exclude_none=True)
        if isinstance(value, dict) and "data" in value:  # an image's or audio's bytes: not a trajectory's business
            value["data"] = f"<{len(str(value['data']))} base64 chars>"
        return value
    return str(block)
