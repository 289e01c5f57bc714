"""Tokens and cost of turns and sessions, from their spans: input and output tokens of every model call
(``gen_ai.usage.*``, OpenInference's counts otherwise), and the cost the instrumentation reported
(``gen_ai.usage.cost.total``, else ``.input`` plus ``.output``) or, where it reported none, the tokens priced by the
user's price table (per model, per million tokens). A cost says how much it covered: calls of a model with no price
leave it a lower bound, and name the model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.store.model_usage import model_totals
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.store.turn_usage import UsageKeys
from toolpath.store.turn_window import Window
from toolpath.store.usage import ModelPrice, session_traces, span_values
from toolpath.tracer import semconv as sc

NUMBERS = (
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.OI_TOKEN_COUNT_PROMPT,
    sc.OI_TOKEN_COUNT_COMPLETION,
    sc.GEN_AI_USAGE_COST_TOTAL,
    sc.GEN_AI_USAGE_COST_INPUT,
    sc.GEN_AI_USAGE_COST_OUTPUT,
)
TEXTS = (sc.GEN_AI_RESPONSE_MODEL, sc.GEN_AI_REQUEST_MODEL)
USAGE_KEYS = UsageKeys(
    input_tokens=(sc.GEN_AI_USAGE_INPUT_TOKENS, sc.OI_TOKEN_COUNT_PROMPT),
    output_tokens=(sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.OI_TOKEN_COUNT_COMPLETION),
    cost_total=sc.GEN_AI_USAGE_COST_TOTAL,
    cost_parts=(sc.GEN_AI_USAGE_COST_INPUT, sc.GEN_AI_USAGE_COST_OUTPUT),
    model=TEXTS,
)
"""The same attributes, for ordering the whole sessions list by tokens or cost in the store."""


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    """Model calls with a token count or a cost."""
    cost: float | None = None
    reported: int = 0
    """Calls whose cost their instrumentation reported."""
    unpriced: set[str] = field(default_factory=set)
    """Models of calls with tokens, no reported cost and no price: the cost leaves them out."""

    @property
    def cost_text(self) -> str:
        if self.cost is None:
            return "–" if not self.unpriced else "no price"
        return ("≥ " if self.unpriced else "") + f"${self.cost:.4f}"

    @property
    def cost_note(self) -> str:
        parts = []
        if self.reported:
            parts.append(f"{self.reported} call(s) reported their cost")
        if self.unpriced:
            parts.append(f"no price for {', '.join(sorted(self.unpriced))}: set one on the Prices page")
        return "; ".join(parts)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def add(usage: Usage, values: Mapping[str, Any], prices: Mapping[str, ModelPrice]) -> None:
    """Count one span's ``values`` (attribute key -> value) into ``usage``."""
    tokens_in = _number(values.get(sc.GEN_AI_USAGE_INPUT_TOKENS))
    tokens_in = tokens_in if tokens_in is not None else _number(values.get(sc.OI_TOKEN_COUNT_PROMPT))
    tokens_out = _number(values.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS))
    tokens_out = tokens_out if tokens_out is not None else _number(values.get(sc.OI_TOKEN_COUNT_COMPLETION))
    total = _number(values.get(sc.GEN_AI_USAGE_COST_TOTAL))
    parts = [_number(values.get(k)) for k in (sc.GEN_AI_USAGE_COST_INPUT, sc.GEN_AI_USAGE_COST_OUTPUT)]
    reported = total if total is not None else sum(p for p in parts if p is not None) if any(
        p is not None for p in parts) else None  # fmt: skip
    if tokens_in is None and tokens_out is None and reported is None:
        return
    usage.calls += 1
    usage.input_tokens += int(tokens_in or 0)
    usage.output_tokens += int(tokens_out or 0)
    if reported is not None:
        usage.cost = (usage.cost or 0.0) + reported
        usage.reported += 1
        return
    model = values.get(sc.GEN_AI_RESPONSE_MODEL) or values.get(sc.GEN_AI_REQUEST_MODEL)
    price = prices.get(str(model)) if model else None
    if price is None:
        usage.unpriced.add(str(model) if model else "an unnamed model")
        return
    spent = (tokens_in or 0) * price.input_per_million / 1e6 + (tokens_out or 0) * price.output_per_million / 1e6
    usage.cost = (usage.cost or 0.0) + spent


def usage_of_spans(spans: Iterable[SpanRecord], prices: Mapping[str, ModelPrice]) -> Usage:
    usage = Usage()
    for span in spans:
        attributes = span.attributes or {}
        add(usage, {k: attributes.get(k) for k in (*NUMBERS, *TEXTS)}, prices)
    return usage


def usage_of_sessions(store: Store, session_ids: Sequence[str], prices: Mapping[str, ModelPrice]) -> dict[str, Usage]:
    """The tokens and cost of each session's turns (every turn, not only those a page shows)."""
    traces = session_traces(store, session_ids)
    owner = {trace: session for session, found in traces.items() for trace in found}
    out = {s: Usage() for s in session_ids}
    for values in span_values(store, list(owner), numbers=NUMBERS, texts=TEXTS):
        add(out[owner[values["trace_id"]]], values, prices)
    return out


def usage_of_models(store: Store, window: Window, prices: Mapping[str, ModelPrice]) -> dict[str, Usage]:
    """The tokens and cost of the model calls in ``window`` per model (``""``: calls that named none), summed in
    the store; a call's cost is the one it reported, else its tokens priced as :func:`add` prices them."""
    out: dict[str, Usage] = {}
    for totals in model_totals(store, USAGE_KEYS, window):
        usage = out.setdefault(totals.model or "", Usage())
        usage.calls += totals.calls
        usage.input_tokens += totals.input_tokens
        usage.output_tokens += totals.output_tokens
        if totals.reported:
            usage.cost = (usage.cost or 0.0) + (totals.cost or 0.0)
            usage.reported += totals.calls
            continue
        price = prices.get(totals.model) if totals.model else None
        if price is None:
            usage.unpriced.add(totals.model or "an unnamed model")
            continue
        spent = (
            totals.input_tokens * price.input_per_million / 1e6 + totals.output_tokens * price.output_per_million / 1e6
        )
        usage.cost = (usage.cost or 0.0) + spent
    return out
