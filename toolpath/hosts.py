"""Whether a request's ``Host`` header names this machine's loopback interface (the DNS-rebinding check of the
collector, the UI and the MCP server when they listen on loopback), and whether it names the very port served; and
:func:`guard_port`, the guard in front of the UI's and the MCP server's ports (the head's size, then the Host)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from enum import Enum
from typing import Any

from toolpath.config import MAX_HEAD_BYTES

_Message = MutableMapping[str, Any]
_App = Callable[[_Message, Callable[[], Awaitable[_Message]], Callable[[_Message], Awaitable[None]]], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9.-]{1,253})(?::(?P<port>[0-9]{1,5}))?")
"""A ``Host`` header as RFC 9110 allows it: a name, an IPv4 address or a bracketed IPv6 one, and a port."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a ``Host`` header) is exactly a loopback name or address with an optional port:
    ``127.0.0.1:8765@evil.test`` or ``localhost.evil.test`` are not."""
    match = _HOST.fullmatch(host)
    return match is not None and _loopback_name(match.group("name"))


class HostCheck(Enum):
    """What a ``Host`` header says of the server that reads it (:func:`check_served_host`)."""

    SERVED = "served"
    """A loopback name or address, and the port served."""
    MALFORMED = "malformed"
    """Not a ``Host`` header at all (``127.0.0.1:8765@evil.test``): answered 400."""
    ELSEWHERE = "elsewhere"
    """Another name (``evil.test``, DNS rebinding) or another port: answered 421 (Misdirected Request)."""

    @property
    def refusal(self) -> tuple[int, str] | None:
        """The status and text a request with such a ``Host`` is answered (``None``: it is served)."""
        if self is HostCheck.MALFORMED:
            return 400, "bad Host header"
        if self is HostCheck.ELSEWHERE:
            return 421, "this server does not serve that host and port"
        return None


def check_served_host(host: str, port: int | None, *, default_port: int = 80) -> HostCheck:
    """Whether ``host`` (a ``Host`` header) names exactly the loopback server listening on ``port`` (``None``: any
    port). A header without a port names ``default_port`` (80 for ``http``, 443 for ``https``): a server on 8765
    reached as ``127.0.0.1`` is not the one asked for."""
    match = _HOST.fullmatch(host)
    if match is None:
        return HostCheck.MALFORMED
    if not _loopback_name(match.group("name")):
        return HostCheck.ELSEWHERE
    given = int(match.group("port")) if match.group("port") is not None else default_port
    return HostCheck.SERVED if port is None or given == port else HostCheck.ELSEWHERE


def host_refusal(host: str, server: Sequence[object] | None, scheme: str) -> tuple[int, str] | None:
    """The status and text a request to a loopback server is refused with for its ``Host`` header, ``None`` when
    it is served: ``server`` is where the request arrived (an ASGI scope's ``server``: address and port; ``None``
    checks the name only), ``scheme`` its ``http`` or ``https``. The one Host check of the UI and the MCP server."""
    port = server[1] if server else None
    served = port if isinstance(port, int) else None
    return check_served_host(host, served, default_port=443 if scheme == "https" else 80).refusal


def guard_port(app: _App, *, loopback_only: bool = True) -> _App:
    """``app`` (ASGI) behind the checks a port people's tools reach makes before anything else: a request head over
    :data:`~toolpath.config.MAX_HEAD_BYTES` gets 431 (uvicorn's own limit holds only a head that arrives in
    pieces), and on loopback (``loopback_only``) a ``Host`` that is not exactly this server's gets 400 or 421
    (:func:`host_refusal`); plain text, before ``app`` sees the request."""

    async def guard(
        scope: _Message, receive: Callable[[], Awaitable[_Message]], send: Callable[[_Message], Awaitable[None]]
    ) -> None:
        if scope["type"] == "http":
            wrong: tuple[int, str] | None = None
            if head_bytes(scope) > MAX_HEAD_BYTES:
                wrong = 431, "request head too large"
            elif loopback_only:
                host = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1")
                wrong = host_refusal(host, scope.get("server"), scope.get("scheme", "http"))
            if wrong is not None:
                status, text = wrong
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"text/plain")]})  # fmt: skip
                await send({"type": "http.response.body", "body": text.encode()})
                return
        await app(scope, receive, send)

    return guard


def head_bytes(scope: _Message) -> int:
    """The size of an ASGI request's head as received: its target and every header."""
    return (
        len(scope.get("raw_path") or b"")
        + len(scope.get("query_string") or b"")
        + sum(len(name) + len(value) + 4 for name, value in scope["headers"])
    )


def _loopback_name(name: str) -> bool:
    name = name.lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False
