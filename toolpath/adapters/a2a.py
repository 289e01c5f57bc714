"""The ``a2a-sdk`` (1.x): an agent called over Agent2Agent stays in the caller's trace and invocation.

    from toolpath.adapters import a2a as tp_a2a

    toolpath.init(...)
    tp_a2a.instrument()          # in the calling agent's process, and in the remote agent's

Client side (``a2a.client.BaseClient``, which ``ClientFactory`` and ADK's ``RemoteA2aAgent`` use):
``send_message`` becomes an ``a2a.client`` span whose trace context goes to the server as HTTP headers (the
call's service parameters). Server side (the SDK's request handlers, which ``to_a2a`` and the SDK's routes
use): each message is an ``a2a.server`` span under that context, naming the remote agent, current while the
request sets the agent's task going, so the remote agent's own spans (ADK's, toolpath's) nest under it. See
docs/instrumentations.md.

``a2a`` is imported only by :func:`instrument`; tracing never breaks a call (a failure inside it is logged).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from toolpath.adapters.method_patches import MethodPatches
from toolpath.tracer import a2a_spans, untraced

__all__ = ["instrument", "is_instrumented", "uninstrument"]

logger = logging.getLogger("toolpath.adapters.a2a")
_patches = MethodPatches("a2a", "the a2a-sdk SDK 1.x")
_FAILED_STATES = frozenset({"TASK_STATE_FAILED", "TASK_STATE_REJECTED"})
_PAYLOADS = ("task", "message", "status_update", "artifact_update")


def instrument() -> None:
    """Trace the A2A SDK's clients and request handlers from now on (idempotent)."""
    from a2a.client.base_client import BaseClient
    from a2a.server.request_handlers import DefaultRequestHandlerV2, LegacyRequestHandler

    with _patches.installing() as installed:
        if installed:
            return
        _patches.patch(BaseClient, "send_message", _traced_send_message)
        for handler in (DefaultRequestHandlerV2, LegacyRequestHandler):
            _patches.patch(handler, "on_message_send", _traced_on_message_send)
            _patches.patch(handler, "on_message_send_stream", _traced_on_message_send_stream)


def uninstrument() -> None:
    _patches.restore()


def is_instrumented() -> bool:
    return bool(_patches)


def _traced_send_message(original: Callable[..., Any]) -> Callable[..., Any]:
    async def send_message(self: Any, request: Any, *, context: Any = None) -> AsyncIterator[Any]:
        span = None
        try:
            span, headers = a2a_spans.start_client("SendMessage", _message_context_id(request))
            context = _with_headers(context, headers)
        except Exception:
            untraced.log_and_count(logger, "toolpath: tracing an A2A send_message failed; the call goes on untraced")
        if span is None:
            async for event in original(self, request, context=context):
                yield event
            return
        state = None
        try:
            async for event in original(self, request, context=context):
                state = _note(span, event) or state
                yield event
        except BaseException as exc:
            a2a_spans.finish(span, failure=exc)
            raise
        a2a_spans.finish(span, failed_state=state if state in _FAILED_STATES else None)

    return send_message


def _with_headers(context: Any, headers: dict[str, str]) -> Any:
    """The call context with the trace headers among its service parameters (sent as HTTP headers)."""
    from a2a.client.client import ClientCallContext

    if context is None:
        return ClientCallContext(service_parameters=headers)
    merged = {**(context.service_parameters or {}), **headers}
    return context.model_copy(update={"service_parameters": merged})


def _start_server(self: Any, params: Any, context: Any) -> tuple[Any, Any] | None:
    try:
        state = getattr(context, "state", None) or {}
        card = getattr(self, "_agent_card", None)
        return a2a_spans.start_server(
            "SendMessage", state.get("headers"), _message_context_id(params), getattr(card, "name", None) or None
        )
    except Exception:
        untraced.log_and_count(logger, "toolpath: tracing an A2A request failed; the request goes on untraced")
        return None


def _traced_on_message_send(original: Callable[..., Any]) -> Callable[..., Any]:
    async def on_message_send(self: Any, params: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        started = _start_server(self, params, context)
        if started is None:
            return await original(self, params, context, *args, **kwargs)
        span, ctx = started
        token = a2a_spans.attach(ctx)
        try:
            result = await original(self, params, context, *args, **kwargs)
        except BaseException as exc:
            a2a_spans.finish(span, failure=exc)
            raise
        finally:
            a2a_spans.detach(token)
        state = _note(span, result)
        a2a_spans.finish(span, failed_state=state if state in _FAILED_STATES else None)
        return result

    return on_message_send


def _traced_on_message_send_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def on_message_send_stream(self: Any, params: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        started = _start_server(self, params, context)
        stream = original(self, params, context, *args, **kwargs)
        if started is None:
            async for event in stream:
                yield event
            return
        span, ctx = started
        state = None
        try:
            # the agent's task is set going before the first event: only that step runs in the span's context
            # (a stream may be closed from another context, where a context attached here could not be detached)
            token = a2a_spans.attach(ctx)
            try:
                first = await stream.__anext__()
            finally:
                a2a_spans.detach(token)
            state = _note(span, first)
            yield first
            async for event in stream:
                state = _note(span, event) or state
                yield event
        except StopAsyncIteration:
            pass
        except BaseException as exc:
            a2a_spans.finish(span, failure=exc)
            raise
        a2a_spans.finish(span, failed_state=state if state in _FAILED_STATES else None)

    return on_message_send_stream


def _message_context_id(request: Any) -> str | None:
    message = getattr(request, "message", None)
    value = getattr(message, "context_id", None)
    return value if isinstance(value, str) and value else None


def _note(span: Any, event: Any) -> str | None:
    """Record the task an event names; returns the task's state name, if the event says it."""
    try:
        for name in _PAYLOADS:  # a StreamResponse: the one payload it holds
            if hasattr(event, "HasField") and name in type(event).DESCRIPTOR.fields_by_name and event.HasField(name):
                event = getattr(event, name)
                break
        fields = type(event).DESCRIPTOR.fields_by_name if hasattr(type(event), "DESCRIPTOR") else {}
        task_id = event.id if "status" in fields and "id" in fields else getattr(event, "task_id", None)
        a2a_spans.note_task(span, task_id or None, getattr(event, "context_id", None) or None)
        if "status" in fields and event.HasField("status"):
            from a2a.types import TaskState

            return str(TaskState.Name(event.status.state))
    except Exception:
        logger.debug("toolpath: an A2A event could not be read", exc_info=True)
    return None
