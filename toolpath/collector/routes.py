"""Requests the collector's ports serve beside OTLP, for APIs its command adds (``toolpath collect`` serves Vertex
AI's ``evaluateInstances`` this way): a POST route on the HTTP port, a unary method on the gRPC port.

The collector knows nothing of what they compute; it gives them what every request on its ports gets: the
``Host`` check on loopback, the head limit (431) and head deadline, the bearer token, a required content type,
the body limit (413) and a read deadline per chunk, and a thread of its pool, so the event loop keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from toolpath.collector.otlp_replies import Reply
from toolpath.config import DEFAULT_MAX_BODY_BYTES, MAX_HEAD_BYTES
from toolpath.errors import InternalSignal
from toolpath.hosts import is_loopback_host

__all__ = [
    "ROUTE_THREADS",
    "GrpcMethod",
    "PostRoute",
    "RouteServer",
    "RoutesApp",
    "RpcError",
    "read_body",
    "send_reply",
]

logger = logging.getLogger("toolpath.collector.http")
ROUTE_THREADS = 4
"""Requests to a port's extra routes (or gRPC methods) served at once, on threads apart from OTLP's."""
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class PostRoute:
    """``POST`` to a path ``pattern`` matches whole (the query string apart), answered by
    ``call(path, query, body)`` (``query``: the raw query string, decoded as Latin-1) with an HTTP status, a body
    of ``content_type`` and extra headers (``Retry-After``). ``refusal(status, message)`` is the body of an error
    the collector answers for the route before calling it (a missing token, a body too large), so that a client of
    the API reads every error in the API's own shape."""

    pattern: re.Pattern[str]
    call: Callable[[str, str, bytes], tuple[int, bytes, Mapping[str, str]]]
    refusal: Callable[[int, str], bytes]
    content_type: str = "application/json"

    def matches(self, path: str) -> bool:
        return self.pattern.fullmatch(path) is not None


class RpcError(InternalSignal):
    """What a :class:`GrpcMethod`'s ``call`` raises to answer with an error: a ``grpc.StatusCode`` name
    (``INVALID_ARGUMENT``) and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class GrpcMethod:
    """A unary gRPC method ``/<service>/<method>``: ``call`` gets the request's serialized message and returns the
    reply's, or raises :class:`RpcError`."""

    service: str
    method: str
    call: Callable[[bytes], bytes]


class RouteServer:
    """Answers requests to ``routes``: every check an OTLP export gets (but the ``Host`` and head size, which the
    app in front makes for every request), then the route's own answer from a thread of ``pool``."""

    def __init__(
        self,
        routes: Sequence[PostRoute],
        *,
        authorized: Callable[[str | None], bool],
        max_body_bytes: int,
        read_timeout: float,
        pool: ThreadPoolExecutor,
    ) -> None:
        self.routes = tuple(routes)
        self.authorized, self.max_body_bytes, self.read_timeout, self.pool = (
            authorized, max_body_bytes, read_timeout, pool,
        )  # fmt: skip

    def find(self, path: str) -> PostRoute | None:
        return next((route for route in self.routes if route.matches(path)), None)

    async def answer(self, route: PostRoute, scope: Scope, headers: dict[str, str], receive: Receive) -> Reply:
        """``headers`` with lowercase names."""

        def refuse(status: int, message: str, extra: dict[str, str] | None = None) -> Reply:
            return Reply(status, route.refusal(status, message), route.content_type, extra or {})

        if scope["method"] != "POST":
            return refuse(405, f"{scope['method']} {scope['path']}: only POST is served here", {"Allow": "POST"})
        if "transfer-encoding" in headers and "content-length" in headers:  # RFC 9112 §6.1: a smuggling attempt
            return refuse(400, "Content-Length together with Transfer-Encoding")
        if not self.authorized(headers.get("authorization")):
            return refuse(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != route.content_type:
            shown = repr(content_type) if content_type else "none"
            return refuse(415, f"content type {shown}: send {route.content_type}")
        encoding = (headers.get("content-encoding") or "identity").strip().lower()
        if encoding != "identity":
            return refuse(415, f"Content-Encoding {encoding!r}: send the body as it is")
        raw_length = headers.get("content-length")
        if raw_length is not None and not raw_length.strip().isdigit():
            return refuse(400, "bad Content-Length")
        if raw_length is not None and int(raw_length) > self.max_body_bytes:
            return refuse(413, f"body of {int(raw_length)} bytes is over the {self.max_body_bytes}-byte limit")
        body = await read_body(receive, self.max_body_bytes, self.read_timeout, refuse)
        if isinstance(body, Reply):
            return body
        path, query = scope["path"], (scope.get("query_string") or b"").decode("latin-1")

        def call() -> Reply:
            try:
                status, answer, extra = route.call(path, query, body)
            except Exception:  # a fault of the route's own: logged here, the client told no more than that
                logger.exception("toolpath: POST %s failed", path)
                return refuse(500, "internal error (logged by the server)")
            return Reply(status, answer, route.content_type, dict(extra))

        return await asyncio.get_running_loop().run_in_executor(self.pool, call)


class RoutesApp:
    """An ASGI app serving ``routes`` in front of ``other`` (``toolpath ui``): the head limit (431), the ``Host``
    check on loopback (403), then the routes behind the bearer ``token`` and the body limit; every other request
    goes to ``other`` as it came."""

    def __init__(
        self,
        routes: Sequence[PostRoute],
        other: Callable[[Scope, Receive, Send], Awaitable[None]],
        *,
        token: str | None,
        loopback_only: bool,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        read_timeout: float = 10.0,
        workers: int = ROUTE_THREADS,
    ) -> None:
        import hmac

        def authorized(header: str | None) -> bool:
            if not token:
                return True
            return header is not None and hmac.compare_digest(header.encode(), f"Bearer {token}".encode())

        self.other = other
        self.state = getattr(other, "state", None)
        self.loopback_only = loopback_only
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolpath-routes")
        self.server = RouteServer(
            routes, authorized=authorized, max_body_bytes=max_body_bytes, read_timeout=read_timeout, pool=self.pool
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self.server.find(scope["path"]) if scope["type"] == "http" else None
        if route is None:
            await self.other(scope, receive, send)
            return
        if sum(len(k) + len(v) + 4 for k, v in scope["headers"]) + len(scope.get("raw_path") or b"") > MAX_HEAD_BYTES:
            await send_reply(send, Reply(431, b"request head too large", "text/plain"))
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.loopback_only and not is_loopback_host(headers.get("host") or ""):
            await send_reply(send, Reply(403, b"host not allowed", "text/plain"))
            return
        await send_reply(send, await self.server.answer(route, scope, headers, receive))


async def read_body(receive: Receive, limit: int, timeout: float, refuse: Callable[[int, str], Reply]) -> bytes | Reply:
    """A request's body, read with a deadline per chunk and never past ``limit``; or ``refuse``'s reply (408: no
    data for ``timeout`` seconds, 413: too large; 499: the client went away)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), timeout)
        except TimeoutError:
            return refuse(408, f"no body data for {timeout:g} s")
        if message["type"] == "http.disconnect":
            return Reply(499)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return refuse(413, f"body is over the {limit}-byte limit")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def send_reply(send: Send, reply: Reply) -> None:
    if reply.status == 499:  # the client went away: nothing to answer
        return
    headers = [(b"Content-Type", reply.content_type.encode()), (b"Content-Length", str(len(reply.body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in reply.headers.items()]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})
