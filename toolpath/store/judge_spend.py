"""What online evaluation's judge spent, kept apart from the agent's own usage: ``judge_spend``, per evaluator,
clock hour, judge model and outcome, the requests, the tokens the model reported and the time they took. Rows are
added in the transaction that stores the results they were spent on, so spend and results are kept or lost
together; every process on the store adds to the same rows. Read back with the price the user set for the model
(``model_prices``), when there is one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Connection, func, select

from toolpath.store import schema as t
from toolpath.store.online_usage import CACHED, HELD, HOLDING, HOUR_NS
from toolpath.store.store import Store
from toolpath.store.usage import prices

__all__ = ["HELD", "HOLDING", "EvaluatorSpend", "SpendRow", "add", "by_evaluator"]

_ADD = (
    "INSERT INTO judge_spend (evaluator, hour_start, model, outcome, calls, input_tokens, output_tokens, seconds) "
    "VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m}, {m}) ON CONFLICT (evaluator, hour_start, model, outcome) DO UPDATE "
    "SET calls = judge_spend.calls + excluded.calls, "
    "input_tokens = judge_spend.input_tokens + excluded.input_tokens, "
    "output_tokens = judge_spend.output_tokens + excluded.output_tokens, "
    "seconds = judge_spend.seconds + excluded.seconds"
)


class SpendRow(NamedTuple):
    """Judge requests of one model and outcome (a :class:`~toolpath.judges.messages.JudgeOutcome` value), added up."""

    model: str
    outcome: str
    calls: int
    input_tokens: int
    output_tokens: int
    seconds: float


def add(conn: Connection, spend: Mapping[str, Sequence[SpendRow]], now_ns: int) -> None:
    """Add each evaluator's ``spend`` to its rows of the clock hour of ``now_ns``."""
    hour = now_ns - now_ns % HOUR_NS
    rows = [(evaluator, hour, *row) for evaluator, rows in sorted(spend.items()) for row in rows]  # one lock order
    if rows:
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        conn.exec_driver_sql(_ADD.format(m=mark), rows)


@dataclass
class EvaluatorSpend:
    """One evaluator's judge spend since a time, every process's, by model and outcome; ``cost`` in the user's
    currency when every model it called has a price (``None`` otherwise: ``unpriced`` names those without)."""

    evaluator: str
    rows: list[SpendRow]
    cost: float | None
    unpriced: list[str]

    @property
    def calls(self) -> int:
        """Requests sent to the model (neither cached nor refused)."""
        return sum(r.calls for r in self.rows if r.outcome in ("ok", "error"))

    @property
    def tokens(self) -> tuple[int, int]:
        """Input and output tokens spent (a cached reply's, kept as the reply's, were not spent again)."""
        spent = [r for r in self.rows if r.outcome != CACHED]
        return sum(r.input_tokens for r in spent), sum(r.output_tokens for r in spent)

    @property
    def mean_seconds(self) -> float | None:
        """The mean time of a request sent."""
        sent = [r for r in self.rows if r.outcome in ("ok", "error")]
        count = sum(r.calls for r in sent)
        return sum(r.seconds for r in sent) / count if count else None


def by_evaluator(store: Store, *, since_ns: int = 0, until_ns: int | None = None) -> dict[str, EvaluatorSpend]:
    """Each evaluator's judge spend in the clock hours from the one of ``since_ns`` on (to the one of
    ``until_ns``, when given)."""
    table = t.judge_spend
    since = since_ns - since_ns % HOUR_NS
    bounds = [table.c.hour_start >= since]
    if until_ns is not None:
        bounds.append(table.c.hour_start <= until_ns - until_ns % HOUR_NS)
    query = (
        select(
            table.c.evaluator,
            table.c.model,
            table.c.outcome,
            func.sum(table.c.calls),
            func.sum(table.c.input_tokens),
            func.sum(table.c.output_tokens),
            func.sum(table.c.seconds),
        )
        .where(*bounds)
        .group_by(table.c.evaluator, table.c.model, table.c.outcome)
        .order_by(table.c.evaluator, table.c.model, table.c.outcome)
    )
    with store.engine.connect() as conn:
        found = conn.execute(query).all()
    priced = prices(store)
    out: dict[str, EvaluatorSpend] = {}
    for evaluator, model, outcome, *sums in found:  # PostgreSQL sums integers as decimals
        row = SpendRow(model, outcome, int(sums[0]), int(sums[1]), int(sums[2]), float(sums[3]))
        if outcome in (HOLDING, HELD) and not (row.calls or row.input_tokens or row.output_tokens):
            continue  # every call held was recorded with its results
        spend = out.setdefault(evaluator, EvaluatorSpend(evaluator, [], 0.0, []))
        spend.rows.append(row)
        if outcome == CACHED:  # answered from the store: its reply's tokens were not spent again
            continue
        tokens_in, tokens_out = row.input_tokens, row.output_tokens
        price = priced.get(model)
        if price is None:
            if model not in spend.unpriced and (tokens_in or tokens_out):
                spend.unpriced.append(model)
        elif spend.cost is not None:
            spend.cost += (tokens_in * price.input_per_million + tokens_out * price.output_per_million) / 1e6
    for spend in out.values():
        if spend.unpriced:
            spend.cost = None
    return out
