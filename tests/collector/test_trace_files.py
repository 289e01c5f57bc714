"""Trace files in, no server: the recorded exports of every peer instrumentation, written as the OpenTelemetry
Collector's file exporter writes them (OTLP/JSON lines, length-framed protobuf) and as Jaeger exports them,
rebuild through the collector's decoder to the recorded ground truth; a bad line costs only itself."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.helpers import SPANS
from tests.helpers.cli import run_cli
from tests.helpers.trace_files import (
    otlp_json,
    split_requests,
    write_framed_protobuf,
    write_jaeger_json,
    write_json_lines,
)
from toolpath.collector.file_ingest import ingest_trace_files, read_trace_files
from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.store.store import Store

SOURCES = ["adk-v1", "adk-v2", "openinference-langchain", "openllmetry-langchain", "otel-genai-langchain"]
WRITERS = {"otlp-json-lines": write_json_lines, "otlp-protobuf-framed": write_framed_protobuf,
           "jaeger-json": write_jaeger_json}  # fmt: skip


def recorded(source: str) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest.FromString((SPANS / f"{source}.shared.otlp.pb").read_bytes())


def trajectories(invocations):
    return [
        (
            inv.prompt,
            inv.response,
            [(c.name, c.args, c.result if not c.error else None, bool(c.error)) for c in inv.tool_calls],
        )
        for inv in sorted(invocations, key=lambda i: i.started_at)
    ]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("fmt", WRITERS)
def test_each_file_format_rebuilds_the_recorded_ground_truth(tmp_path, source, fmt):
    path = WRITERS[fmt](tmp_path / f"traces.{fmt}", recorded(source))
    files = read_trace_files([path])
    assert files[0].format == fmt
    report = ingest_trace_files(Store(f"sqlite:///{tmp_path / 's.db'}"), files, redactor=None)
    want = json.loads((SPANS / f"{source}.shared.expected.json").read_text())["invocations"]
    assert trajectories(report.invocations) == [
        (w["prompt"], w["response"], [(c["name"], c["args"], c["result"] if not c["error"] else None, c["error"])
                                      for c in w["tool_calls"]])
        for w in want
    ]  # fmt: skip
    assert (
        report.spans_stored
        == report.spans_read
        == sum(len(s.spans) for r in recorded(source).resource_spans for s in r.scope_spans)
    )
    assert not report.rejected and not report.bad


def test_ingest_reports_a_bad_line_by_number_and_stores_the_others(tmp_path):
    lines = [otlp_json(part) for part in split_requests(recorded("adk-v2"), 4)]
    lines.insert(2, '{"resourceSpans": [')  # a line cut short, as a crashed writer leaves it
    lines.append(json.dumps({"hello": "world"}))
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n")
    result = run_cli(tmp_path, "ingest", "traces.jsonl", "--store", "sqlite:///s.db")
    assert result.returncode == 2
    [error] = result.stderr.splitlines()
    assert error.startswith("error: traces.jsonl line 3: not valid JSON") and error.endswith(
        "; also traces.jsonl line 6"
    )
    assert "stored 16 span(s) of 16 read from 1 file(s): 2 invocation(s) in 1 session(s)" in result.stdout
    store = Store("sqlite:///" + str(tmp_path / "s.db"))
    assert len(store.list_invocations()) == 2 and store.counts()["spans"] == 16


def test_a_span_without_ids_is_rejected_with_its_reason(tmp_path):
    request = recorded("otel-genai-langchain")
    request.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01"
    write_json_lines(tmp_path / "t.jsonl", request, per_line=100)
    result = run_cli(tmp_path, "ingest", "t.jsonl", "--store", "sqlite:///s.db")
    assert result.returncode == 0, result.stderr
    assert "stored 12 span(s) of 12 read from 1 file(s)" in result.stdout
    assert "rejected t.jsonl line 1: span " in result.stdout and "span_id 8 bytes" in result.stdout


def test_stored_spans_are_redacted_as_collect_redacts_them(tmp_path):
    request = recorded("otel-genai-langchain")
    span = request.resource_spans[0].scope_spans[0].spans[0]
    secret = span.attributes.add()
    secret.key, secret.value.string_value = "api_key", "sk-live-123456789abcdef"
    path = write_json_lines(tmp_path / "t.jsonl", request)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    ingest_trace_files(store, read_trace_files([path]), redactor=Redactor.build((), {}))
    stored = [s for s in store.spans_of_trace(span.trace_id.hex()) if s.span_id == span.span_id.hex()]
    assert stored[0].attributes["api_key"] != "sk-live-123456789abcdef"
    assert "sk-live" not in json.dumps(stored[0].attributes)


def test_files_that_are_no_trace_are_one_error_before_anything_is_stored(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "noise.pb").write_bytes(b"\xff\xfe not protobuf")
    good = write_json_lines(tmp_path / "good.jsonl", recorded("adk-v2"))
    for bad, message in (("empty.jsonl", "empty.jsonl: empty"), ("noise.pb", "noise.pb: neither OTLP/JSON"),
                         ("missing.json", "missing.json: cannot read")):  # fmt: skip
        result = run_cli(tmp_path, "ingest", good.name, bad, "--store", "sqlite:///s.db")
        assert result.returncode == 2 and result.stderr.startswith(f"error: {message}"), result.stderr
        assert not (tmp_path / "s.db").exists()
    with pytest.raises(ConfigError, match="empty"):
        read_trace_files([tmp_path / "empty.jsonl"])


def test_one_otlp_json_document_and_a_gzip_file_are_read(tmp_path):
    import gzip

    from google.protobuf import json_format

    document = tmp_path / "one.json"
    document.write_text(json_format.MessageToJson(recorded("adk-v2")))  # protobuf's own mapping: base64 ids
    zipped = tmp_path / "t.jsonl.gz"
    zipped.write_bytes(gzip.compress(write_json_lines(tmp_path / "t.jsonl", recorded("adk-v1")).read_bytes()))
    files = read_trace_files([document, zipped])
    assert [(f.format, f.spans) for f in files] == [("otlp-json", 16), ("otlp-json-lines", 22)]


def test_varint_delimited_protobuf_as_protobuf_streams_write_it(tmp_path):
    from google.protobuf.internal.encoder import _VarintBytes

    parts = [part.SerializeToString() for part in split_requests(recorded("adk-v2"), 5)]
    (tmp_path / "t.pb").write_bytes(b"".join(_VarintBytes(len(body)) + body for body in parts))
    [file] = read_trace_files([tmp_path / "t.pb"])
    assert (file.format, file.spans, len(file.batches)) == ("otlp-protobuf-delimited", 16, len(parts))
