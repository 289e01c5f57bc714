"""An OTLP/HTTP trace receiver on 127.0.0.1 that keeps what it is sent, as text: where a test looks for what
left the process (the OTLP re-export)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class OtlpSink:
    """``url`` to export to; ``received``: each request's spans as text. ``close()`` when done. A subclass that
    keeps trace requests another way overrides :meth:`receive`; one that takes other signals (metrics, logs)
    overrides :meth:`post`."""

    def __init__(self) -> None:
        self.received: list[str] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sink.post(self.path, self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def post(self, path: str, body: bytes) -> None:
        """Called on the server's thread with each POST's path and body; here every body is a trace export."""
        self.receive(ExportTraceServiceRequest.FromString(body))

    def receive(self, request: ExportTraceServiceRequest) -> None:
        """Called on the server's thread for each export request."""
        self.received.append(str(request))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
