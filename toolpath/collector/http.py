"""The collector's HTTP front end: an ASGI app served by uvicorn.

uvicorn does the HTTP/1.1 framing (Content-Length, chunked bodies, keep-alive, unread bodies), caps connections,
closes idle keep-alive connections, and shuts down gracefully; this app adds what OTLP and a service on a
developer's machine need on top:

- a body is read with a deadline per chunk (a client that stops sending is cut off, it does not hold a worker)
  and never past ``max_body_bytes`` (413), whatever the headers say;
- a request without a content type is refused (415), so a page in a browser cannot post spans with a "simple"
  cross-origin request; and when the collector listens on loopback, a ``Host`` header that is not a loopback name
  is refused (403), which stops DNS rebinding;
- decoding, storing and rebuilding run in a thread pool, so the event loop keeps serving;
- the :class:`~toolpath.collector.routes.PostRoute` s its command adds are served with all of the above and the
  token, their errors in their own shape;
- ``GET /healthz`` (the process serves) and ``GET /readyz`` (store reachable, schema at head, online workers
  running; 503 with a JSON reason otherwise) need no token, as orchestrators probe them; ``GET /metrics``
  (Prometheus text format) is behind the token when one is set.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolpath.collector.genai_logs import LOGS_PATH
from toolpath.collector.handoff import take_connections
from toolpath.collector.ingestor import TRACES_PATH, Ingestor
from toolpath.collector.otlp_replies import Reply, error_reply
from toolpath.collector.prometheus import CONTENT_TYPE
from toolpath.collector.routes import ROUTE_THREADS, PostRoute, RouteServer, read_body, send_reply
from toolpath.config import MAX_HEAD_BYTES
from toolpath.errors import ConfigError
from toolpath.hosts import LOOPBACK_NAMES, is_loopback_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

READY_TIMEOUT = 5.0
BACKLOG = 2048
Readiness = Callable[[], tuple[bool, dict[str, Any]]]


_OWN_PATHS = frozenset({TRACES_PATH, LOGS_PATH, "/healthz", "/readyz", "/metrics"})
"""What this app answers itself when another app (the UI) is mounted beside it."""


class OtlpHttpApp:
    """``POST /v1/traces`` and ``/v1/logs`` (protobuf or JSON, gzip or not), ``GET /healthz``, ``/readyz``,
    ``/metrics``, and the ``routes`` given; any other path goes to ``other`` when given (an ASGI app mounted
    beside OTLP: ``toolpath collect --ui``)."""

    def __init__(
        self,
        ingestor: Ingestor,
        *,
        loopback_only: bool,
        read_timeout: float = 10.0,
        workers: int = 8,
        ready: Readiness | None = None,
        other: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None,
        routes: Sequence[PostRoute] = (),
    ) -> None:
        self.ingestor = ingestor
        self.ready = ready
        self.other = other
        self.loopback_only = loopback_only
        self.read_timeout = read_timeout
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolpath-ingest")
        self.routes = RouteServer(
            routes,
            authorized=ingestor.authorized,
            max_body_bytes=ingestor.max_body_bytes,
            read_timeout=read_timeout,
            pool=ThreadPoolExecutor(max_workers=ROUTE_THREADS, thread_name_prefix="toolpath-routes"),
        )  # threads of their own: a slow route (a judge model's reply) never holds up an export

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if sum(len(k) + len(v) + 4 for k, v in scope["headers"]) + len(scope.get("raw_path") or b"") > MAX_HEAD_BYTES:
            await send_reply(send, Reply(431, b"request head too large", "text/plain"))
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        if self.loopback_only and not _loopback_host(headers.get("host")):
            await send_reply(send, Reply(403, b"host not allowed", "text/plain"))
            return
        route = self.routes.find(path)
        if route is not None:
            await send_reply(send, await self.routes.answer(route, scope, headers, receive))
            return
        if self.other is not None and path not in _OWN_PATHS:  # probes and scrapes answer whatever else is mounted
            await self.other(scope, receive, send)
            return
        if scope["method"] == "GET":
            await send_reply(send, await self._get(path, headers))
            return
        if scope["method"] != "POST":
            await send_reply(send, Reply(405, b"method not allowed", "text/plain", {"Allow": "GET, POST"}))
            return
        started = time.perf_counter()
        reply = await self._post(path, headers, receive)
        self.ingestor.metrics.request("http", reply.status, started)
        await send_reply(send, reply)

    async def _post(self, path: str, headers: dict[str, str], receive: Receive) -> Reply:
        if "transfer-encoding" in headers and "content-length" in headers:  # RFC 9112 §6.1: a smuggling attempt
            return Reply(400, b"Content-Length together with Transfer-Encoding", "text/plain")
        refusal = self.ingestor.check_request(path, headers)
        if refusal is not None:
            return refusal
        body = await self._read_body(receive, headers)
        if isinstance(body, Reply):
            return body
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, self.ingestor.handle_body, headers, body, path)

    async def _get(self, path: str, headers: dict[str, str]) -> Reply:
        loop = asyncio.get_running_loop()
        if path == "/healthz":
            return Reply(200, b'{"status": "ok"}', "application/json")
        if path == "/readyz":
            if self.ready is None:
                return Reply(200, b'{"status": "ready"}', "application/json")
            try:
                ok, body = await asyncio.wait_for(loop.run_in_executor(self.pool, self.ready), READY_TIMEOUT)
            except TimeoutError:
                ok, body = False, {"status": "unavailable", "reason": f"checks took over {READY_TIMEOUT:g} s"}
            return Reply(200 if ok else 503, json.dumps(body).encode(), "application/json")
        if path == "/metrics":
            if not self.ingestor.authorized(headers.get("authorization")):
                return Reply(401, b"missing or wrong bearer token", "text/plain", {"WWW-Authenticate": "Bearer"})
            exposition = await loop.run_in_executor(self.pool, self.ingestor.metrics.expose)
            return Reply(200, exposition, CONTENT_TYPE)
        return Reply(404, b"not found", "text/plain")

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes | Reply:
        """The body, or the reply refusing it in OTLP's shape (408: a chunk took too long, 413: too large)."""
        as_json = headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
        refuse = functools.partial(error_reply, as_json=as_json)
        return await read_body(receive, self.ingestor.max_body_bytes, self.read_timeout, refuse)


