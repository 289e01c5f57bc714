"""Spans of Agent2Agent calls, for :mod:`toolpath.adapters.a2a`: a CLIENT span ``a2a.client`` in the caller, a
SERVER span ``a2a.server`` in the remote agent's process, its child through the W3C trace context sent as HTTP
headers, so the remote agent's run is part of the caller's trace (and of its invocation). Both carry
``a2a.method.name``, ``a2a.task.id`` and ``gen_ai.conversation.id`` (the A2A context id); the server span names
the remote agent (``gen_ai.agent.name``, from its agent card), so the calls made under it are attributed to it
even when the remote agent records no agent span of its own.

Only the OpenTelemetry API is used: until a provider is installed every helper is a cheap no-op.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import Token
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from toolpath.tracer import content, spans
from toolpath.tracer import semconv as sc

_tracer = trace.get_tracer(sc.TOOLPATH_SCOPE)
CLIENT_SPAN = "a2a.client"
SERVER_SPAN = "a2a.server"


def _attributes(method: str, context_id: str | None, agent_name: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {sc.A2A_METHOD_NAME: method}
    if context_id:
        attrs[sc.GEN_AI_CONVERSATION_ID] = content.identifier(context_id)
    if agent_name:
        attrs[sc.GEN_AI_AGENT_NAME] = agent_name
    return attrs


def start_client(method: str, context_id: str | None) -> tuple[Span, dict[str, str]]:
    """The caller's span of one A2A request (not made current: a stream outlives the caller's context), and the
    headers that carry it to the server."""
    span = _tracer.start_span(CLIENT_SPAN, kind=SpanKind.CLIENT, attributes=_attributes(method, context_id, None))
    headers: dict[str, str] = {}
    propagate.inject(headers, context=trace.set_span_in_context(span))
    return span, headers


def start_server(
    method: str, headers: Mapping[str, Any] | None, context_id: str | None, agent_name: str | None
) -> tuple[Span, Context]:
    """The remote agent's span of one A2A request, under the context its ``headers`` carry; returns it and the
    context to run the request in."""
    carrier = {str(k).lower(): v for k, v in (headers or {}).items() if isinstance(v, str)}
    parent = propagate.extract(carrier) if any(k in carrier for k in sc.MCP_META_KEYS) else None
    attrs = _attributes(method, context_id, agent_name)
    span = _tracer.start_span(SERVER_SPAN, parent, SpanKind.SERVER, attrs)
    return span, trace.set_span_in_context(span, parent)


def note_task(span: Span, task_id: str | None, context_id: str | None) -> None:
    """Record the task (and context) an A2A response names, once."""
    if not span.is_recording():
        return
    attributes = getattr(span, "attributes", None) or {}
    if task_id and sc.A2A_TASK_ID not in attributes:
        span.set_attribute(sc.A2A_TASK_ID, task_id)
    if context_id and sc.GEN_AI_CONVERSATION_ID not in attributes:
        span.set_attribute(sc.GEN_AI_CONVERSATION_ID, content.identifier(context_id))


def finish(span: Span, *, failure: BaseException | None = None, failed_state: str | None = None) -> None:
    """End an A2A span: an exception, or a task that ended ``failed``, makes it an error."""
    try:
        if span.is_recording():
            if failure is not None and isinstance(failure, Exception):
                spans.record_failure(span, failure)
            elif failed_state is not None:
                span.set_attribute(sc.ERROR_TYPE, failed_state)
                span.set_status(Status(StatusCode.ERROR, f"task {failed_state}"))
    finally:
        span.end()


def attach(ctx: Context) -> Token[Context]:
    return context.attach(ctx)


def detach(token: Token[Context]) -> None:
    context.detach(token)
