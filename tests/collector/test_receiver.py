"""`toolpath collect` as a real process, fed by the real OTLP exporters from other processes."""

from __future__ import annotations

import gzip
import json
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.helpers import SPANS
from tests.helpers.collector import TOKEN, Collector
from toolpath.store.store import Store


@pytest.fixture
def collector(tmp_path):
    running = Collector(tmp_path).start()
    yield running
    running.stop()


@pytest.fixture(params=["1", "3"], ids=["one-process", "three-workers"])
def collectors(request, tmp_path):
    """One collector process, or three workers on one port (each request may reach any of them)."""
    running = Collector(tmp_path, None, "--workers", request.param).start()
    yield running
    running.stop()


AGENT_SCRIPT = """
import sys
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
{exporter_import}

provider = TracerProvider(resource=Resource.create({{"service.name": "remote-agent"}}))
provider.add_span_processor(BatchSpanProcessor({exporter}))
trace.set_tracer_provider(provider)

import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {{"city": city, "sky": "clear"}}

@toolpath.tool
def book(city: str) -> dict:
    raise ValueError("no rooms left")

@toolpath.agent(name="travel")
def travel(prompt: str) -> str:
    sky = get_weather("Lisbon")["sky"]
    try:
        book("Lisbon")
    except ValueError:
        pass
    return f"Lisbon is {{sky}}; no rooms."

travel("Trip to Lisbon?", session_id=sys.argv[1])
provider.shutdown()
"""


def run_agent_process(tmp_path: Path, exporter_import: str, exporter: str, session: str) -> None:
    script = tmp_path / "remote_agent.py"
    script.write_text(AGENT_SCRIPT.format(exporter_import=exporter_import, exporter=exporter))
    result = subprocess.run([sys.executable, str(script), session], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def assert_travel_session(store: Store, session: str) -> None:
    [inv] = store.get_session(session).invocations
    assert (inv.agent_name, inv.prompt, inv.response) == ("travel", "Trip to Lisbon?", "Lisbon is clear; no rooms.")
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("get_weather", {"city": "Lisbon"}, {"city": "Lisbon", "sky": "clear"}),
        ("book", {"city": "Lisbon"}, None),
    ]
    assert inv.tool_calls[1].error == "ValueError: no rooms left"
    assert inv.attributes["service.name"] == "remote-agent"


def test_http_protobuf_from_the_real_exporter(collector, tmp_path):
    run_agent_process(
        tmp_path,
        "from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter",
        f'OTLPSpanExporter(endpoint="{collector.url}/v1/traces", headers={{"authorization": "Bearer {TOKEN}"}})',
        "http-session",
    )
    assert_travel_session(collector.store(), "http-session")


def test_grpc_from_the_real_exporter(collector, tmp_path):
    run_agent_process(
        tmp_path,
        "from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter",
        f'OTLPSpanExporter(endpoint="127.0.0.1:{collector.grpc_port}", insecure=True, '
        f'headers={{"authorization": "Bearer {TOKEN}"}})',
        "grpc-session",
    )
    assert_travel_session(collector.store(), "grpc-session")


def test_json_gzip_and_the_rejections(collector):
    body = (SPANS / "otel-genai-langchain.shared.otlp.json").read_bytes()
    status, _, _ = collector.post(body, "application/json", token=None)
    assert status == 401
    status, _, _ = collector.post(body, "application/json", token="wrong")
    assert status == 401
    assert collector.store().counts()["spans"] == 0  # nothing stored without the token

    status, reply, _ = collector.post(b"{oops", "application/json")
    assert status == 400 and "not valid JSON" in json.loads(reply)["message"]
    status, _, _ = collector.post(b"\xff\xfe\x00garbage", "application/x-protobuf")
    assert status == 400
    status, _, _ = collector.post(body, "text/plain")
    assert status == 415
    status, _, _ = collector.post(gzip.compress(b"x" * (17 * 1024 * 1024)), "application/json", Content_Encoding="gzip")
    assert status == 413

    status, reply, _ = collector.post(gzip.compress(body), "application/json", Content_Encoding="gzip")
    assert status == 200 and json.loads(reply) == {}
    invocations = collector.store().get_session("home-session-0001").invocations
    assert [len(i.tool_calls) for i in invocations] == [2, 3]


def test_spans_split_across_requests_in_any_order(collectors):
    collector = collectors
    request = ExportTraceServiceRequest()
    request.ParseFromString((SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes())
    spans = [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]

    def send(chosen) -> int:
        part = ExportTraceServiceRequest()
        resource_spans = part.resource_spans.add()
        resource_spans.resource.CopyFrom(request.resource_spans[0].resource)
        resource_spans.scope_spans.add().spans.extend(chosen)
        return collector.post(part.SerializeToString())[0]

    roots = [s for s in spans if not s.parent_span_id]
    children = [s for s in spans if s.parent_span_id]
    assert send(children[::2]) == 200
    assert send(roots) == 200
    assert send(children[1::2]) == 200
    assert send(spans) == 200  # a retried export changes nothing
    store = collector.store()
    assert [len(i.tool_calls) for i in store.get_session("home-session-0001").invocations] == [2, 3]
    assert store.counts()["spans"] == len(spans)


def test_kill_9_right_after_200_loses_nothing(collectors):
    collector = collectors
    body = (SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes()
    assert collector.post(body)[0] == 200
    collector.stop(signal.SIGKILL)
    store = collector.store()
    assert store.counts()["spans"] == 13
    assert len(store.get_session("home-session-0001").invocations) == 2
    restarted = collector.start()
    assert restarted.post(body)[0] == 200
    assert collector.store().counts()["invocations"] == 2


def test_503_and_unavailable_while_writes_are_backed_up_then_nothing_lost(tmp_path):
    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

    # one process: --max-in-flight counts the exports of each worker
    collector = Collector(tmp_path, None, "--max-in-flight", "1", "--workers", "1").start()
    body = (SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes()
    blocker = sqlite3.connect(collector.db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database: the first export waits for it
    try:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(collector.post, body)
            time.sleep(1.0)  # the first export now holds the only write slot
            status, _, headers = collector.post(body)
            assert status == 503 and int(headers["Retry-After"]) > 0
            with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with pytest.raises(grpc.RpcError) as refused:
                    TraceServiceStub(channel).Export(request, metadata=[("authorization", f"Bearer {TOKEN}")])
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            blocker.execute("COMMIT")
            assert first.result(timeout=30)[0] == 200  # the export that waited is stored and acknowledged
        assert collector.post(body)[0] == 200  # the retry of a refused export: nothing changes, nothing lost
        store = collector.store()
        assert store.counts()["spans"] == 13
        assert [len(i.tool_calls) for i in store.get_session("home-session-0001").invocations] == [2, 3]
    finally:
        blocker.close()
        collector.stop()


def test_sigterm_shuts_down_cleanly(collector):
    collector.stop(signal.SIGTERM)
    assert collector.process.returncode == 0
    assert "stopped" in collector.process.stdout.read()
