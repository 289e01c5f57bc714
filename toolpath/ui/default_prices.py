"""The price table the UI applies: the prices of pydantic's ``genai-prices`` package (its bundled snapshot, read
offline) for the models the store's calls name, with the Prices page's entries over them: an entry typed there
wins over the package's price of the same model name."""

from __future__ import annotations

from functools import lru_cache

from toolpath.store.store import Store
from toolpath.store.usage import ModelPrice, prices, used_models

_SAMPLE = 1_000
"""Tokens priced to read a per-million price: few enough to stay in a model's first tier (some models charge more
past 200,000 input tokens)."""


@lru_cache(maxsize=1024)
def package_price(model: str) -> ModelPrice | None:
    """``genai-prices``' price of ``model`` per million input and output tokens, today (``None``: it knows no
    such model)."""
    from genai_prices import Usage, calc_price

    try:
        given_in = calc_price(Usage(input_tokens=_SAMPLE), model)
        given_out = calc_price(Usage(output_tokens=_SAMPLE), model)
    except LookupError:
        return None
    scale = 1_000_000 / _SAMPLE
    return ModelPrice(model, float(given_in.total_price) * scale, float(given_out.total_price) * scale)


def price_table(store: Store) -> dict[str, ModelPrice]:
    """Per model the store's calls name: the package's price, unless the Prices page sets one (that one wins);
    and every model the Prices page prices."""
    typed = prices(store)
    known = {model: package_price(model) for model in used_models(store) if model not in typed}
    return {**{m: p for m, p in known.items() if p is not None}, **typed}
