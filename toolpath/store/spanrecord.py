"""A plain, storable form of a finished span, independent of where it came from (SDK or OTLP)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


@dataclass(slots=True)
class SpanRecord:
    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    """16 lowercase hex digits."""
    parent_span_id: str | None
    name: str
    kind: int
    """``SpanKind`` value as in OTLP: 1 INTERNAL, 2 SERVER, 3 CLIENT, 4 PRODUCER, 5 CONSUMER."""
    start_time: int
    end_time: int | None
    status_code: int = STATUS_UNSET
    status_message: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None

    def to_row(self) -> dict[str, Any]:
        """The record as a shallow dict (``dataclasses.asdict`` would deep-copy every attribute value)."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_readable(cls, span: ReadableSpan) -> SpanRecord:
        ctx = span.context
        parent = span.parent
        return cls(
            trace_id=format(ctx.trace_id, "032x"),
            span_id=format(ctx.span_id, "016x"),
            parent_span_id=format(parent.span_id, "016x") if parent is not None else None,
            name=span.name,
            kind=span.kind.value + 1,  # SDK enum starts at INTERNAL=0, OTLP at INTERNAL=1
            start_time=span.start_time or 0,
            end_time=span.end_time,
            status_code=_STATUS_FROM_SDK[span.status.status_code.name],
            status_message=span.status.description,
            attributes=_plain(span.attributes),
            events=[
                {"name": e.name, "time_unix_nano": e.timestamp, "attributes": _plain(e.attributes)} for e in span.events
            ]
            if span.events
            else [],
            resource=_resource(span.resource),
            scope=span.instrumentation_scope.name if span.instrumentation_scope is not None else None,
        )


_FIELDS = tuple(f.name for f in fields(SpanRecord))
_STATUS_FROM_SDK = {"UNSET": STATUS_UNSET, "OK": STATUS_OK, "ERROR": STATUS_ERROR}


def _plain(attributes: Any) -> dict[str, Any]:
    if not attributes:
        return {}
    plain = dict(attributes)
    for key, value in plain.items():
        if type(value) is tuple:  # sequence attributes: store as JSON arrays
            plain[key] = list(value)
    return plain


_resources: dict[int, tuple[Any, dict[str, Any]]] = {}


def _resource(resource: Any) -> dict[str, Any]:
    """A provider has one resource for all its spans: convert it once (keyed by identity)."""
    if resource is None:
        return {}
    cached = _resources.get(id(resource))
    if cached is None or cached[0] is not resource:
        cached = (resource, _plain(resource.attributes))
        if len(_resources) > 64:
            _resources.clear()
        _resources[id(resource)] = cached
    return cached[1]
