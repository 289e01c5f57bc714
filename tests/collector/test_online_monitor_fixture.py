"""Traffic as Google's Agent Platform online monitor reads it (GenAI semconv 1.39: ``invoke_agent`` spans with the
agent's name, description and conversation id; the content only in ``gen_ai.client.inference.operation.details``
log events) rebuilds into its conversations and their turns when sent to the collector over OTLP.

The recordings (``tests/fixtures/spans/recorders/record_online_monitor.py``) are a real ADK agent run with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and content captured as events only: a scripted model
in ADK's 2.x telemetry schema and in its first one, and a Gemini model (served on 127.0.0.1) whose calls
opentelemetry-instrumentation-google-genai records."""

from __future__ import annotations

import json
import urllib.request

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse

from tests.helpers import SPANS
from tests.helpers.collector import TOKEN, free_port, post_traces, serving
from toolpath.collector.genai_logs import decode_logs
from toolpath.collector.otlp import decode
from toolpath.collector.reconstruct import build_invocations
from toolpath.store.store import Store

SOURCES = ["adk-online-monitor", "adk-online-monitor-legacy", "adk-online-monitor-genai"]
DETAILS = "gen_ai.client.inference.operation.details"
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")


def fixture(source: str, name: str) -> bytes:
    return (SPANS / f"{source}.scenarios.{name}").read_bytes()


def expected(source: str) -> dict:
    return json.loads(fixture(source, "expected.json"))


def post_logs(url: str, body: bytes, content_type: str) -> tuple[int, ExportLogsServiceResponse]:
    request = urllib.request.Request(f"{url}/v1/logs", data=body, method="POST")
    request.add_header("Content-Type", content_type)
    request.add_header("Authorization", f"Bearer {TOKEN}")
    with urllib.request.urlopen(request, timeout=30) as reply:
        status, body = reply.status, reply.read()
    if content_type == "application/json":  # OTLP/JSON is answered in JSON
        return status, json_format.Parse(body, ExportLogsServiceResponse())
    return status, ExportLogsServiceResponse.FromString(body)


def turn(invocation) -> tuple:
    calls = [(c.name, c.args, None if c.error else c.result, bool(c.error)) for c in invocation.tool_calls]
    return invocation.agent_name, invocation.prompt, invocation.response, calls


def truth(source: str, recorded: dict) -> tuple:
    calls = [(c["name"], c["args"], None if c["error"] else c["result"], c["error"]) for c in recorded["tool_calls"]]
    return expected(source)["agent_name"], recorded["prompt"], recorded["response"], calls


@pytest.mark.parametrize("source", SOURCES)
def test_the_recording_is_the_online_monitor_contract(source):
    """What the test below relies on: the agent spans name the agent, its description and the conversation; the
    spans carry no content; every model call has its details event, with structured (not stringified) messages,
    system instructions and tool definitions with their parameters."""
    want = expected(source)
    spans = decode(fixture(source, "otlp.pb"), "application/x-protobuf")
    agents = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert len(agents) == len(want["invocations"])
    for span in agents:
        assert span.name == f"invoke_agent {want['agent_name']}"
        assert span.attributes["gen_ai.agent.name"] == want["agent_name"]
        assert span.attributes["gen_ai.agent.description"] == want["agent_description"]
        assert span.attributes["gen_ai.conversation.id"].startswith("guest-conversation-")
    assert not any(key in s.attributes for s in spans for key in CONTENT)
    models = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "generate_content"]
    recorder = "opentelemetry.instrumentation.google_genai" if source.endswith("-genai") else "gcp.vertex.agent"
    assert {s.scope for s in models} == {recorder}  # a Gemini model's calls: the OTel instrumentation's spans
    request = ExportLogsServiceRequest.FromString(fixture(source, "logs.pb"))
    records = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert [r.event_name for r in records] == [DETAILS] * len(models)
    assert {r.span_id.hex() for r in records} == {s.span_id for s in models}
    for record in records:
        kinds = {kv.key: kv.value.WhichOneof("value") for kv in record.attributes}
        assert {kinds[key] for key in (*CONTENT, "gen_ai.tool.definitions")} == {"array_value"}
    events = decode_logs(fixture(source, "logs.pb"), "application/x-protobuf").records
    [definitions] = {json.dumps(e.attributes["gen_ai.tool.definitions"]) for e in events}
    assert json.loads(definitions)[0]["parameters"]["properties"] == {
        "booking_id": {"title": "Booking Id", "type": "string"}
    }
    assert all(want["system_instruction"] in e.attributes["gen_ai.system_instructions"][0]["content"] for e in events)
    assert [i.prompt for i in build_invocations(spans)] == [None] * len(agents)  # the content is in the events only


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(("encoding", "logs_first"), [("pb", True), ("json", False)])
def test_the_collector_rebuilds_each_conversation_and_its_turns(tmp_path, source, encoding, logs_first):
    want = expected(source)
    content_type = "application/x-protobuf" if encoding == "pb" else "application/json"
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with serving(store, token=TOKEN) as service:
        url = f"http://127.0.0.1:{service.options.http_port}"
        for kind in ["logs", "traces"] if logs_first else ["traces", "logs"]:
            if kind == "logs":
                status, reply = post_logs(url, fixture(source, f"logs.{encoding}"), content_type)
                assert status == 200 and not reply.HasField("partial_success")
            else:
                assert post_traces(url, fixture(source, f"otlp.{encoding}"), content_type)[0] == 200
    conversations = sorted({w["session_id"] for w in want["invocations"]})
    assert sorted(s["session_id"] for s in store.list_sessions()) == conversations
    for conversation in conversations:
        session = store.get_session(conversation)
        assert session is not None and session.agent_name == want["agent_name"]
        recorded = [w for w in want["invocations"] if w["session_id"] == conversation]
        assert [i.trace_id for i in session.invocations] == [w["trace_id"] for w in recorded]
        assert [turn(i) for i in session.invocations] == [truth(source, w) for w in recorded]
        for invocation in session.invocations:
            assert not invocation.attributes.get("toolpath.content_missing")
            assert invocation.attributes["gen_ai.agent.description"] == want["agent_description"]
            assert all(c.agent_name == want["agent_name"] for c in invocation.tool_calls)
    kept = [s for s in store.spans_of_trace(want["invocations"][0]["trace_id"]) if "toolpath.log_event" in s.attributes]
    assert kept and all(
        want["system_instruction"] in s.attributes["gen_ai.system_instructions"][0]["content"] for s in kept
    )
    assert all(len(s.attributes["gen_ai.tool.definitions"]) == 4 for s in kept)  # stored with the events
    [failed] = [c for i in store.list_invocations() for c in i.tool_calls if c.error]
    assert (failed.name, failed.args) == ("room_price", {"room": "penthouse"})
    assert "no room named penthouse" in failed.error


