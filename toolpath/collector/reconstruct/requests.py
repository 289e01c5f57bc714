"""Tool calls a model asked for, and which tool span answers which (the model's order, docs/spec.md §3, and argument
repair read them): a tool span is matched with its call id, else to the latest model turn, begun before the tool
started, that asked for a call of that name (the one with the same arguments first)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolpath.model import ToolCall
from toolpath.store.spanrecord import SpanRecord


@dataclass(frozen=True, slots=True)
class Requested:
    """One tool call a model message asked for."""

    turn: int
    """Which model span asked (its rank in start order)."""
    at: int
    """That model span's start time (ns)."""
    index: int
    """Its place in the model's message."""
    call_id: str | None
    name: str
    args: Any


def collect(asked: Iterable[tuple[SpanRecord, Sequence[tuple[str | None, str, Any]]]]) -> list[Requested]:
    """``Requested`` calls from each model span (in start order) and the (id, name, arguments) it asked for."""
    found: list[Requested] = []
    turn = 0
    for span, calls in asked:
        if calls:
            found.extend(
                Requested(turn, span.start_time, index, call_id, name, args)
                for index, (call_id, name, args) in enumerate(calls)
            )
            turn += 1
    return found


def match(
    calls: Sequence[ToolCall], tool_spans: Sequence[SpanRecord], requested: Sequence[Requested]
) -> list[Requested | None]:
    """For each call (in start order), the request it answers, or ``None``."""
    id_counts = Counter(r.call_id for r in requested if r.call_id)
    by_id = {r.call_id: r for r in requested if r.call_id and id_counts[r.call_id] == 1}
    found: list[Requested | None] = []
    used: set[int] = set()
    for call in calls:  # call ids first, so that no call without one takes the request of a call with one
        chosen = by_id.get(call.call_id) if call.call_id else None
        if chosen is None or chosen.name != call.name or id(chosen) in used:
            chosen = None
        else:
            used.add(id(chosen))
        found.append(chosen)
    for place, (call, span) in enumerate(zip(calls, tool_spans, strict=True)):
        if found[place] is not None:
            continue
        candidates = [r for r in requested if id(r) not in used and r.name == call.name and r.at <= span.start_time]
        if candidates:
            latest = max(r.turn for r in candidates)
            in_turn = [r for r in candidates if r.turn == latest]
            chosen = next((r for r in in_turn if same_args(call.args, r.args)), in_turn[0])
            used.add(id(chosen))
            found[place] = chosen
    return found


def same_args(received: Any, asked: Any) -> bool:
    """Whether a tool span's arguments are the ones the model asked for; a bare single value (OpenInference's
    one-argument tools) is the value of the model's one argument."""
    if received == asked:
        return True
    if isinstance(received, dict) and set(received) == {"input"} and isinstance(asked, dict) and len(asked) == 1:
        return bool(next(iter(asked.values())) == received["input"])
    return False
