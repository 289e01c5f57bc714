"""The models' tokens and cost read from spans of either convention: SQLite finds the spans that name a usage key
by the keys' namespaces first, and must still find every one (GenAI's and OpenInference's), and no other."""

from __future__ import annotations

import pytest

from toolpath.store.model_usage import _namespaces, model_totals
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.turn_usage import USAGE_KEYS
from toolpath.store.turn_window import Window


def test_the_namespaces_are_the_fewest_texts_every_key_holds():
    keys = [*USAGE_KEYS.input_tokens, *USAGE_KEYS.output_tokens, USAGE_KEYS.cost_total, *USAGE_KEYS.cost_parts]
    assert sorted(_namespaces(keys)) == ["gen_ai.usage", "llm.token_count"]
    assert _namespaces(["tokens", "a.tokens", "a.b.cost"]) == ["a", "tokens"]  # "a.b" holds "a": read once
    assert all(any(space in key for space in _namespaces(keys)) for key in keys)


def test_spans_of_both_conventions_are_counted_and_others_are_not(store):
    def span(n: int, attributes: dict[str, object]) -> SpanRecord:
        return SpanRecord(f"{n:032x}", f"{n:016x}", None, "call", 3, 10**18 + n, 10**18 + n + 1, 0, None, attributes)

    store.write(
        [],
        [
            span(1, {"gen_ai.request.model": "g", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}),
            span(2, {"gen_ai.request.model": "o", "llm.token_count.prompt": 7, "llm.token_count.completion": 3}),
            span(3, {"gen_ai.request.model": "c", "gen_ai.usage.cost.input": 0.25, "gen_ai.usage.cost.output": 0.5}),
            span(4, {"gen_ai.request.model": "x", "app.usage": 5, "gen_ai.usage.note": "no count"}),
        ],
    )
    totals = {(t.model, t.reported): (t.calls, t.input_tokens, t.output_tokens, t.cost)
              for t in model_totals(store, USAGE_KEYS, Window())}  # fmt: skip
    assert totals == {("g", False): (1, 10, 2, None), ("o", False): (1, 7, 3, None),
                      ("c", True): (1, 0, 0, pytest.approx(0.75))}  # fmt: skip
