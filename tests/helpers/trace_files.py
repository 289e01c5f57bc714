"""Trace files as other tools write them, made from an ``ExportTraceServiceRequest`` (the SDK's own OTLP
encoding, or a recorded fixture): OTLP/JSON lines as the OpenTelemetry Collector's ``file`` exporter writes them
(the protobuf JSON mapping with hex ids, one request per line), length-framed protobuf as its ``proto`` format
writes them, and Jaeger's JSON export as the Collector's Jaeger translator maps OTLP to Jaeger."""

from __future__ import annotations

import base64
import json
import struct
import threading
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.helpers.otlp_sink import OtlpSink

_ID_KEYS = ("traceId", "spanId", "parentSpanId")
_KIND_NAMES = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def sdk_request(spans: Any) -> ExportTraceServiceRequest:
    """Finished SDK spans encoded as the SDK's OTLP exporters encode them."""
    return encode_spans(spans)


def split_requests(request: ExportTraceServiceRequest, per_line: int) -> list[ExportTraceServiceRequest]:
    """``request`` cut into requests of at most ``per_line`` spans each, in order (a trace may span lines, as
    the Collector's batches cut traces)."""
    out = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            spans = list(scope_spans.spans)
            for start in range(0, len(spans), per_line):
                part = ExportTraceServiceRequest()
                rs = part.resource_spans.add()
                rs.resource.CopyFrom(resource_spans.resource)
                ss = rs.scope_spans.add()
                ss.scope.CopyFrom(scope_spans.scope)
                ss.spans.extend(spans[start : start + per_line])
                out.append(part)
    return out


def otlp_json(request: ExportTraceServiceRequest) -> str:
    """One request as OTLP/JSON on one line: protobuf's JSON mapping, trace and span ids as hex."""
    data = json_format.MessageToDict(request)
    for resource_spans in data.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in _ID_KEYS:
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def write_json_lines(path: Path, request: ExportTraceServiceRequest, per_line: int = 3) -> Path:
    path.write_text("".join(otlp_json(part) + "\n" for part in split_requests(request, per_line)), encoding="utf-8")
    return path


def write_framed_protobuf(path: Path, request: ExportTraceServiceRequest, per_message: int = 3) -> Path:
    """Requests each after its length as 4 bytes big-endian: the Collector's file exporter's ``proto`` format."""
    parts = [part.SerializeToString() for part in split_requests(request, per_message)]
    path.write_bytes(b"".join(struct.pack(">I", len(body)) + body for body in parts))
    return path


def write_jaeger_json(path: Path, request: ExportTraceServiceRequest) -> Path:
    """The request's traces as Jaeger's ``{"data": [trace, …]}``: a process per resource, tags typed as
    Jaeger types them (arrays and maps as JSON text), kind / status / scope as tags, events as logs, times in
    microseconds."""
    traces: dict[str, dict[str, Any]] = {}
    for number, resource_spans in enumerate(request.resource_spans, start=1):
        resource = [(kv.key, kv.value) for kv in resource_spans.resource.attributes]
        service = next((v.string_value for k, v in resource if k == "service.name"), "unknown")
        process = {"serviceName": service, "tags": [_tag(k, v) for k, v in resource if k != "service.name"]}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id = span.trace_id.hex()
                trace = traces.setdefault(trace_id, {"traceID": trace_id, "spans": [], "processes": {}})
                trace["processes"][f"p{number}"] = process
                tags = [_tag(kv.key, kv.value) for kv in span.attributes]
                if span.kind in _KIND_NAMES:
                    tags.append({"key": "span.kind", "type": "string", "value": _KIND_NAMES[span.kind]})
                if scope_spans.scope.name:
                    tags.append({"key": "otel.scope.name", "type": "string", "value": scope_spans.scope.name})
                if span.status.code:
                    tags.append({"key": "otel.status_code", "type": "string",
                                 "value": {1: "OK", 2: "ERROR"}[span.status.code]})  # fmt: skip
                    if span.status.code == 2:
                        tags.append({"key": "error", "type": "bool", "value": True})
                if span.status.message:
                    tags.append({"key": "otel.status_description", "type": "string", "value": span.status.message})
                trace["spans"].append(
                    {
                        "traceID": trace_id,
                        "spanID": span.span_id.hex(),
                        "operationName": span.name,
                        "references": [
                            {"refType": "CHILD_OF", "traceID": trace_id, "spanID": span.parent_span_id.hex()}
                        ]
                        if span.parent_span_id
                        else [],
                        "startTime": span.start_time_unix_nano // 1000,
                        "duration": (span.end_time_unix_nano - span.start_time_unix_nano) // 1000,
                        "tags": tags,
                        "logs": [
                            {
                                "timestamp": event.time_unix_nano // 1000,
                                "fields": [{"key": "event", "type": "string", "value": event.name}]
                                + [_tag(kv.key, kv.value) for kv in event.attributes],
                            }
                            for event in span.events
                        ],
                        "processID": f"p{number}",
                        "warnings": None,
                    }
                )
    path.write_text(json.dumps({"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}))
    return path


def _tag(key: str, value: Any) -> dict[str, Any]:
    which = value.WhichOneof("value")
    if which == "string_value":
        return {"key": key, "type": "string", "value": value.string_value}
    if which == "bool_value":
        return {"key": key, "type": "bool", "value": value.bool_value}
    if which == "int_value":
        return {"key": key, "type": "int64", "value": value.int_value}
    if which == "double_value":
        return {"key": key, "type": "float64", "value": value.double_value}
    if which == "bytes_value":
        return {"key": key, "type": "binary", "value": base64.b64encode(value.bytes_value).decode()}
    plain = json_format.MessageToDict(value)  # arrays and maps: JSON text, as the translator writes them
    return {"key": key, "type": "string", "value": json.dumps(_plain(plain))}


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "arrayValue":
            return [_plain(v) for v in inner.get("values", [])]
        if kind == "kvlistValue":
            return {kv["key"]: _plain(kv.get("value", {})) for kv in inner.get("values", [])}
        if kind == "intValue":
            return int(inner)
        return inner
    return value


class CollectorFileSink(OtlpSink):
    """An OTLP/HTTP receiver on 127.0.0.1 that appends each export it is sent to ``path`` as one OTLP/JSON line:
    the OpenTelemetry Collector's otlp receiver feeding its ``file`` exporter. ``url`` is the traces endpoint to
    give an SDK exporter (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); ``close()`` when done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        super().__init__()
        self.url += "/v1/traces"

    def receive(self, request: ExportTraceServiceRequest) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(otlp_json(request) + "\n")