def test_turns_sent_one_export_at_a_time_over_grpc_rebuild_the_same(tmp_path):
    """As a batching exporter sends them: each turn's spans and then its events in exports of their own, over
    OTLP/gRPC; every turn is rebuilt once its events arrive."""
    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    source = "adk-online-monitor"
    want = expected(source)
    traces = ExportTraceServiceRequest.FromString(fixture(source, "otlp.pb"))
    logs = ExportLogsServiceRequest.FromString(fixture(source, "logs.pb"))
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    with (
        serving(store, token=TOKEN, grpc_port=free_port()) as service,
        grpc.insecure_channel(f"127.0.0.1:{service.options.grpc_port}") as channel,
    ):
        send_spans = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        send_logs = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
        for recorded in want["invocations"]:
            trace_id = bytes.fromhex(recorded["trace_id"])
            spans, events = ExportTraceServiceRequest(), ExportLogsServiceRequest()
            spans.CopyFrom(traces)
            events.CopyFrom(logs)
            for scope in (s for r in spans.resource_spans for s in r.scope_spans):
                kept = [s for s in scope.spans if s.trace_id == trace_id]
                del scope.spans[:]
                scope.spans.extend(kept)
            for scope in (s for r in events.resource_logs for s in r.scope_logs):
                kept_records = [r for r in scope.log_records if r.trace_id == trace_id]
                del scope.log_records[:]
                scope.log_records.extend(kept_records)
            send_spans(spans.SerializeToString(), metadata=metadata, timeout=30)
            reply = ExportLogsServiceResponse.FromString(
                send_logs(events.SerializeToString(), metadata=metadata, timeout=30)
            )
            assert reply.partial_success.rejected_log_records == 0
    got = sorted(store.list_invocations(), key=lambda i: i.started_at)
    assert [(i.session_id, *turn(i)) for i in got] == [
        (w["session_id"], *truth(source, w)) for w in want["invocations"]
    ]


@pytest.mark.parametrize("source", ["adk-v2", "adk-v1"])
def test_a_turn_keeps_its_own_agents_description_never_a_sub_agents(source):
    """The home agent has an empty description; its sub-agents (an AgentTool, a transfer target) have theirs: no
    turn takes a sub-agent's for its agent's."""
    spans = decode(fixture(source, "otlp.pb"), "application/x-protobuf")
    described = {s.attributes["gen_ai.agent.name"] for s in spans if s.attributes.get("gen_ai.agent.description")}
    assert described == {"energy_advisor", "thermostat_expert"}
    invocations = build_invocations(spans)
    assert any(i.answered_by == "thermostat_expert" for i in invocations)
    assert [i.attributes.get("gen_ai.agent.description") for i in invocations] == [None] * len(invocations)


