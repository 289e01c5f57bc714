"""``toolpath collect``: an OTLP trace receiver (HTTP ``POST /v1/traces`` and gRPC ``TraceService/Export``)
that stores spans and the invocations they make.

A success answer means the spans and the rebuilt invocations are committed: the write happens before the
reply, so a collector killed right after answering has lost nothing it acknowledged. Rules, as the OTLP
specification asks:

- protobuf and JSON bodies, gzip-compressed or not; the reply uses the request's encoding;
- a bad body is 400 / INVALID_ARGUMENT with a message, a body over the limit 413, a wrong or missing bearer
  token (when one is configured) 401 / UNAUTHENTICATED, and nothing is stored;
- when ``max_in_flight`` writes are already running, or the store fails, 503 with ``Retry-After`` /
  UNAVAILABLE, which OTLP exporters retry.
"""

from __future__ import annotations

import gzip
import hmac
import io
import logging
import threading
import zlib
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from toolpath.collector import otlp
from toolpath.collector.limits import Limits
from toolpath.collector.reconstruct import build_invocations
from toolpath.errors import ConfigError, ToolpathError
from toolpath.redact import Redactor
from toolpath.store.store import Store

logger = logging.getLogger("toolpath.collector.receiver")
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
TRACES_PATH = "/v1/traces"


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str = "application/x-protobuf"
    headers: dict[str, str] = field(default_factory=dict)


class Ingestor:
    """Decodes, stores and rebuilds; shared by the HTTP and gRPC front ends."""

    def __init__(self, store: Store, *, token: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 max_in_flight: int = 4, redactor: Redactor | None = None,
                 limits: Limits | None = None) -> None:  # fmt: skip
        self.store = store
        self.limits = limits or Limits()
        self.redactor = redactor
        """Applied to every span before it is stored (``None``: no redaction)."""
        self.token = token
        self.max_body_bytes = max_body_bytes
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._write_lock = threading.Lock()  # one writer: a trace's spans split across requests rebuild in turn
        self.spans_stored = 0

    def authorized(self, header: str | None) -> bool:
        if not self.token:
            return True
        expected = f"Bearer {self.token}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    def store_records(self, records: list[Any]) -> None:
        """Write records and rebuild their traces; raises ``Busy`` when too many writes are running."""
        if not records:
            return
        if not self._slots.acquire(blocking=False):
            raise Busy("too many exports in flight")
        try:
            with self._write_lock:
                if self.redactor is not None:
                    records = [self.redactor.span(r) for r in records]
                records = [self.limits.clip(r) for r in records]
                self.store.ingest(records, build_invocations, self.limits)
                self.spans_stored += len(records)
        finally:
            self._slots.release()

    def handle_http(self, path: str, headers: Any, read_body: Callable[[int], bytes]) -> Reply:
        """The whole HTTP exchange as a function of path, headers and body."""
        content_type = (headers.get("Content-Type") or "application/x-protobuf").split(";")[0].strip().lower()
        json_reply = content_type == "application/json"
        if path.split("?", 1)[0] != TRACES_PATH:
            return _error(404, f"no route {path}; OTLP traces go to {TRACES_PATH}", json_reply)
        if not self.authorized(headers.get("Authorization")):
            return _error(401, "missing or wrong bearer token", json_reply)
        if content_type not in ("application/x-protobuf", "application/protobuf", "application/json"):
            return _error(415, f"unsupported content type {content_type!r}", json_reply)
        try:
            length = int(headers.get("Content-Length") or 0)
        except ValueError:
            return _error(400, "bad Content-Length", json_reply)
        if length > self.max_body_bytes:
            return _error(413, f"body of {length} bytes is over the {self.max_body_bytes}-byte limit", json_reply)
        body = read_body(length)
        encoding = (headers.get("Content-Encoding") or "").strip().lower()
        if encoding == "gzip":
            try:
                body = _gunzip(body, self.max_body_bytes)
            except _TooLarge:
                return _error(413, f"decompressed body is over the {self.max_body_bytes}-byte limit", json_reply)
            except (OSError, EOFError, zlib.error):
                return _error(400, "body is not valid gzip", json_reply)
        elif encoding not in ("", "identity"):
            return _error(415, f"unsupported Content-Encoding {encoding!r}", json_reply)
        try:
            records = otlp.decode(body, content_type)
        except otlp.OtlpDecodeError as exc:
            return _error(400, str(exc), json_reply)
        try:
            self.store_records(records)
        except Busy as exc:
            return _error(503, str(exc), json_reply, retry_after=True)
        except Exception:
            logger.exception("toolpath: storing %d span(s) failed", len(records))
            return _error(503, "the store is unavailable", json_reply, retry_after=True)
        return _encode(ExportTraceServiceResponse(), 200, json_reply)


class Busy(ToolpathError):
    """Too many writes in flight: the client should retry."""


class _TooLarge(ToolpathError):
    pass


def _gunzip(body: bytes, limit: int) -> bytes:
    """Decompress, reading at most one byte past ``limit`` (a small bomb cannot exhaust memory)."""
    with gzip.GzipFile(fileobj=io.BytesIO(body)) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise _TooLarge
    return data


def _encode(message: Any, status: int, as_json: bool, headers: dict[str, str] | None = None) -> Reply:
    if as_json:
        body = json_format.MessageToJson(message, indent=None).encode()
        return Reply(status, body, "application/json", headers or {})
    return Reply(status, message.SerializeToString(), "application/x-protobuf", headers or {})


def _error(status: int, message: str, as_json: bool, *, retry_after: bool = False) -> Reply:
    grpc_code = {400: 3, 401: 16, 404: 5, 413: 3, 415: 3, 503: 14}.get(status, 2)
    return _encode(
        Status(code=grpc_code, message=message), status, as_json, {"Retry-After": "1"} if retry_after else None
    )


# --- HTTP ------------------------------------------------------------------------------------------------


def make_http_server(ingestor: Ingestor, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            reply = ingestor.handle_http(self.path, self.headers, self.rfile.read)
            if reply.status == 413:
                self.close_connection = True  # the body was not read
            self._send(reply)

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] == "/healthz":
                self._send(Reply(200, b'{"status": "ok"}', "application/json"))
            else:
                self._send(Reply(404, b"not found", "text/plain"))

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s " + format, self.address_string(), *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = False  # server_close() then waits for requests in flight (graceful shutdown)
    return server


# --- gRPC ------------------------------------------------------------------------------------------------


def make_grpc_server(ingestor: Ingestor, host: str, port: int) -> Any:
    import grpc

    class Servicer(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> ExportTraceServiceResponse:
            metadata = dict(context.invocation_metadata())
            if not ingestor.authorized(metadata.get("authorization")):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
            try:
                records = otlp.records(request)
            except otlp.OtlpDecodeError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            try:
                ingestor.store_records(records)
            except Busy as exc:
                context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
            except Exception:
                logger.exception("toolpath: storing %d span(s) failed", len(records))
                context.abort(grpc.StatusCode.UNAVAILABLE, "the store is unavailable")
            return ExportTraceServiceResponse()

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="toolpath-grpc"),
        options=[("grpc.max_receive_message_length", ingestor.max_body_bytes)],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Servicer(), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise ConfigError(f"cannot bind gRPC on {host}:{port}")
    return server
