"""Spans reach an OTLP backend through the real OTLP/HTTP exporter, configured the standard way."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

import toolpath


class OtlpSink(BaseHTTPRequestHandler):
    """A minimal OTLP/HTTP trace endpoint on loopback that keeps what it receives."""

    received: list[ExportTraceServiceRequest] = []  # noqa: RUF012 - shared by design, reset per test

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        OtlpSink.received.append((self.path, self.headers["Content-Type"], request))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def sink():
    OtlpSink.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), OtlpSink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@toolpath.tool
def charge(card: str, amount: float) -> dict:
    return {"charged": amount}


@toolpath.agent(name="shop")
def shop(prompt: str) -> str:
    charge("4111-1111", 9.5)
    return "paid"


def test_env_endpoint_exports_the_same_spans_with_redaction(sink, store_url, app_spans, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink)
    toolpath.init(store=store_url, redact_keys=["card"])
    shop("buy", session_id="otlp")
    assert toolpath.flush(timeout=10)
    spans = {
        span.name: span
        for path, content_type, request in OtlpSink.received
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    }
    assert {path for path, _, _ in OtlpSink.received} == {"/v1/traces"}
    assert {ct for _, ct, _ in OtlpSink.received} == {"application/x-protobuf"}
    assert set(spans) == {"invoke_agent shop", "execute_tool charge"}
    tool_attrs = {kv.key: kv.value.string_value for kv in spans["execute_tool charge"].attributes}
    assert json.loads(tool_attrs["gen_ai.tool.call.arguments"]) == {"card": "[REDACTED]", "amount": 9.5}
    assert spans["execute_tool charge"].parent_span_id == spans["invoke_agent shop"].span_id
    assert toolpath.stats()["spans_exported"] == 2


class Unavailable(BaseHTTPRequestHandler):
    """An OTLP endpoint that is up but refuses every export with 503 (the exporter retries with backoff)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_flush_honours_its_timeout_and_says_when_spans_were_not_delivered(tmp_path):
    import time

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        toolpath.init(store=f"sqlite:///{tmp_path / 's.db'}", otlp_endpoint=f"http://127.0.0.1:{server.server_port}")

        @toolpath.agent(name="bot")
        def bot(prompt: str) -> str:
            return "ok"

        for i in range(20):
            bot(f"hello {i}")
        started = time.monotonic()
        delivered = toolpath.flush(timeout=1.5)
        elapsed = time.monotonic() - started
        assert delivered is False  # the backend refused them: never "True with spans dropped"
        assert elapsed < 4.0, elapsed  # the exporter alone would retry for ~10 s
        assert toolpath.stats()["invocations_written"] == 20  # the store still got everything
        started = time.monotonic()
        toolpath.shutdown(timeout=1.0)
        assert time.monotonic() - started < 4.0
    finally:
        server.shutdown()
        server.server_close()


def test_flush_is_true_when_everything_was_delivered(sink, tmp_path):
    toolpath.init(store=f"sqlite:///{tmp_path / 's.db'}", otlp_endpoint=sink)

    @toolpath.agent(name="bot")
    def bot(prompt: str) -> str:
        return "ok"

    bot("hello")
    assert toolpath.flush(timeout=10) is True
