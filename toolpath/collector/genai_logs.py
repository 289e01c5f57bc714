"""OTLP logs (``ExportLogsServiceRequest``, protobuf or JSON) -> records of the GenAI events among them.

Instrumentations that capture content as events (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``)
send the prompts, tool arguments, results and responses as log records beside their spans:
``gen_ai.client.inference.operation.details``, the message events (``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``…), ADK's ``gen_ai.user.message``. Each
such record, named by its ``event_name`` (or its ``event.name`` attribute), is kept as a span record of its own
under the span it names (its trace and span ids): stored like any span, so the run it belongs to is rebuilt
whether the event arrives before or after its spans, and the reconstruction fills in what the span lacks from it
(:mod:`toolpath.collector.reconstruct.log_events`). Records that are no GenAI event are not kept (counted); a
GenAI event without a trace and span id cannot be joined to anything and is rejected, with the reason."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from toolpath.collector.otlp import OtlpDecodeError
from toolpath.collector.otlp_replies import LeftOut
from toolpath.collector.otlp_values import attributes, value
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

__all__ = ["LOGS_PATH", "LOGS_SERVICE", "DecodedLogs", "decode_logs", "logs_reply"]

LOGS_PATH = "/v1/logs"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
EVENT_SPAN_PREFIX = "event "
"""A kept event's span name: ``event gen_ai.choice``."""
_GENAI = "gen_ai."
_HEX = re.compile(r"^[0-9a-fA-F]*$")


@dataclass
class DecodedLogs:
    """The GenAI events of a logs request as span records, the records that were not GenAI events (not kept),
    and the GenAI events rejected with their reasons."""

    records: list[SpanRecord] = field(default_factory=list)
    ignored: int = 0
    rejected: list[str] = field(default_factory=list)


def decode_logs(body: bytes, content_type: str) -> DecodedLogs:
    """The GenAI events of an OTLP logs body (``application/x-protobuf`` or ``application/json``)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    request = ExportLogsServiceRequest()
    if kind in ("application/x-protobuf", "application/protobuf"):
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise OtlpDecodeError(f"not an OTLP protobuf ExportLogsServiceRequest: {exc}") from None
    elif kind == "application/json":
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError(f"an ExportLogsServiceRequest is a JSON object, not {type(data).__name__}")
            json_format.ParseDict(_hex_ids(data), request, ignore_unknown_fields=True)
        except (UnicodeDecodeError, ValueError, TypeError, RecursionError, json_format.ParseError) as exc:
            raise OtlpDecodeError(f"not an OTLP JSON ExportLogsServiceRequest: {exc}") from None
    else:
        raise OtlpDecodeError(f"unsupported content type {content_type!r} (application/x-protobuf or application/json)")
    return events_of(request)


def events_of(request: ExportLogsServiceRequest) -> DecodedLogs:
    out = DecodedLogs()
    for resource_logs in request.resource_logs:
        resource = attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope.name or None
            for number, record in enumerate(scope_logs.log_records):
                attrs = attributes(record.attributes)
                name = record.event_name or attrs.get(sc.EVENT_NAME)
                if not isinstance(name, str) or not name.startswith(_GENAI):
                    out.ignored += 1
                    continue
                if len(record.trace_id) != 16 or len(record.span_id) != 8:
                    out.rejected.append(f"event {name!r}: no trace_id and span_id to join it to its span")
                    continue
                at = record.time_unix_nano or record.observed_time_unix_nano
                trace_id, parent = record.trace_id.hex(), record.span_id.hex()
                body = value(record.body) if record.HasField("body") else None
                kept = {k: v for k, v in attrs.items() if k != sc.EVENT_NAME}
                kept[sc.TOOLPATH_LOG_EVENT] = name
                if body is not None:
                    kept[sc.TOOLPATH_LOG_EVENT_BODY] = json.dumps(body, ensure_ascii=False, default=str)
                out.records.append(
                    SpanRecord(
                        trace_id=trace_id,
                        span_id=_event_id(trace_id, parent, name, at, number, kept),
                        parent_span_id=parent,
                        name=f"{EVENT_SPAN_PREFIX}{name}",
                        kind=1,
                        start_time=at,
                        end_time=at,
                        attributes=kept,
                        resource=resource,
                        scope=scope,
                    )
                )
    return out


def _event_id(trace_id: str, parent: str, name: str, at: int, number: int, attrs: dict[str, Any]) -> str:
    """A span id of the event's own, the same each time the same record is sent (a retried export stores it
    once)."""
    text = json.dumps([trace_id, parent, name, at, number, attrs], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def logs_reply(decoded: DecodedLogs, left: LeftOut, said: Any) -> ExportLogsServiceResponse:
    """OTLP's partial success when GenAI events were left out (no ids, refused by the store, over the trace
    limit)."""
    reply = ExportLogsServiceResponse()
    reasons = [*decoded.rejected[:3], *left.reasons("event")]
    if reasons:
        reply.partial_success.rejected_log_records = len(decoded.rejected) + left.rejected
        reply.partial_success.error_message = said("; ".join(reasons))
    return reply


def _hex_ids(data: Any) -> Any:
    """OTLP/JSON's hex trace and span ids as the base64 protobuf's JSON mapping reads (base64 ones stay)."""
    if isinstance(data, dict):
        out = {}
        for key, item in data.items():
            if (
                key in ("traceId", "spanId", "trace_id", "span_id")
                and isinstance(item, str)
                and len(item) in (16, 32)
                and _HEX.match(item)
            ):
                try:
                    out[key] = base64.b64encode(bytes.fromhex(item)).decode()
                except ValueError:
                    out[key] = item
            else:
                out[key] = _hex_ids(item)
        return out
    if isinstance(data, list):
        return [_hex_ids(item) for item in data]
    return data