def test_turns_scored_before_their_events_came_are_scored_again_with_their_content(tmp_path):
    """A batching exporter may send the logs after the spans: a turn an online evaluator scored from its spans alone
    (no response yet) is scored again once its events make it whole."""
    import time

    from tests.helpers.collector import Collector
    from toolpath.store import schema as t

    source = "adk-online-monitor"
    want = expected(source)
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps({"prompt": w["prompt"], "reference": w["response"]}) + "\n"
                              for w in want["invocations"]))  # fmt: skip
    (tmp_path / "online.toml").write_text(
        f'metrics = ["exact_match"]\npoll_seconds = 0.05\nreference_dataset = "{golden.as_posix()}"\n'
    )
    collector = Collector(tmp_path, None, "--online", str(tmp_path / "online.toml")).start()
    try:
        store = collector.store()

        def labels() -> list[tuple[str, str]]:
            with store.engine.connect() as conn:
                return sorted((r.label, r.explanation or "") for r in conn.execute(t.online_results.select()))

        def wait_for(expected_labels: list[tuple[str, str]]) -> None:
            deadline = time.monotonic() + 60
            while labels() != expected_labels:
                assert time.monotonic() < deadline, labels()
                time.sleep(0.05)

        assert post_traces(collector.url, fixture(source, "otlp.pb"))[0] == 200
        wait_for([("error", "row has no 'response'")] * len(want["invocations"]))
        status, reply = post_logs(collector.url, fixture(source, "logs.pb"), "application/x-protobuf")
        assert status == 200 and not reply.HasField("partial_success")
        wait_for([("pass", "identical")] * len(want["invocations"]))
    finally:
        collector.stop()
    assert [i.response for i in sorted(store.list_invocations(), key=lambda i: i.started_at)] == [
        w["response"] for w in want["invocations"]
    ]
    store.close()


def test_toolpath_ingest_reads_the_events_from_an_otlp_json_logs_file(tmp_path):
    """The OpenTelemetry Collector's ``file`` exporter writes the logs apart from the traces: ``toolpath ingest``
    takes both files (the logs file first here) and rebuilds the turns as the collector does."""
    import subprocess
    import sys

    source = "adk-online-monitor"
    want = expected(source)
    logs = ExportLogsServiceRequest.FromString(fixture(source, "logs.pb"))
    lines = tmp_path / "otel-logs.jsonl"  # one export per turn, as a batching exporter sends them
    per_turn = []
    with lines.open("w") as out:
        for recorded in want["invocations"]:
            request = ExportLogsServiceRequest()
            request.CopyFrom(logs)
            for scope in (s for r in request.resource_logs for s in r.scope_logs):
                kept = [r for r in scope.log_records if r.trace_id.hex() == recorded["trace_id"]]
                del scope.log_records[:]
                scope.log_records.extend(kept)
            out.write(json.dumps(json_format.MessageToDict(request)) + "\n")  # base64 ids, as protobuf's JSON has
            per_turn.append(request.SerializeToString())
    traces = SPANS / f"{source}.scenarios.otlp.json"
    db = tmp_path / "s.db"
    done = subprocess.run(
        [sys.executable, "-m", "toolpath.cli", "ingest", str(lines), str(traces), "--store", f"sqlite:///{db}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())  # the console wraps long lines
    assert "otel-logs.jsonl (otlp-json-lines): 10 span(s)" in said  # the GenAI events, kept as records
    assert "5 invocation(s) in 2 session(s)" in said
    store = Store(f"sqlite:///{db}")
    got = sorted(store.list_invocations(), key=lambda i: i.started_at)
    assert [(i.session_id, *turn(i)) for i in got] == [
        (w["session_id"], *truth(source, w)) for w in want["invocations"]
    ]
    store.close()
    from toolpath.collector.trace_files import read_trace_file

    document = read_trace_file(SPANS / f"{source}.scenarios.logs.json")  # one request, hex ids
    assert document.spans == 10 and not document.bad and not document.rejected
    framed = tmp_path / "otel-logs.pb"  # the Collector's file exporter with format: proto, one export per turn
    framed.write_bytes(b"".join(len(m).to_bytes(4, "big") + m for m in per_turn))
    read = read_trace_file(framed)
    assert (read.format, read.spans, read.bad, read.rejected) == ("otlp-protobuf-framed", 10, [], [])
    assert read_trace_file(SPANS / f"{source}.scenarios.logs.pb").spans == 10
    other = tmp_path / "plain.jsonl"
    other.write_text(json.dumps({"resourceMetrics": []}) + "\n" + lines.read_text().splitlines()[0] + "\n")
    done = subprocess.run([sys.executable, "-m", "toolpath.cli", "ingest", str(other), "--store", f"sqlite:///{db}"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "line 1: not an OTLP ExportTraceServiceRequest" in " ".join(done.stderr.split())
