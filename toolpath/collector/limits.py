"""Limits on what one sender can make the collector store: attribute value length, spans per trace, tool calls
per invocation. Each is configurable, each hit is counted, and what was cut is marked in the stored record
(never silent): a cut attribute ends with the truncation marker and is listed in ``toolpath.truncated``; an
invocation whose calls were capped carries ``toolpath.tool_calls_dropped``; spans past a trace's limit are not
stored and are counted. (Request bodies are limited by the receiver: 413.)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.config import DEFAULT_MAX_ATTRIBUTE_LENGTH, DEFAULT_MAX_SPANS_PER_TRACE, DEFAULT_MAX_TOOL_CALLS
from toolpath.model import Invocation
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

TOOL_CALLS_DROPPED = "toolpath.tool_calls_dropped"
LIMIT_KINDS = (
    "attribute_values_cut",
    "spans_over_trace_limit",
    "tool_calls_dropped",
    "spans_cleaned",
    "spans_quarantined",
    "spans_rejected",
)
"""Every kind of hit :meth:`Limits.count` counts (the ``limit`` label of ``toolpath_limit_hits``)."""


@dataclass
class Limits:
    max_attribute_length: int | None = DEFAULT_MAX_ATTRIBUTE_LENGTH
    max_spans_per_trace: int | None = DEFAULT_MAX_SPANS_PER_TRACE
    max_tool_calls: int | None = DEFAULT_MAX_TOOL_CALLS
    hits: Counter[str] = field(default_factory=Counter)
    listener: Callable[[str, int], None] | None = field(default=None, repr=False)
    """Told every hit too (the Prometheus counter of collectors that share a port)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.hits[what] += n
        if self.listener is not None:
            self.listener(what, n)

    def clip(self, record: SpanRecord) -> SpanRecord:
        """Cut string attribute values over the limit, with the marker, and list them (in place)."""
        limit = self.max_attribute_length
        if limit is None:
            return record
        cut = [k for k, v in record.attributes.items() if isinstance(v, str) and len(v) > limit]
        if not cut:
            return record
        for key in cut:
            value = record.attributes[key]
            record.attributes[key] = value[:limit] + sc.TRUNCATION_MARKER.format(dropped=len(value) - limit)
        already = record.attributes.get(sc.TOOLPATH_TRUNCATED) or []
        record.attributes[sc.TOOLPATH_TRUNCATED] = [*already, *(k for k in cut if k not in already)]
        self.count("attribute_values_cut", len(cut))
        return record

    def admit(self, stored: dict[str, int], new: Sequence[SpanRecord]) -> list[SpanRecord]:
        """The new spans a trace may still take, given ``stored`` spans per trace; the rest are counted."""
        limit = self.max_spans_per_trace
        if limit is None:
            return list(new)
        taken = dict(stored)
        admitted = []
        for record in new:
            if taken.get(record.trace_id, 0) >= limit:
                self.count("spans_over_trace_limit")
                continue
            taken[record.trace_id] = taken.get(record.trace_id, 0) + 1
            admitted.append(record)
        return admitted

    def cap(self, invocations: list[Invocation]) -> list[Invocation]:
        """Invocations with at most ``max_tool_calls`` calls each; a capped one says how many it lost."""
        limit = self.max_tool_calls
        if limit is None:
            return invocations
        out = []
        for inv in invocations:
            extra = len(inv.tool_calls) - limit
            if extra > 0:
                self.count("tool_calls_dropped", extra)
                inv = inv.model_copy(
                    update={
                        "tool_calls": inv.tool_calls[:limit],
                        "attributes": {**inv.attributes, TOOL_CALLS_DROPPED: extra},
                    }
                )
            out.append(inv)
        return out

    def to_dict(self) -> dict[str, Any]:
        return dict(self.hits)
