"""Fuzzing the readers of trace files and GenAI log events (untrusted input): a trace file of any bytes is read or
refused with one ConfigError naming it; an OTLP logs body of any bytes or JSON decodes or raises OtlpDecodeError;
a Jaeger export of any shape is read trace by trace, a bad trace a bad part; and GenAI events of any body rebuild
with their spans without raising. Bounded by example counts so CI time stays fixed."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import SPANS
from toolpath.collector.genai_logs import decode_logs
from toolpath.collector.otlp import OtlpDecodeError, decode
from toolpath.collector.reconstruct import build_invocations
from toolpath.collector.trace_files import TraceFile, read_trace_file
from toolpath.errors import ConfigError
from toolpath.store.spanrecord import SpanRecord

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SPANS_PB = (SPANS / "adk-v2.shared.otlp.pb").read_bytes()
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)


@FUZZ
@given(st.binary(max_size=2048))
def test_a_trace_file_of_any_bytes_is_read_or_refused_by_name(tmp_path, content):
    path = tmp_path / "t.bin"
    path.write_bytes(content)
    try:
        read = read_trace_file(path)
    except ConfigError as exc:
        assert str(exc).startswith(str(path))
        return
    assert isinstance(read, TraceFile) and all(part.describe().startswith(str(path)) for part in read.bad)


@FUZZ
@given(st.lists(json_values, max_size=3))
def test_a_jaeger_export_of_any_traces_is_read_trace_by_trace(tmp_path, traces):
    path = tmp_path / "jaeger.json"
    shaped = [t if not isinstance(t, dict) else {"spans": [], **t} for t in traces]
    path.write_text(json.dumps({"data": [t for t in shaped if isinstance(t, dict)]}))
    try:
        read = read_trace_file(path)
    except ConfigError:
        return
    assert read.format in ("jaeger-json", "otlp-json", "otlp-json-lines")


@FUZZ
@given(st.binary(max_size=2048), st.sampled_from(["application/x-protobuf", "application/json"]))
def test_a_logs_body_of_any_bytes_decodes_or_is_refused(body, content_type):
    try:
        decoded = decode_logs(body, content_type)
    except OtlpDecodeError:
        return
    assert all(r.parent_span_id and len(r.trace_id) == 32 for r in decoded.records)


@FUZZ
@given(json_values)
def test_a_logs_json_of_any_shape_decodes_or_is_refused(value):
    try:
        decode_logs(
            json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [value]}]}]}).encode(), "application/json"
        )
    except OtlpDecodeError:
        return


@FUZZ
@given(
    st.sampled_from(
        [
            "gen_ai.user.message",
            "gen_ai.choice",
            "gen_ai.tool.message",
            "gen_ai.assistant.message",
            "gen_ai.client.inference.operation.details",
        ]
    ),
    json_values,
    st.dictionaries(st.sampled_from(["gen_ai.input.messages", "gen_ai.output.messages", "x"]), json_values, max_size=2),
)
def test_genai_events_of_any_body_rebuild_with_their_spans(name, body, attributes):
    spans = decode(SPANS_PB, "application/x-protobuf")
    events = [
        SpanRecord(
            trace_id=span.trace_id,
            span_id=f"{i:016x}",
            parent_span_id=span.span_id,
            name=f"event {name}",
            kind=1,
            start_time=span.start_time,
            end_time=span.start_time,
            attributes={**attributes, "toolpath.log_event": name, "toolpath.log_event.body": json.dumps(body)},
        )
        for i, span in enumerate(spans, start=1)
    ]
    assert len(build_invocations(spans + events)) == len(build_invocations(spans))
