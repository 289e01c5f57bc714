"""Model calls' tokens and reported cost per model, summed in the database over the spans of a time window (the UI
prices what no call reported: :mod:`toolpath.ui.usage_view`). The caller names the attributes
(:class:`toolpath.store.turn_usage.UsageKeys`): the store knows no convention. A value that is not a JSON
number counts as absent, on either database (a cast would fail PostgreSQL's whole query)."""

from __future__ import annotations

from dataclasses import dataclass

from toolpath.store.session_list import Reader
from toolpath.store.store import Store
from toolpath.store.turn_usage import UsageKeys, first, number, text_of
from toolpath.store.turn_window import Window


@dataclass(frozen=True)
class ModelTotals:
    """The model calls of one model (``None``: they named none) that did, or did not, report their cost."""

    model: str | None
    reported: bool
    """These calls reported their cost (``cost``, summed); the others' cost is their tokens priced."""
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None


def _namespaces(keys: list[str]) -> list[str]:
    """The fewest texts each of ``keys`` holds: their namespaces (a key's text before its last dot), none inside
    another (``gen_ai.usage`` for ``gen_ai.usage.input_tokens`` and ``gen_ai.usage.cost.total``)."""
    spaces = sorted({key.rpartition(".")[0] or key for key in keys}, key=len)
    out: list[str] = []
    for space in spaces:
        if not any(kept in space for kept in out):
            out.append(space)
    return out


def model_totals(store: Store, keys: UsageKeys, window: Window) -> list[ModelTotals]:
    """Per model, and per whether the calls reported their cost: the spans started in ``window`` (its times; with
    ``hide_evaluation``, not of a trace an evaluation ran) that hold a token count or a cost."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        dialect = reader.dialect
        tokens_in = first([number(dialect, k) for k in keys.input_tokens])
        tokens_out = first([number(dialect, k) for k in keys.output_tokens])
        parts = [number(dialect, k) for k in keys.cost_parts]
        summed = " + ".join(f"COALESCE({p}, 0)" for p in parts) or "NULL"
        any_part = " OR ".join(f"{p} IS NOT NULL" for p in parts) or "1 = 0"
        cost = f"COALESCE({number(dialect, keys.cost_total)}, CASE WHEN {any_part} THEN {summed} END)"
        model = first([text_of(dialect, k) for k in keys.model])
        where: list[str] = ["1 = 1"]
        params: list[object] = []
        if dialect == "sqlite":  # only the spans whose JSON names a key are parsed (most spans are no model's)
            named = [*keys.input_tokens, *keys.output_tokens, keys.cost_total, *keys.cost_parts]
            near = " OR ".join(f"instr(spans.attributes, '{p}') > 0" for p in _namespaces(named))
            exact = " OR ".join(f"instr(spans.attributes, '\"{k}\"') > 0" for k in named)
            where.append(f"({near}) AND ({exact})")  # most spans are read for a few namespaces, not every key
        if window.since_ns is not None:
            where.append("spans.start_time >= ?")
            params.append(window.since_ns)
        if window.until_ns is not None:
            where.append("spans.start_time <= ?")
            params.append(window.until_ns)
        if window.hide_evaluation:
            evaluation, more = window.evaluation(dialect)
            where.append(f"NOT EXISTS (SELECT 1 FROM invocations WHERE invocations.trace_id = spans.trace_id "
                         f"AND {evaluation})")  # fmt: skip
            params += more
        # SQLite would compute each value again wherever the query names it: once per span, materialized
        materialized = "MATERIALIZED " if dialect == "sqlite" else ""
        sql = f"""
WITH used AS {materialized}(
  SELECT {model} AS model, {tokens_in} AS tokens_in, {tokens_out} AS tokens_out, {cost} AS cost
  FROM spans WHERE {" AND ".join(where)}
)
SELECT model, cost IS NOT NULL AS reported, COUNT(*), SUM(tokens_in), SUM(tokens_out), SUM(cost) FROM used
WHERE tokens_in IS NOT NULL OR tokens_out IS NOT NULL OR cost IS NOT NULL
GROUP BY model, cost IS NOT NULL ORDER BY model"""
        rows = reader.rows(sql, params)
    return [
        ModelTotals(model, bool(reported), int(n), int(t_in or 0), int(t_out or 0),
                    None if spent is None else float(spent))
        for model, reported, n, t_in, t_out, spent in rows
    ]  # fmt: skip