def _loopback_host(host: str | None) -> bool:
    return is_loopback_host(host or "")


HEADER_SECONDS = 5.0
"""How long a connection may take to send a whole request head (from connecting, or from its last response)."""


@functools.cache
def header_deadline_protocol(seconds: float) -> type:
    """uvicorn's HTTP/1.1 protocol with a deadline on request heads: a connection that has not sent a complete
    request line and headers ``seconds`` after connecting (or after its previous response) is closed, so slowly
    dribbled headers (slowloris) hold no connection for long and real requests keep being served."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state not in (h11.IDLE, h11.DONE):  # a request head arrived
                self._cancel_head()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_head()
            super().connection_lost(exc)

        def _await_head(self) -> None:
            self._cancel_head()
            self._head_timer = self.loop.call_later(seconds, self._head_too_slow)

        def _cancel_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and self.conn.their_state in (h11.IDLE, h11.DONE) and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline


class HttpServer:
    """uvicorn on a socket bound here (so a port in use is an error now, not a log line in a thread), served from
    a thread; ``shutdown`` stops accepting, closes idle keep-alive connections and finishes requests in flight."""

    def __init__(
        self,
        ingestor: Ingestor,
        host: str,
        port: int,
        *,
        max_connections: int = 1024,
        header_seconds: float = HEADER_SECONDS,
        keep_alive_seconds: float = 5.0,
        graceful_seconds: float = 10.0,
        read_timeout: float = 10.0,
        ready: Readiness | None = None,
        log_to_root: bool = False,
        other: Any = None,
        routes: Sequence[PostRoute] = (),
        channel: socket.socket | None = None,
    ) -> None:
        import uvicorn

        logging: dict[str, Any] = {"log_config": None} if log_to_root else {}
        self._channel = channel
        """Where a parent process deals this worker its connections (:mod:`toolpath.collector.handoff`); ``None``:
        this server binds ``host:port`` and accepts its own."""
        self.socket = bind(host, port) if channel is None else None
        self._port = port
        app = OtlpHttpApp(
            ingestor,
            loopback_only=_is_loopback_bind(host),
            read_timeout=read_timeout,
            ready=ready,
            other=other,
            routes=routes,
        )
        self._app = app
        config = uvicorn.Config(
            app,
            lifespan="off",
            # log_to_root: uvicorn's error and access logs go to the root logger's handlers (JSON logs)
            log_level="info" if log_to_root else "warning",
            access_log=log_to_root,
            **logging,
            http=header_deadline_protocol(header_seconds),
            timeout_keep_alive=int(keep_alive_seconds),
            limit_concurrency=max_connections,
            timeout_graceful_shutdown=int(graceful_seconds),
            h11_max_incomplete_event_size=64 * 1024,
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="toolpath-http", daemon=True)

    @property
    def port(self) -> int:
        return self._port if self.socket is None else int(self.socket.getsockname()[1])

    def _serve(self) -> None:
        if self.socket is not None:
            asyncio.run(self.server.serve(sockets=[self.socket]))
        elif self._channel is not None:
            asyncio.run(self._serve_dealt(self._channel))

    async def _serve_dealt(self, channel: socket.socket) -> None:
        """uvicorn with no socket of its own, serving each connection the parent deals (its protocol made as
        uvicorn makes it for a socket it accepts on)."""
        server = self.server
        serving = asyncio.create_task(server.serve(sockets=[]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.005)
        if server.started:
            config = server.config
            make: Any = config.http_protocol_class  # uvicorn's protocol class, made as uvicorn makes it
            protocol = functools.partial(make, config=config, server_state=server.server_state,
                                         app_state=server.lifespan.state)  # fmt: skip
            stop_taking = take_connections(asyncio.get_running_loop(), channel, protocol)
            try:
                await serving
            finally:
                stop_taking()
        else:
            await serving

    def start(self) -> HttpServer:
        self._thread.start()
        return self

    def shutdown(self, timeout: float = 15.0) -> None:
        self.server.should_exit = True
        self._thread.join(timeout)
        self._app.pool.shutdown(wait=True)
        self._app.routes.pool.shutdown(wait=True)
        for sock in (self.socket, self._channel):
            if sock is not None:
                sock.close()


def bind(host: str, port: int, *, listen: bool = True) -> socket.socket:
    """A non-blocking socket bound to ``host:port``, listening unless told not to (a parent binds the socket it
    listens on once its workers serve); a :class:`ConfigError` when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(BACKLOG)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    sock.setblocking(False)
    return sock


def _is_loopback_bind(host: str) -> bool:
    return host in LOOPBACK_NAMES or is_loopback_host(host)


__all__ = ["BACKLOG", "TRACES_PATH", "HttpServer", "OtlpHttpApp", "bind"]
