"""Which decoded spans can take their place in a trace: a span is left out of its export, with the reason, when its
ids could never join it to its parents and children, or its parents go round in a circle.

- a trace id that is not 16 bytes or a span id that is not 8 bytes, either all zeros (OTLP's invalid ids), or a
  parent span id of another length than 8 bytes;
- a span that is its own parent, or whose parents (among the spans of the same export) lead back to it: no span of
  such a circle has a root above it, so no run in it could ever be an invocation.

A parent span id of 8 zero bytes is read as no parent, as the OpenTelemetry Collector reads it (an exporter that
writes the invalid id where OTLP asks for an empty one means a root span).
"""

from __future__ import annotations

from collections.abc import Sequence

from toolpath.store.spanrecord import SpanRecord

ZERO_SPAN_ID = bytes(8)
_ZERO_TRACE_ID = bytes(16)
_CYCLE_IDS_SHOWN = 4


def id_problem(trace_id: bytes, span_id: bytes, parent_span_id: bytes) -> str | None:
    """Why a span with these ids cannot be stored, or ``None`` (the usual span: a few comparisons)."""
    if len(trace_id) != 16 or len(span_id) != 8:
        return "trace_id must be 16 bytes and span_id 8 bytes"
    if trace_id == _ZERO_TRACE_ID:
        return "trace_id is all zeros (the invalid trace id)"
    if span_id == ZERO_SPAN_ID:
        return "span_id is all zeros (the invalid span id)"
    if parent_span_id:
        if len(parent_span_id) != 8:
            return "parent_span_id must be 8 bytes, or empty for a root span"
        if parent_span_id == span_id:
            return "its parent_span_id is its own span_id"
    return None


def in_cycles(records: Sequence[SpanRecord]) -> dict[tuple[str, str], str]:
    """The spans of ``records`` whose chain of parents comes back to them, each (trace id, span id) with the
    reason; a span below such a circle but not on it is not among them (its parent is a span the circle holds).
    When a span id comes twice, its last record counts, as the store keeps it. Each span is walked once."""
    # a span of a circle is some span's parent and has a parent: the usual export (roots, and leaves below them)
    # has few such spans, and only they are walked (all of them when a span id comes twice: its last record counts)
    parents = {r.parent_span_id for r in records}
    if len({r.span_id for r in records}) < len(records):
        maybe = list(records)
    else:
        maybe = [r for r in records if r.span_id in parents and r.parent_span_id is not None]
        if not maybe:
            return {}
    parent_of = {(r.trace_id, r.span_id): r.parent_span_id for r in maybe}
    names = {(r.trace_id, r.span_id): r.name for r in maybe}
    done: set[tuple[str, str]] = set()
    found: dict[tuple[str, str], str] = {}
    for start in parent_of:
        if start in done:
            continue
        path: list[tuple[str, str]] = []
        on_path: set[tuple[str, str]] = set()
        key: tuple[str, str] | None = start
        while key is not None and key in parent_of and key not in done and key not in on_path:
            path.append(key)
            on_path.add(key)
            parent = parent_of[key]
            key = (key[0], parent) if parent is not None else None
        if key is not None and key in on_path:
            cycle = path[path.index(key) :]
            circle = circle_text([span for _, span in cycle])
            for member in cycle:
                found[member] = f"span {names[member]!r}: its parents go round a circle (span ids {circle})"
        done.update(path)
    return found


def circle_text(span_ids: Sequence[str]) -> str:
    """A circle of parents as it is told: its span ids in parent order, back to the first (a long one cut)."""
    shown = list(span_ids[:_CYCLE_IDS_SHOWN])
    if len(span_ids) > len(shown):
        return ", ".join(shown) + f" and {len(span_ids) - len(shown)} more"
    return " → ".join([*shown, span_ids[0]])
