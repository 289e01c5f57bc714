"""The official ``mcp`` SDK: every ``tools/call`` traced on both sides, one trace across the process boundary.

    from toolpath.adapters import mcp as tp_mcp

    toolpath.init(...)
    tp_mcp.instrument()          # in the agent's process, and in the MCP server's (stdio or Streamable HTTP)

Client side (``mcp.ClientSession``): ``call_tool`` becomes a CLIENT span ``tools/call {tool}`` (or, when a
framework's ``execute_tool`` span of that tool is current — LangChain through ``langchain-mcp-adapters``, ADK's
``McpTool`` — that span gets the MCP attributes instead, so one call stays one span), and ``list_tools`` a light
``tools/list`` span; the trace context goes into the request's ``params._meta``. Server side (the low-level
``mcp.server.lowlevel.Server``, which ``FastMCP`` runs on): each ``tools/call`` becomes a SERVER span under the
context its ``_meta`` carries, current while the tool runs, with the result the client gets (``isError`` →
``error.type=tool_error``). See docs/instrumentations.md.

``mcp`` is imported only by :func:`instrument`. Tracing never breaks a session: a failure inside it is logged and
the call goes on untraced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from toolpath.adapters.method_patches import MethodPatches
from toolpath.tracer import mcp_spans, untraced

__all__ = ["instrument", "is_instrumented", "uninstrument"]

logger = logging.getLogger("toolpath.adapters.mcp")
_patches = MethodPatches("mcp", "the mcp SDK 1.x")


def instrument() -> None:
    """Trace the ``mcp`` SDK's client sessions and low-level servers from now on (idempotent)."""
    from mcp.client.session import ClientSession
    from mcp.server.lowlevel.server import Server

    with _patches.installing() as installed:
        if installed:
            return
        _patches.patch(ClientSession, "call_tool", _traced_call_tool)
        _patches.patch(ClientSession, "list_tools", _traced_list_tools)
        _patches.patch(Server, "_handle_request", _traced_handle_request)


def uninstrument() -> None:
    """Put the SDK's own methods back."""
    _patches.restore()


def is_instrumented() -> bool:
    return bool(_patches)


def _traced_call_tool(original: Callable[..., Any]) -> Callable[..., Any]:
    async def call_tool(
        self: Any,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: Any = None,
        progress_callback: Any = None,
        *,
        meta: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        try:
            # the id send_request gives this request: call_tool reaches it without awaiting anything first
            span, token = mcp_spans.start_client_call(name, arguments, getattr(self, "_request_id", None), None)
            meta = mcp_spans.inject(meta)
        except Exception:
            untraced.log_and_count(
                logger, "toolpath: tracing MCP tools/call %r failed; the call goes on untraced", name
            )
            return await original(self, name, arguments, read_timeout_seconds, progress_callback, meta=meta, **kwargs)
        try:
            result = await original(self, name, arguments, read_timeout_seconds, progress_callback, meta=meta, **kwargs)
        except BaseException as exc:
            _finish(span, token, failure=exc)
            raise
        _finish(span, token, result=result)
        return result

    return call_tool


def _traced_list_tools(original: Callable[..., Any]) -> Callable[..., Any]:
    async def list_tools(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            span, token = mcp_spans.start_light_call("tools/list", getattr(self, "_request_id", None), None)
        except Exception:
            untraced.log_and_count(logger, "toolpath: tracing MCP tools/list failed; the call goes on untraced")
            return await original(self, *args, **kwargs)
        try:
            listed = await original(self, *args, **kwargs)
        except BaseException as exc:
            _finish(span, token, failure=exc, record_result=False)
            raise
        _finish(span, token, record_result=False)
        return listed

    return list_tools


def _traced_handle_request(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _handle_request(self: Any, message: Any, req: Any, *args: Any, **kwargs: Any) -> Any:
        started = _start_server_call(message, req)
        if started is None:
            return await original(self, message, req, *args, **kwargs)
        span, token = started
        outcome: dict[str, Any] = {}
        respond = message.respond

        async def respond_and_record(response: Any) -> None:
            outcome["response"] = response
            await respond(response)

        try:
            message.respond = respond_and_record
        except Exception:  # a responder that takes no attribute: the span then records no result
            logger.debug("toolpath: MCP responder of request %r cannot be wrapped", getattr(message, "request_id", ""))
        try:
            return await original(self, message, req, *args, **kwargs)
        except BaseException as exc:
            outcome["failure"] = exc
            raise
        finally:
            _finish_server_call(span, token, outcome)

    return _handle_request


def _start_server_call(message: Any, req: Any) -> tuple[Any, Any] | None:
    """The SERVER span of a ``tools/call`` request (``None`` for any other request, or when tracing fails)."""
    try:
        from mcp import types

        if not isinstance(req, types.CallToolRequest):
            return None
        params = req.params
        meta = params.meta.model_dump() if params.meta is not None else None
        over_http = getattr(getattr(message, "message_metadata", None), "request_context", None) is not None
        return mcp_spans.start_server_call(
            params.name,
            params.arguments,
            getattr(message, "request_id", None),
            _session_id(message),
            mcp_spans.extract(meta),
            "tcp" if over_http else None,  # Streamable HTTP; a pipe or memory stream says nothing of itself
        )
    except Exception:
        untraced.log_and_count(logger, "toolpath: tracing an MCP server's tools/call failed; the call goes on untraced")
        return None


def _session_id(message: Any) -> str | None:
    """The Streamable HTTP session the request came in (its ``mcp-session-id`` header), if any."""
    request = getattr(getattr(message, "message_metadata", None), "request_context", None)
    headers = getattr(request, "headers", None)
    value = headers.get("mcp-session-id") if headers is not None else None
    return value if isinstance(value, str) else None


def _finish_server_call(span: Any, token: Any, outcome: dict[str, Any]) -> None:
    response = outcome.get("response")
    result = getattr(response, "root", response)  # a ServerResult wraps the CallToolResult
    failure = outcome.get("failure")
    if failure is None and result is not None and hasattr(result, "code") and hasattr(result, "message"):
        mcp_spans.finish_call(span, token, tool_error=str(result.message), error_type=str(result.code))
        return
    _finish(span, token, result=result, failure=failure)


def _finish(
    span: Any, token: Any, *, result: Any = None, failure: BaseException | None = None, record_result: bool = True
) -> None:
    try:
        if failure is not None:
            if not isinstance(failure, Exception):  # cancelled, or the process exits: no tool error
                mcp_spans.finish_call(span, token, record_result=False)
            else:
                mcp_spans.finish_call(span, token, failure=failure)
            return
        is_error = bool(getattr(result, "isError", False))
        mcp_spans.finish_call(
            span,
            token,
            mcp_spans.result_value(result) if record_result and result is not None else None,
            tool_error=mcp_spans.error_text(result) if is_error else None,
            record_result=record_result and result is not None and not is_error,
        )
    except Exception:
        logger.exception("toolpath: recording an MCP call's outcome failed")
