"""GenAI events sent as OTLP logs (ADK with content captured as events only) are joined to their spans by trace
and span id, over HTTP and gRPC, in either order of arrival: the prompts, tool arguments, results and responses
the spans lack come from them, and the run rebuilds as it does when ADK puts the content on its spans."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

from tests.helpers.collector import TOKEN, free_port, post_traces, serving
from toolpath.collector.genai_logs import decode_logs
from toolpath.collector.otlp import decode
from toolpath.collector.reconstruct import build_invocations
from toolpath.store.store import Store

ROOT = Path(__file__).resolve().parents[2]
EVENT_ONLY = {
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
}
IN_SPANS = {
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "true",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
}


def record(folder: Path, capture: dict[str, str], **env: str) -> tuple[bytes, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, **capture, **env, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tests.helpers.adk_log_events", str(folder)], env=environment,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return (folder / "traces.pb").read_bytes(), (folder / "logs.pb").read_bytes()


def seen(invocations) -> list:
    return [(i.prompt, i.response, [(c.name, c.args, c.result) for c in i.tool_calls]) for i in invocations]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    base = tmp_path_factory.mktemp("adk-events")
    return record(base / "events", EVENT_ONLY), record(base / "spans", IN_SPANS)


def post_logs(url: str, body: bytes, content_type: str = "application/x-protobuf") -> tuple[int, bytes]:
    request = urllib.request.Request(f"{url}/v1/logs", data=body, method="POST")
    request.add_header("Content-Type", content_type)
    request.add_header("Authorization", f"Bearer {TOKEN}")
    with urllib.request.urlopen(request, timeout=10) as reply:
        return reply.status, reply.read()


def test_events_fill_in_what_the_spans_lack_as_content_on_spans_would(recordings):
    (traces, logs), (content_traces, _) = recordings
    spans_only = build_invocations(decode(traces, "application/x-protobuf"))
    assert spans_only[0].prompt is None and spans_only[0].attributes.get("toolpath.content_missing")
    events = decode_logs(logs, "application/x-protobuf")
    assert events.records and not events.rejected
    joined = build_invocations(decode(traces, "application/x-protobuf") + events.records)
    truth = build_invocations(decode(content_traces, "application/x-protobuf"))
    assert seen(joined) == seen(truth)
    assert joined[0].tool_calls[0].args == {"device_id": "light-hall"} and joined[0].tool_calls[0].result
    assert not joined[0].attributes.get("toolpath.content_missing")


def test_adk_schema_1_message_events_fill_in_the_spans_too(tmp_path):
    """ADK's first telemetry schema sends gen_ai.system.message, gen_ai.user.message (a google-genai Content per
    message, tool responses among them) and gen_ai.choice events instead of operation details."""
    v1 = {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}
    traces, logs = record(tmp_path / "events", EVENT_ONLY, **v1)
    content_traces, _ = record(tmp_path / "spans", IN_SPANS, **v1)
    events = decode_logs(logs, "application/x-protobuf")
    names = {r.attributes["toolpath.log_event"] for r in events.records}
    assert names == {"gen_ai.system.message", "gen_ai.user.message", "gen_ai.choice"}
    joined = build_invocations(decode(traces, "application/x-protobuf") + events.records)
    assert seen(joined) == seen(build_invocations(decode(content_traces, "application/x-protobuf")))
    assert joined[0].prompt and [c.args for c in joined[0].tool_calls] == [
        {"device_id": "light-hall"},
        {"device_id": "thermostat-living"},
    ]


@pytest.mark.parametrize("logs_first", [True, False])
def test_the_collector_joins_events_arriving_before_or_after_their_spans(tmp_path, recordings, logs_first):
    (traces, logs), (content_traces, _) = recordings
    truth = seen(build_invocations(decode(content_traces, "application/x-protobuf")))
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with serving(store, token=TOKEN) as service:
        url = f"http://127.0.0.1:{service.options.http_port}"
        for kind in ["logs", "traces"] if logs_first else ["traces", "logs"]:
            if kind == "logs":
                status, body = post_logs(url, logs)
                assert status == 200 and not ExportLogsServiceResponse.FromString(body).HasField("partial_success")
            else:
                assert post_traces(url, traces)[0] == 200
    assert seen(store.list_invocations()) == truth


def test_events_over_grpc_and_otlp_json(tmp_path, recordings):
    import grpc
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    (traces, logs), (content_traces, _) = recordings
    truth = seen(build_invocations(decode(content_traces, "application/x-protobuf")))
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with serving(store, token=TOKEN, grpc_port=free_port()) as service:
        with grpc.insecure_channel(f"127.0.0.1:{service.options.grpc_port}") as channel:
            export = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
            reply = export(logs, metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10)
            assert ExportLogsServiceResponse.FromString(reply).partial_success.rejected_log_records == 0
            with pytest.raises(grpc.RpcError) as refused:
                export(logs, timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert post_traces(f"http://127.0.0.1:{service.options.http_port}", traces)[0] == 200
    assert seen(store.list_invocations()) == truth
    # OTLP/JSON logs (hex ids) decode to the same events
    as_json = json_format.MessageToDict(ExportLogsServiceRequest.FromString(logs))
    for resource in as_json["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                import base64

                record["traceId"] = base64.b64decode(record["traceId"]).hex()
                record["spanId"] = base64.b64decode(record["spanId"]).hex()
    import json

    from_json = decode_logs(json.dumps(as_json).encode(), "application/json")
    assert [r.span_id for r in from_json.records] == [
        r.span_id for r in decode_logs(logs, "application/x-protobuf").records
    ]


def test_live_sdk_exporters_send_spans_and_events_to_the_collector(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with serving(store, token=TOKEN) as service:
        url = f"http://127.0.0.1:{service.options.http_port}"
        record(tmp_path / "live", EVENT_ONLY, OTLP_ENDPOINT=url, OTLP_TOKEN=TOKEN)
    [invocation] = store.list_invocations()
    assert invocation.prompt == "Is the hall light on, and how warm is the living room?"
    assert [c.args for c in invocation.tool_calls] == [{"device_id": "light-hall"}, {"device_id": "thermostat-living"}]


def test_a_genai_event_without_ids_is_rejected_and_other_logs_are_ignored(tmp_path):
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    scope.log_records.add(event_name="gen_ai.user.message").body.string_value = "hi"
    plain = scope.log_records.add()
    plain.body.string_value = "GET /healthz 200"
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with serving(store, token=TOKEN) as service:
        status, body = post_logs(f"http://127.0.0.1:{service.options.http_port}", request.SerializeToString())
    reply = ExportLogsServiceResponse.FromString(body)
    assert status == 200 and reply.partial_success.rejected_log_records == 1
    assert "no trace_id and span_id" in reply.partial_success.error_message
    assert store.counts()["spans"] == 0
