"""The order of a trajectory (docs/spec.md §3): the calls one model turn asked for keep the order the model listed them
in, whatever order they ran in; calls no model message accounts for keep their start order.

Each convention's model spans say what the model asked for; :mod:`.requests` matches tool spans to those requests.
The calls of one turn are then put back in the model's order in the places they held in start order, so calls of
other turns and unmatched calls stay where they were.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from toolpath.collector.reconstruct import adk_spans, genai, openinference, requests
from toolpath.model import ToolCall
from toolpath.store.spanrecord import SpanRecord


def in_model_order(
    calls: Sequence[ToolCall], tool_spans: Sequence[SpanRecord], spans: Sequence[SpanRecord]
) -> tuple[list[ToolCall], list[SpanRecord]]:
    """``calls`` and their ``tool_spans`` (in start order, one call per span) with each model turn's calls in the
    model's order, in the places they held; ``spans``: the run's spans (sorted by start), model spans among them."""
    asked = requests.collect(
        (
            span,
            genai.requested_calls(span.attributes)
            or openinference.requested_calls(span.attributes)
            or adk_spans.requested_calls(span.attributes),
        )
        for span in spans
    )
    if not asked:
        return list(calls), list(tool_spans)
    matches = requests.match(calls, tool_spans, asked)
    places: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for place, request in enumerate(matches):
        if request is not None:
            places[request.turn].append((request.index, place))
    ordered_calls, ordered_spans = list(calls), list(tool_spans)
    for held in places.values():
        slots = [place for _, place in held]
        for slot, (_, place) in zip(slots, sorted(held), strict=True):
            ordered_calls[slot], ordered_spans[slot] = calls[place], tool_spans[place]
    return ordered_calls, ordered_spans
