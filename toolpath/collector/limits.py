"""Limits on what one sender can make the collector store: attribute value length, spans per trace, tool calls
per invocation. Each is configurable, each hit is counted, and what was cut is marked in the stored record
(never silent): a cut attribute ends with the truncation marker and is listed in ``toolpath.truncated`` — a JSON
value (a model request, a tool call's arguments and result) keeps its structure, its longest strings cut instead,
so the calls rebuilt from it keep their names and arguments when a 100 KB result is what made it long; an
invocation whose calls were capped carries ``toolpath.tool_calls_dropped``; spans past a trace's limit are not
stored, are counted and told back to the sender in OTLP's ``partial_success``; spans that close a circle of
parents with spans of an earlier export are stored (they were accepted, and may be looked at), counted, logged and
told back as a warning. (Request bodies are limited by the receiver: 413.)
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.config import DEFAULT_MAX_ATTRIBUTE_LENGTH, DEFAULT_MAX_SPANS_PER_TRACE, DEFAULT_MAX_TOOL_CALLS
from toolpath.model import Invocation
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

TOOL_CALLS_DROPPED = sc.TOOLPATH_TOOL_CALLS_DROPPED
LIMIT_KINDS = (
    "attribute_values_cut",
    "spans_over_trace_limit",
    "tool_calls_dropped",
    "spans_cleaned",
    "spans_quarantined",
    "spans_rejected",
    "spans_in_parent_cycles",
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
            record.attributes[key] = fit_json(value, limit) or (
                value[:limit] + sc.TRUNCATION_MARKER.format(dropped=len(value) - limit)
            )
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

    def closed_cycles(self, cycles: Sequence[Sequence[SpanRecord]]) -> None:
        """Circles of parents a write closed with spans stored before (stored, never a run): counted."""
        self.count("spans_in_parent_cycles", sum(len(cycle) for cycle in cycles))

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


def fit_json(text: str, limit: int) -> str | None:
    """``text`` (a JSON object or array over ``limit`` characters) with its longest strings cut, each ending in the
    truncation marker, to fit ``limit``; ``None`` when it is not JSON or would not fit with every string cut (its
    structure alone too long: the caller cuts the text). The cut is the same for every string over one length,
    found by bisection over the lengths (a few encodings of a value the body limit bounds)."""
    if not text.startswith(("{", "[")):
        return None
    try:
        data = json.loads(text)
        longest = _longest_string(data)
        if longest == 0:
            return None

        def encoded(cap: int) -> str:
            return json.dumps(_capped(data, cap), ensure_ascii=False, separators=(",", ":"))

        if len(smallest := encoded(0)) > limit:
            return None
        low, high, best = 0, longest, smallest  # encoded(low) fits; find the largest cap that still fits
        while low < high:
            mid = (low + high + 1) // 2
            attempt = encoded(mid)
            if len(attempt) <= limit:
                low, best = mid, attempt
            else:
                high = mid - 1
        return best
    except (ValueError, RecursionError):  # not JSON, or nested past what a walk may take: cut as text
        return None


def _longest_string(value: Any, depth: int = 0) -> int:
    if isinstance(value, str):
        return len(value)
    if depth > 64:
        return 0
    if isinstance(value, dict):
        return max((_longest_string(v, depth + 1) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v, depth + 1) for v in value), default=0)
    return 0


def _capped(value: Any, cap: int) -> Any:
    """``value`` with every string over ``cap`` characters cut to ``cap`` and the marker."""
    if isinstance(value, str):
        return value if len(value) <= cap else value[:cap] + sc.TRUNCATION_MARKER.format(dropped=len(value) - cap)
    if isinstance(value, dict):
        return {k: _capped(v, cap) for k, v in value.items()}
    if isinstance(value, list):
        return [_capped(v, cap) for v in value]
    return value
