"""OTLP payloads from real peer instrumentations decode the same from protobuf and JSON; malformed bodies are
clear errors."""

from __future__ import annotations

import base64
import json

import pytest

from tests.helpers import SPANS
from tests.helpers.builders import load_spans
from toolpath.collector.otlp import OtlpDecodeError, decode

SOURCES = [
    "adk-v1",
    "adk-v2",
    "adk-v2-nocontent",
    "openinference-langchain",
    "openllmetry-langchain",
    "otel-genai-langchain",
]


@pytest.mark.parametrize("source", SOURCES)
def test_protobuf_and_json_decode_identically(source):
    from_pb, from_json = load_spans(source, "pb"), load_spans(source, "json")
    assert len(from_pb) > 10
    assert [s.to_row() for s in from_pb] == [s.to_row() for s in from_json]
    assert all(len(s.trace_id) == 32 and len(s.span_id) == 16 for s in from_pb)


def test_base64_ids_as_protobufs_json_mapping_writes_them():
    data = json.loads((SPANS / "otel-genai-langchain.shared.otlp.json").read_text())  # hex ids, as OTLP/JSON
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    records = decode(json.dumps(data).encode(), "application/json; charset=utf-8")
    assert [s.to_row() for s in records] == [s.to_row() for s in load_spans("otel-genai-langchain")]


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"\xff\xfe not protobuf", "application/x-protobuf", "not an OTLP protobuf"),
        (b"{not json", "application/json", "not valid JSON"),
        (b'{"resourceSpans": "nope"}', "application/json", "not an OTLP JSON"),
        (b"{}", "text/plain", "unsupported content type"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "abcd", "spanId": "01", "name": "x"}]}]}]}',
            "application/json",
            "trace_id must be 16 bytes",
        ),
    ],
)
def test_malformed_bodies_are_clear_errors(body, content_type, message):
    with pytest.raises(OtlpDecodeError, match=message):
        decode(body, content_type)
