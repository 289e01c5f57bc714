"""``toolpath mcp``'s server: the :class:`StoreTools` as MCP tools (the official ``mcp`` SDK's FastMCP), on stdio
or on Streamable HTTP. Over HTTP every request needs the bearer token, compared in constant time, and on loopback a
``Host`` that is not exactly a loopback name or address with the port served is refused (DNS rebinding; 400 when
it is no Host at all, 421 when it names another host or port), as by ``toolpath ui`` (SECURITY.md)."""

from __future__ import annotations

import functools
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from toolpath.errors import ConfigError
from toolpath.hosts import guard_port
from toolpath.mcp_server.store_tools import StoreTools

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
INSTRUCTIONS = (
    "toolpath's store of traced agent runs: list or search sessions, show a session's trajectory (each tool call "
    "with its arguments, result and error, in the model's order), score a session or an eval set."
)
READ_ONLY = ("list_sessions", "search_sessions", "show_trajectory", "score_session", "list_evalsets", "score_evalset")
WRITING = ("add_session_to_evalset",)


def build_server(tools: StoreTools, *, loopback_only: bool = True) -> Any:
    """A FastMCP server offering ``tools``' methods (the writing one only when they may write)."""
    try:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError as exc:
        raise ConfigError(f"toolpath mcp needs {exc.name or exc} (pip install 'toolpath[mcp]')") from None
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback_only,
        allowed_hosts=LOOPBACK_HOSTS if loopback_only else [],
        allowed_origins=[],
    )
    server = FastMCP("toolpath", instructions=INSTRUCTIONS, log_level="WARNING", transport_security=security)
    for name in READ_ONLY + (WRITING if tools.allow_write else ()):
        server.tool(name=name)(_in_thread(getattr(tools, name)))
    return server


def _in_thread(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` as an async tool that runs in a worker thread: store reads and agent runs block, and an agent
    may run an event loop of its own."""
    import anyio

    @functools.wraps(method)
    async def tool(**kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(functools.partial(method, **kwargs))

    return tool


def http_app(tools: StoreTools, *, token: str, loopback_only: bool = True) -> Any:
    """The Streamable HTTP app (at ``/mcp``) serving ``tools``: behind the head's size limit (431) and, on
    loopback, the exact ``Host`` check (400 or 421), then behind the bearer ``token`` (401)."""
    app = with_bearer_token(build_server(tools, loopback_only=loopback_only).streamable_http_app(), token)
    return guard_port(app, loopback_only=loopback_only)


def with_bearer_token(app: Callable[[Scope, Receive, Send], Awaitable[None]], token: str) -> Any:
    """``app`` answering 401 to an HTTP request without ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    return guarded
