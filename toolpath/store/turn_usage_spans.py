"""Each turn's usage computed from its spans at hand: what :func:`toolpath.store.turn_usage.refresh` computes from
the spans stored, without reading them back. The write path holds every span of the turns it writes (ingest's
rebuild reads them; a new trace's are all in the request), so its usage rows and the turn's tokens and user are
written with the turn instead of recomputed by a recursive query over the stored spans.

The result is the refresh's, value for value: a turn's spans are its agent span (the tail of its id,
``invocation_key``'s form) and every span below it; of each usage group the first key holding a JSON number
counts (a boolean or a string is none), the cost is the total else the sum of the parts present, the model the
first model key present; only spans with tokens or a cost count, grouped by model and by whether they reported a
cost; the user is named on the earliest span (start, then span id) naming one, in its attributes, then in its
resource. Where a value would read differently on SQLite and PostgreSQL (a token count with a fraction or past
2**53, a model or user that is no string), the turn is left out and the caller falls back on the refresh.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolpath.store.spanrecord import SpanRecord
from toolpath.store.turn_usage import USAGE_KEYS, USER_KEYS, UsageKeys

if TYPE_CHECKING:
    from toolpath.model import Invocation

UsageRow = tuple[str, int, int, int, int, float | None]
"""A ``turn_usage`` row without its invocation id: model, reported (1 or 0), calls, input and output tokens, cost."""
_EXACT = 2**53
"""Integers past this are not all doubles: PostgreSQL reads a JSON number as one."""
_USER_LENGTH = 256


@dataclass(frozen=True, slots=True)
class TurnUsage:
    rows: tuple[UsageRow, ...]
    input_tokens: int
    output_tokens: int
    user: str | None


class _Unsure(Exception):
    """A value each database reads its own way: the turn is left to the SQL refresh."""


def turn_usages(
    spans: Iterable[SpanRecord], invocations: Iterable[Invocation], keys: UsageKeys = USAGE_KEYS
) -> dict[str, TurnUsage]:
    """The usage of each of ``invocations`` whose agent span is among ``spans`` (which must hold every span
    stored below it), by invocation id; an invocation left out is the refresh's to compute."""
    known: dict[tuple[str, str], SpanRecord] = {}
    for s in spans:
        known.setdefault((s.trace_id, s.span_id), s)  # the first of a key: the one stored
    children: dict[tuple[str, str], list[SpanRecord]] = {}
    for s in known.values():
        if s.parent_span_id is not None:
            children.setdefault((s.trace_id, s.parent_span_id), []).append(s)
    found: dict[str, TurnUsage] = {}
    for inv in invocations:
        trace_id, invocation_id = inv.trace_id or "", inv.invocation_id
        if not invocation_id.startswith(trace_id + "-"):
            continue  # the refresh counts the whole trace: not at hand
        root = known.get((trace_id, invocation_id[len(trace_id) + 1 :]))
        if root is None:
            continue
        tree, seen = [root], {root.span_id}
        for span in tree:  # grows as it is walked: every span below the root, once (a circle of parents ends)
            for child in children.get((trace_id, span.span_id), ()):
                if child.span_id not in seen:
                    seen.add(child.span_id)
                    tree.append(child)
        try:
            found[invocation_id] = usage_of(tree, keys)
        except _Unsure:
            continue
    return found


class UsageAhead:
    """Turns' usage computed ahead (before the write lock, from a new trace's spans), each kept for the very
    invocation object it was computed for, as :class:`~toolpath.store.bulk.EncodedInvocations` keeps rows."""

    def __init__(self, built: Iterable[tuple[Iterable[SpanRecord], Sequence[Invocation]]] = ()) -> None:
        self._found: dict[str, tuple[Invocation, TurnUsage]] = {}
        for spans, invocations in built:
            by_id = {inv.invocation_id: inv for inv in invocations}
            for invocation_id, usage in turn_usages(spans, invocations).items():
                self._found[invocation_id] = (by_id[invocation_id], usage)

    def of(self, spans: Iterable[SpanRecord], invocations: Sequence[Invocation]) -> dict[str, TurnUsage]:
        """The usage of ``invocations``: computed ahead for the very objects, else from ``spans``."""
        found: dict[str, TurnUsage] = {}
        for inv in invocations:
            ahead = self._found.get(inv.invocation_id)
            if ahead is not None and ahead[0] is inv:
                found[inv.invocation_id] = ahead[1]
        rest = [inv for inv in invocations if inv.invocation_id not in found]
        return {**found, **turn_usages(spans, rest)} if rest else found


def usage_of(tree: Sequence[SpanRecord], keys: UsageKeys = USAGE_KEYS) -> TurnUsage:
    """The usage of a turn whose spans are ``tree``."""
    groups: dict[tuple[str, int], list[Any]] = {}
    named: tuple[int, str, str] | None = None
    for span in tree:
        attributes = span.attributes if isinstance(span.attributes, dict) else {}
        tokens_in = _first(attributes, keys.input_tokens, _tokens)
        tokens_out = _first(attributes, keys.output_tokens, _tokens)
        cost = _number(attributes.get(keys.cost_total))
        if cost is None:
            parts = [_number(attributes.get(k)) for k in keys.cost_parts]
            if any(p is not None for p in parts):
                cost = sum(p for p in parts if p is not None)
        if tokens_in is not None or tokens_out is not None or cost is not None:
            model = _first(attributes, keys.model, _text) or ""
            group = groups.setdefault((model, 0 if cost is None else 1), [0, 0, 0, None])
            group[0] += 1
            group[1] += tokens_in or 0
            group[2] += tokens_out or 0
            if cost is not None:
                group[3] = cost if group[3] is None else group[3] + cost
        resource = span.resource if isinstance(span.resource, dict) else {}
        user = _first(attributes, USER_KEYS, _text)
        if user is None:
            user = _first(resource, USER_KEYS, _text)
        if user is not None and (named is None or (span.start_time, span.span_id) < named[:2]):
            named = (span.start_time, span.span_id, user)
    rows = tuple(
        (model, reported, calls, tokens_in, tokens_out, None if cost is None else float(cost))
        for (model, reported), (calls, tokens_in, tokens_out, cost) in sorted(groups.items())
    )
    return TurnUsage(rows, sum(r[3] for r in rows), sum(r[4] for r in rows),
                     None if named is None else named[2][:_USER_LENGTH])  # fmt: skip


def _first(values: Mapping[str, Any], names: Iterable[str], read: Any) -> Any:
    for name in names:
        value = read(values.get(name))
        if value is not None:
            return value
    return None


def _number(value: Any) -> int | float | None:
    """A JSON number as the refresh reads it (``None``: absent, null, or no number)."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None  # NaN and infinities are stored as null
    if kind is int:
        if -_EXACT < value < _EXACT:
            return value
        raise _Unsure
    if kind in (str, bool, list, dict) or value is None:
        return None
    raise _Unsure  # a value of another type: its JSON text decides


def _tokens(value: Any) -> int | None:
    number = _number(value)
    if type(number) is float:
        if not number.is_integer() or abs(number) >= _EXACT:
            raise _Unsure  # SQLite truncates a sum with a fraction, PostgreSQL rounds it
        return int(number)
    return number  # type: ignore[return-value]


def _text(value: Any) -> str | None:
    if value is None or (type(value) is float and not math.isfinite(value)):
        return None
    if type(value) is str:
        return value
    raise _Unsure  # a number, a boolean or an object as text: each database spells it its own way
