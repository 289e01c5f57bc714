"""Circles of parents that new spans close with spans stored before them.

The collector refuses a circle of parents that one export holds whole; when its spans come in different exports
(A, whose parent is B, in one; B, whose parent is A, in the next) each is stored, and no span of the circle can
ever be a run's top (every one has a parent above it). The ingest transaction finds such circles here, from the
spans it already read walking up from the new ones, so that the writer can say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolpath.store.spanrecord import SpanRecord

Key = tuple[str, str]
"""(trace id, span id)."""


def closed_cycles(new: Sequence[SpanRecord], known: Mapping[Key, SpanRecord]) -> list[list[SpanRecord]]:
    """Each circle of parents, among ``known`` spans (the new ones and the ancestors read of them), that holds a
    span of ``new``: its spans from the first one reached walking up, in parent order. A circle only above a new
    span (none of its spans new) was there before: it is not told again. Each span is walked once."""
    new_keys = {(s.trace_id, s.span_id) for s in new}
    walked: set[Key] = set()
    found: list[list[SpanRecord]] = []
    for span in new:
        path: list[SpanRecord] = []
        at: dict[Key, int] = {}
        current: SpanRecord | None = span
        while current is not None:
            key = (current.trace_id, current.span_id)
            if key in at:
                cycle = path[at[key] :]
                if any((s.trace_id, s.span_id) in new_keys for s in cycle):
                    found.append(cycle)
                break
            if key in walked:
                break
            at[key] = len(path)
            path.append(current)
            parent = current.parent_span_id
            current = known.get((current.trace_id, parent)) if parent is not None else None
        walked.update(at)
    return found
