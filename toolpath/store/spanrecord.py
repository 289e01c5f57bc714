"""A plain, storable form of a finished span, independent of where it came from (SDK or OTLP)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

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
        return {name: getattr(self, name) for name in FIELDS}


FIELDS = tuple(f.name for f in fields(SpanRecord))
"""The record's fields, in order."""
