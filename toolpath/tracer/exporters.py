"""The OTLP exporter ``toolpath.init()`` adds beside the collector: chosen by the standard ``OTEL_EXPORTER_OTLP_*``
variables, redacting every span before it leaves the process, and counting what it could not deliver."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, Status

from toolpath.config import DEFAULT_EXPORT_QUEUE
from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.tracer import content

logger = logging.getLogger("toolpath.tracer")


class CountingExporter(SpanExporter):
    """Wraps an exporter and counts the spans it failed to deliver, so a down backend is visible; with
    :class:`CountingBatchProcessor`, also those its queue had no room for."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0
        """Spans handed to the exporter that it could not deliver (backend down, refused, timed out)."""
        self.queue_full = 0
        """Spans dropped before export: the batch queue was full (the SDK's "Queue full, dropping Span")."""

    @property
    def dropped(self) -> int:
        """Every span that did not reach the backend."""
        return self.failed + self.queue_full

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            logger.warning("toolpath: OTLP export raised", exc_info=True)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed += len(spans)
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
    return exporter, CountingBatchProcessor(exporter, export_queue_size())


def export_queue_size() -> int:
    """Spans the OTLP export queue holds: ``OTEL_BSP_MAX_QUEUE_SIZE`` when set, else
    :data:`~toolpath.config.DEFAULT_EXPORT_QUEUE` (the SDK's 2,048 drops spans of a burst of agent runs that a
    collector takes in a few seconds)."""
    given = os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE", "").strip()
    if not given:
        return DEFAULT_EXPORT_QUEUE
    try:
        size = int(given)
    except ValueError:
        raise ConfigError(f"OTEL_BSP_MAX_QUEUE_SIZE={given!r} is not a whole number") from None
    if size < 1:
        raise ConfigError(f"OTEL_BSP_MAX_QUEUE_SIZE={given!r} must be at least 1")
    return size


class CountingBatchProcessor(BatchSpanProcessor):
    """The SDK's batch processor, counting on its exporter each span the full queue drops (the SDK only logs
    it), so ``flush()`` and ``stats()`` tell what never left the process. The SDK's queue is swapped for a
    :class:`CountingQueue`; a test pins that the SDK keeps it where this looks, so a release that moves it fails
    CI rather than counting nothing."""

    def __init__(self, exporter: CountingExporter, max_queue_size: int) -> None:
        batch = BatchSpanProcessor._default_max_export_batch_size()  # the SDK's, or OTEL_BSP_MAX_EXPORT_BATCH_SIZE
        super().__init__(exporter, max_queue_size=max_queue_size, max_export_batch_size=min(batch, max_queue_size))
        inner = getattr(self, "_batch_processor", None)
        self.queue: CountingQueue | None = None
        if isinstance(getattr(inner, "_queue", None), deque):
            self.queue = inner._queue = CountingQueue(max_queue_size, exporter)  # type: ignore[union-attr]


class CountingQueue(deque[Any]):
    """The batch queue, counting what it drops: an item put at the front of a full queue pushes the oldest out
    of the back. The check and the put, and each take, hold one lock, so the count is exact however the agent's
    threads and the export thread interleave."""

    def __init__(self, size: int, counted: CountingExporter) -> None:
        super().__init__((), size)
        self.counted = counted
        self._lock = threading.Lock()

    def appendleft(self, item: Any) -> None:
        with self._lock:
            if len(self) == self.maxlen:
                self.counted.queue_full += 1
            super().appendleft(item)

    def pop(self) -> Any:  # type: ignore[override]  # a deque takes no index
        with self._lock:
            return super().pop()


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
