"""The OTLP exporter ``toolpath.init()`` adds beside the collector: chosen by the standard ``OTEL_EXPORTER_OTLP_*``
variables, redacting every span before it leaves the process, and counting what it could not deliver."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, Status

from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.tracer import content

logger = logging.getLogger("toolpath.tracer")


class CountingExporter(SpanExporter):
    """Wraps an exporter and counts the spans it failed to deliver, so a down backend is visible."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.dropped = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            logger.warning("toolpath: OTLP export raised", exc_info=True)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.dropped += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def otlp_exporter(endpoint: str | None) -> tuple[CountingExporter | None, BatchSpanProcessor | None]:
    env_endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint and not env_endpoint:
        return None, None
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        inner: SpanExporter = GrpcExporter(endpoint=endpoint) if endpoint else GrpcExporter()
    elif protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        inner = HttpExporter(endpoint=_http_traces_url(endpoint)) if endpoint else HttpExporter()
    else:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not one of grpc, http/protobuf")
    redactor = content.policy().redactor
    exporter = CountingExporter(RedactingExporter(inner, redactor) if redactor is not None else inner)
    return exporter, BatchSpanProcessor(exporter)


class RedactingExporter(SpanExporter):
    """Redacts every span before the OTLP exporter sees it — other instrumentations' spans in this process and
    whatever the application added to toolpath's own: names, attributes, events, links, status, scope and
    resource — with the same rules as the store (on the export thread, never the agent's)."""

    def __init__(self, inner: SpanExporter, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([self._clean(span) for span in spans])

    def _clean(self, span: ReadableSpan) -> ReadableSpan:
        r = self.redactor
        events = [
            Event(r.text(e.name), _otel_attributes(r.attributes(e.attributes or {})), e.timestamp) for e in span.events
        ]
        status = span.status
        if status.description:
            status = Status(status.status_code, r.text(status.description))
        links = [Link(link.context, _otel_attributes(r.attributes(link.attributes or {}))) for link in span.links]
        scope = span.instrumentation_scope
        if scope is not None:
            scope = InstrumentationScope(
                r.text(scope.name), scope.version, scope.schema_url, r.attributes(scope.attributes or {})
            )
        return ReadableSpan(
            name=r.text(span.name),
            context=span.context,
            parent=span.parent,
            resource=Resource(_otel_attributes(r.attributes(span.resource.attributes)), span.resource.schema_url),
            attributes=_otel_attributes(r.attributes(span.attributes or {})),
            events=events,
            links=links,
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=scope,
        )

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _otel_attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Redacted values back into OTel attribute types (sequences as tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def _http_traces_url(endpoint: str) -> str:
    """A base URL like ``http://host:4318`` gets the standard ``/v1/traces`` path, as the env variable does."""
    has_path = "/" in endpoint.split("://", 1)[-1].rstrip("/")
    return endpoint if has_path else endpoint.rstrip("/") + "/v1/traces"
