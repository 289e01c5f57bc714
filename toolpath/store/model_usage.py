"""Model calls' tokens and reported cost per model, summed in the database over the spans of a time window (the UI
prices what no call reported: :mod:`toolpath.ui.usage_view`). The caller names the attributes
(:class:`toolpath.store.turn_usage.UsageKeys`): the store knows no convention. A value that is not a JSON
number counts as absent, on either database (a cast would fail PostgreSQL's whole query)."""

from __future__ import annotations

from dataclasses import dataclass

from toolpath.store.session_list import Reader
from toolpath.store.stat_indexes import namespaces as _namespaces  # noqa: F401 (its tests' name)
from toolpath.store.stat_indexes import usage_values
from toolpath.store.store import Store
from toolpath.store.turn_usage import UsageKeys
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


def model_totals(store: Store, keys: UsageKeys, window: Window) -> list[ModelTotals]:
    """Per model, and per whether the calls reported their cost: the spans started in ``window`` (its times; with
    ``hide_evaluation``, not of a trace an evaluation ran) that hold a token count or a cost."""
    with store.engine.connect() as conn:
        reader = Reader.of_connection(conn)
        dialect = reader.dialect
        used = usage_values(dialect, keys)
        # the partial index of the model calls' values (ix_spans_usage, for USAGE_KEYS) serves the query when its
        # condition is stated as it is; on SQLite it also spares the JSON reads of spans that name no key
        where: list[str] = [used.named]
        params: list[object] = []
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
        reported = f"({used.cost}) IS NOT NULL"
        sql = f"""
SELECT {used.model}, {reported}, COUNT(*), SUM({used.tokens_in}), SUM({used.tokens_out}), SUM({used.cost})
FROM spans WHERE {" AND ".join(where)}
AND ({used.tokens_in} IS NOT NULL OR {used.tokens_out} IS NOT NULL OR {used.cost} IS NOT NULL)
GROUP BY {used.model}, {reported} ORDER BY {used.model}"""
        rows = reader.rows(sql, params)
    return [
        ModelTotals(model, bool(reported), int(n), int(t_in or 0), int(t_out or 0),
                    None if spent is None else float(spent))
        for model, reported, n, t_in, t_out, spent in rows
    ]  # fmt: skip
