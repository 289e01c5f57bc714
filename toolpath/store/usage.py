"""What the UI reads to count tokens and cost: chosen attributes of the spans of some traces (the caller names
the keys: the store knows no convention), the traces of sessions, and the user's price table (per model, per
million input and output tokens)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import inspect, or_, select

from toolpath.errors import ConfigError
from toolpath.store import schema as t
from toolpath.store.store import Store


@dataclass(frozen=True)
class ModelPrice:
    model: str
    input_per_million: float
    output_per_million: float


def span_values(
    store: Store, trace_ids: Sequence[str], *, numbers: Sequence[str], texts: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Per span of ``trace_ids`` that has any of the ``numbers`` attributes: its trace id and the values of
    ``numbers`` (floats) and ``texts`` (strings), ``None`` where absent. Only those values are read, not the
    span's other attributes (which may hold whole prompts)."""
    spans = t.spans
    number_columns = [spans.c.attributes[key].as_float() for key in numbers]
    text_columns = [spans.c.attributes[key].as_string() for key in texts]
    out: list[dict[str, Any]] = []
    with store.engine.connect() as conn:
        for start in range(0, len(trace_ids), 500):
            chunk = list(trace_ids[start : start + 500])
            query = select(spans.c.trace_id, *number_columns, *text_columns).where(
                spans.c.trace_id.in_(chunk), or_(*(c.is_not(None) for c in number_columns))
            )
            for row in conn.execute(query):
                values = list(row)
                out.append({"trace_id": values[0], **dict(zip([*numbers, *texts], values[1:], strict=True))})
    return out


def session_traces(store: Store, session_ids: Sequence[str]) -> dict[str, list[str]]:
    """The traces of each session's turns."""
    inv = t.invocations
    out: dict[str, list[str]] = {s: [] for s in session_ids}
    with store.engine.connect() as conn:
        query = select(inv.c.session_id, inv.c.trace_id).where(inv.c.session_id.in_(list(session_ids))).distinct()
        for row in conn.execute(query):
            out[row.session_id].append(row.trace_id)
    return out


def prices(store: Store) -> dict[str, ModelPrice]:
    table = t.model_prices
    with store.engine.connect() as conn:
        return {
            r.model: ModelPrice(r.model, r.input_per_million, r.output_per_million)
            for r in conn.execute(select(table).order_by(table.c.model))
        }


def known_prices(store: Store) -> dict[str, ModelPrice]:
    """:func:`prices`, or none when the store has no tables yet (a collector checks its options, a cost budget's
    price among them, before it makes a new store's; a SQLite file not made yet is not made here)."""
    if store.database_file is not None and not os.path.exists(store.database_file):
        return {}
    with store.engine.connect() as conn:
        if not inspect(conn).has_table(t.model_prices.name):
            return {}
    return prices(store)


def set_price(store: Store, model: str, input_per_million: float, output_per_million: float) -> None:
    """Price ``model``'s tokens (replacing its price); a :class:`ConfigError` for no model or a price that is
    negative or not finite."""
    model = model.strip()
    if not model or len(model) > 256:
        raise ConfigError("model: name the model (at most 256 characters), as its spans name it")
    for name, value in (("input", input_per_million), ("output", output_per_million)):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{name} price of {model!r}: must be a finite number of at least 0, got {value}")
    table = t.model_prices
    row = {"model": model, "input_per_million": input_per_million, "output_per_million": output_per_million,
           "updated_at": time.time_ns()}  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(table.delete().where(table.c.model == model))
        conn.execute(table.insert(), [row])


def remove_price(store: Store, model: str) -> None:
    with store.engine.begin() as conn:
        conn.execute(t.model_prices.delete().where(t.model_prices.c.model == model))


def used_models(store: Store) -> list[str]:
    """The models the stored turns' model calls name (kept per turn: :mod:`toolpath.store.turn_usage`)."""
    used = t.turn_usage
    with store.engine.connect() as conn:
        return list(
            conn.execute(select(used.c.model).where(used.c.model != "").distinct().order_by(used.c.model)).scalars()
        )
