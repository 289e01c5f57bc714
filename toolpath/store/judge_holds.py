"""Room held in an online evaluator's judge budget for the calls it is making, so that its budget is never passed,
however many workers and processes spend from it.

Before a call is sent, :func:`hold` locks the evaluator's row of the hour (:func:`online_usage.lock`, the lock every
claim and result of the evaluator takes first), checks that the most the call can cost fits in each of its budgets
beside what was spent and is held already, and counts it: its tokens in ``online_usage``, and in a ``judge_spend``
row of outcome ``holding`` (so that a budget in cost sees it at the model's price). Once the model has answered,
:func:`settle` replaces the most by what it reported, moved to the row of outcome ``held`` (or gives the room back:
a 429 costs nothing). The call's cost stays held until the transaction that stores its results moves it to its
outcome's row (:func:`release`): the spend is never unseen between the two. A process that dies meanwhile leaves
its calls' cost held: spent, as far as the budget knows, as it was."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import NamedTuple

from sqlalchemy import Connection

from toolpath.store import judge_spend, online_usage
from toolpath.store.judge_spend import SpendRow
from toolpath.store.online_usage import HELD, HOLDING, UsageLimits
from toolpath.store.usage import ModelPrice

__all__ = ["NoRoom", "Released", "hold", "release", "settle"]

ERROR = "error"
"""The ``judge_spend`` outcome a call's cost goes to when it ended with no reply to store."""
_SHIFT = (
    "UPDATE judge_spend SET calls = calls + {m}, input_tokens = input_tokens + {m}, "
    "output_tokens = output_tokens + {m} WHERE evaluator = {m} AND hour_start = {m} AND model = {m} AND outcome = {m}"
)
_TOKENS = "UPDATE online_usage SET tokens = tokens + {m} WHERE evaluator = {m} AND hour_start = {m}"


class NoRoom(Enum):
    """Why a call was not held."""

    YET = "yet"
    """The calls in flight hold the room it needs, at their most: there will be room if they cost less."""
    LEFT = "left"
    """Not even then: the budget is spent, as far as this call goes."""


class Released(NamedTuple):
    """A call whose cost leaves the held row: the hour it was held in, its model, the tokens it reported, how it
    ended (a :class:`~toolpath.judges.messages.JudgeOutcome` value) and the time it took."""

    hour_start: int
    model: str
    input_tokens: int
    output_tokens: int
    outcome: str = "ok"
    seconds: float = 0.0


def hold(
    conn: Connection,
    evaluator: str,
    limits: UsageLimits,
    model: str,
    most: tuple[int, int],
    price: ModelPrice | None,
    now: int,
) -> int | NoRoom:
    """Hold room in ``evaluator``'s budget for a call of ``model`` of at most ``most`` (input, output) tokens, in
    this transaction; the hour it is held in, or why not (with a budget in cost and no ``price`` for the model,
    :attr:`NoRoom.LEFT`: its cost could not be counted)."""
    if limits.costed and price is None:
        return NoRoom.LEFT
    usage = online_usage.lock(conn, {evaluator: limits}, now)[evaluator]
    wanted = [float(sum(most))] * 2 + [_cost(price, *most)] * 2
    if _fits(usage.used(), wanted, usage.bounds()):
        hour = online_usage.hour_of(now)
        conn.exec_driver_sql(_TOKENS.format(m=_mark(conn)), (sum(most), evaluator, hour))
        judge_spend.add(conn, {evaluator: [SpendRow(model, HOLDING, 1, most[0], most[1], 0.0)]}, now)
        return hour
    later = [used - flying for used, flying in zip(usage.used(), usage.flying, strict=True)]  # if in flight cost 0
    return NoRoom.YET if _fits(later, wanted, usage.bounds()) else NoRoom.LEFT


def settle(
    conn: Connection,
    evaluator: str,
    hour: int,
    model: str,
    held: tuple[int, int],
    reported: tuple[int, int] | None,
    *,
    ended: bool = False,
) -> None:
    """Replace the ``held`` tokens of a call held in ``hour`` by those the model ``reported``, held until its results
    are stored (:func:`release`); ``None``: give its room back (it was not answered, nor billed). ``ended``: the call
    ended with no reply to store: its cost is moved to the hour's ``error`` row now (no call counted there: the
    request it was an attempt of is counted with its results). Locks the hour's row first, as :func:`hold` does;
    then the outcome's row, the holding row and the held row, in that order (as :func:`release`)."""
    m = _mark(conn)
    conn.exec_driver_sql(f"SELECT tokens FROM online_usage WHERE evaluator = {m} AND hour_start = {m}{_for(conn)}",
                         (evaluator, hour))  # fmt: skip
    answered = reported if reported is not None else (0, 0)
    conn.exec_driver_sql(_TOKENS.format(m=m), (sum(answered) - sum(held), evaluator, hour))
    if reported is not None and ended:
        judge_spend.add(conn, {evaluator: [SpendRow(model, ERROR, 0, *reported, 0.0)]}, hour)
    conn.exec_driver_sql(_SHIFT.format(m=m), (-1, -held[0], -held[1], evaluator, hour, model, HOLDING))
    if reported is not None and not ended:
        judge_spend.add(conn, {evaluator: [SpendRow(model, HELD, 1, *reported, 0.0)]}, hour)


def release(conn: Connection, calls: Iterable[tuple[str, Released]]) -> None:
    """Move the cost of answered calls (``(evaluator, call)`` each) out of their held rows to their outcomes' rows of
    the hour they were held in (where the budget checked them), in the transaction that stores their results (after
    :func:`online_usage.lock`: rows locked in one order, outcomes' before held)."""
    m = _mark(conn)
    ordered = sorted(calls)
    for evaluator, call in ordered:
        row = SpendRow(call.model, call.outcome, 1, call.input_tokens, call.output_tokens, call.seconds)
        judge_spend.add(conn, {evaluator: [row]}, call.hour_start)
    for evaluator, call in ordered:
        shift = (-1, -call.input_tokens, -call.output_tokens, evaluator, call.hour_start, call.model, HELD)
        conn.exec_driver_sql(_SHIFT.format(m=m), shift)


def _fits(used: Sequence[float], wanted: Sequence[float], bounds: Sequence[float | None]) -> bool:
    return all(limit is None or spent + want <= limit for spent, want, limit in zip(used, wanted, bounds, strict=True))


def _cost(price: ModelPrice | None, input_tokens: int, output_tokens: int) -> float:
    if price is None:
        return 0.0
    return (input_tokens * price.input_per_million + output_tokens * price.output_per_million) / 1e6


def _mark(conn: Connection) -> str:
    return "%s" if conn.dialect.name == "postgresql" or conn.dialect.paramstyle != "qmark" else "?"


def _for(conn: Connection) -> str:
    return " FOR UPDATE" if conn.dialect.name == "postgresql" else ""
