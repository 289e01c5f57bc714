"""The UI's default price table: genai-prices' price for the models the store's calls name, the Prices page's
entries over them; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from toolpath.model import Invocation, invocation_key
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.usage import set_price
from toolpath.tracer import semconv as sc
from toolpath.ui.default_prices import package_price, price_table
from toolpath.ui.usage_view import usage_of_sessions

TRACE, AGENT, CALL = "ab" * 16, "a" * 16, "c" * 16


def _write(store, model: str) -> None:
    usage = {sc.GEN_AI_REQUEST_MODEL: model, sc.GEN_AI_USAGE_INPUT_TOKENS: 2_000_000,
             sc.GEN_AI_USAGE_OUTPUT_TOKENS: 1_000_000}  # fmt: skip
    spans = [SpanRecord(TRACE, AGENT, None, "invoke_agent", 1, 1, 9),
             SpanRecord(TRACE, CALL, AGENT, "chat", 3, 2, 3, attributes=usage)]  # fmt: skip
    store.write([Invocation(invocation_id=invocation_key(TRACE, AGENT), session_id="s", trace_id=TRACE)], spans)


def test_a_model_the_package_prices_costs_its_price_until_the_prices_page_sets_one(store):
    known = package_price("gpt-4o")
    assert known is not None and known.input_per_million > 0 and known.output_per_million > 0
    _write(store, "gpt-4o")
    table = price_table(store)
    assert table == {"gpt-4o": known}
    want = 2 * known.input_per_million + known.output_per_million
    assert usage_of_sessions(store, ["s"], table)["s"].cost == pytest.approx(want)
    set_price(store, "gpt-4o", 1.0, 0.0)  # typed on the Prices page: it wins
    overridden = price_table(store)
    assert (overridden["gpt-4o"].input_per_million, overridden["gpt-4o"].output_per_million) == (1.0, 0.0)
    assert usage_of_sessions(store, ["s"], overridden)["s"].cost == pytest.approx(2.0)


def test_a_model_the_package_does_not_know_stays_unpriced(store):
    assert package_price("no-such-model-anywhere") is None
    _write(store, "no-such-model-anywhere")
    table = price_table(store)
    assert table == {}
    assert usage_of_sessions(store, ["s"], table)["s"].unpriced == {"no-such-model-anywhere"}
