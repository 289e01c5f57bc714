"""What each online evaluator has taken per clock hour — targets claimed for scoring, judge tokens spent — in
``online_usage``, one row per evaluator and hour, shared by every process on the store; and the limits it is
held to: ``max_per_hour`` targets, judge tokens per hour and per UTC day.

A claim asks :func:`take` for room in the claim's own transaction. The hour's row is locked while it is read and
counted (PostgreSQL: the upsert's row lock, held to the commit; SQLite: one writer at a time), so workers in any
number of processes never take more than ``max_per_hour`` between them. Tokens are known once the judge has
answered: :func:`spend` adds them in the transaction that stores the results. A claim takes only the targets the
budget has room for at what a target has cost so far, beside those being scored (:func:`budget_room`); until one
has been scored in the hour (or day), one at a time (:func:`cost_unknown`).

Transactions lock the rows they need at one point, all at once, in the order of the evaluators' names: two of
them never wait for each other's rows in opposite orders.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection

from toolpath.store.job_status import SkipReason

__all__ = ["EvaluatorUsage", "UsageLimits", "hour_of", "lock", "read", "spend", "take"]

HOUR_NS = 3600 * 10**9
DAY_NS = 24 * HOUR_NS
_LOCK = (  # creates the hour's row, or locks it as it is (PostgreSQL holds the lock to the commit)
    "INSERT INTO online_usage (evaluator, hour_start, targets, tokens) VALUES ({m}, {m}, 0, 0) "
    "ON CONFLICT (evaluator, hour_start) DO UPDATE SET targets = online_usage.targets RETURNING targets, tokens"
)
_DAY = (
    "SELECT coalesce(sum(tokens), 0), coalesce(sum(targets), 0) FROM online_usage "
    "WHERE evaluator = {m} AND hour_start >= {m} AND hour_start < {m}"
)
_COST = (  # an evaluator's judge cost from a time on, and whether tokens were spent on a model without a price
    "SELECT sum((s.input_tokens * p.input_per_million + s.output_tokens * p.output_per_million) / 1000000.0), "
    "sum(CASE WHEN p.model IS NULL AND s.input_tokens + s.output_tokens > 0 THEN 1 ELSE 0 END) "
    "FROM judge_spend s LEFT JOIN model_prices p ON p.model = s.model "
    "WHERE s.evaluator = {m} AND s.hour_start >= {m} AND s.hour_start < {m} AND s.outcome <> {m}"
)  # a cached reply's tokens were not spent again (CACHED)
_HELD = (  # what an evaluator's calls hold (judge_holds), by outcome, in tokens and in cost at the prices
    "SELECT s.outcome, coalesce(sum(s.input_tokens + s.output_tokens), 0), "
    "coalesce(sum((s.input_tokens * p.input_per_million + s.output_tokens * p.output_per_million) / 1000000.0), 0) "
    "FROM judge_spend s LEFT JOIN model_prices p ON p.model = s.model "
    "WHERE s.evaluator = {m} AND s.outcome IN ({m}, {m}) AND s.hour_start >= {m} AND s.hour_start < {m} "
    "GROUP BY s.outcome"
)
HOLDING = "holding"
"""The ``judge_spend`` outcome of calls in flight, held in their evaluator's budget at the most they can cost
(:mod:`toolpath.store.judge_holds`); left by a process that stopped while they were (their cost unknown)."""
HELD = "held"
"""The ``judge_spend`` outcome of calls answered, their cost held in their evaluator's budget until their results
are stored; left by a process that stopped before it stored them."""
CACHED = "cached"
"""The ``judge_spend`` outcome of replies answered from the store's cache: counted as calls, their tokens (the
reply's, as first bought) not spent again, in no budget's cost nor the spend shown."""
_COUNT = (
    "UPDATE online_usage SET targets = targets + {m}, tokens = tokens + {m} WHERE evaluator = {m} AND hour_start = {m}"
)


@dataclass(frozen=True)
class UsageLimits:
    """What one evaluator may take; ``None``: no limit of that kind."""

    max_per_hour: int | None = None
    tokens_per_hour: int | None = None
    tokens_per_day: int | None = None
    cost_per_hour: float | None = None
    """The judge's cost (its ``judge_spend`` at the model price table's prices) per clock hour."""
    cost_per_day: float | None = None

    @property
    def costed(self) -> bool:
        return self.cost_per_hour is not None or self.cost_per_day is not None

    @property
    def budgeted(self) -> bool:
        """A budget of the judge's, in tokens or cost."""
        return self.costed or self.tokens_per_hour is not None or self.tokens_per_day is not None


@dataclass
class EvaluatorUsage:
    """An evaluator's use of the hour and the day so far, beside its limits (what ``/metrics`` shows)."""

    targets: int
    """Targets taken this clock hour."""
    tokens: int
    """Judge tokens spent this clock hour."""
    day_tokens: int
    """Judge tokens spent this UTC day."""
    limits: UsageLimits
    cost: float = 0.0
    """The judge's cost this clock hour (with a budget in cost; infinite when a model it called has no price)."""
    day_cost: float = 0.0
    """And this UTC day."""
    day_targets: int = 0
    """Targets taken this UTC day (read with a day budget)."""
    costliest: float = 0.0
    """The most judge tokens one target of this evaluator has cost, as far as this process has seen
    (:class:`Costliest`); 0: none seen."""
    flying: tuple[float, float, float, float] = (0, 0, 0.0, 0.0)
    """Of the tokens this hour and day, and of the cost this hour and day: what calls in flight hold at their most
    (:mod:`toolpath.store.judge_holds`; read with a budget by :func:`lock`), not yet what they cost."""
    answered: tuple[float, float, float, float] = (0, 0, 0.0, 0.0)
    """And what calls answered cost, held until their targets' results are stored."""

    def used(self) -> tuple[float, float, float, float]:
        """The tokens this hour and day and the cost this hour and day, calls in flight held at their most."""
        return self.tokens, self.day_tokens, self.cost, self.day_cost

    def spent(self) -> tuple[float, float, float, float]:
        """As :meth:`used`, the calls of targets being scored left out: what targets scored have cost (what a
        claim prices the next by)."""
        hour, day, hour_cost, day_cost = (
            used - flying - answered
            for used, flying, answered in zip(self.used(), self.flying, self.answered, strict=True)
        )
        return hour, day, hour_cost, day_cost

    def bounds(self) -> tuple[float | None, ...]:
        limits = self.limits
        return limits.tokens_per_hour, limits.tokens_per_day, limits.cost_per_hour, limits.cost_per_day

    @property
    def budget_spent(self) -> bool:
        return any(limit is not None and used >= limit for limit, used in zip(self.bounds(), self.spent(), strict=True))


def hour_of(ns: int) -> int:
    """The start of the clock hour of ``ns`` (nanoseconds since the epoch, UTC)."""
    return ns - ns % HOUR_NS


def _mark(conn: Connection) -> str:
    return "%s" if conn.dialect.name == "postgresql" or conn.dialect.paramstyle != "qmark" else "?"


def lock(conn: Connection, limits: Mapping[str, UsageLimits], now: int) -> dict[str, EvaluatorUsage]:
    """The hour's use of each evaluator of ``limits``, its row locked for the rest of the transaction (in the
    order of their names); call once a transaction."""
    m = _mark(conn)
    hour, day = hour_of(now), now - now % DAY_NS
    used: dict[str, EvaluatorUsage] = {}
    for name in sorted(limits):
        if day != hour and (limits[name].tokens_per_day is not None or limits[name].cost_per_day is not None):
            conn.exec_driver_sql(_LOCK.format(m=m), (name, day)).one()  # the day's row first: two hours, one day
        targets, tokens = conn.exec_driver_sql(_LOCK.format(m=m), (name, hour)).one()
        day_tokens, day_targets = tokens, targets
        if limits[name].tokens_per_day is not None or limits[name].cost_per_day is not None:
            day_tokens, day_targets = conn.exec_driver_sql(_DAY.format(m=m), (name, day, day + DAY_NS)).one()
        used[name] = EvaluatorUsage(int(targets), int(tokens), int(day_tokens), limits[name])
        used[name].day_targets = int(day_targets)
        if limits[name].costed:
            used[name].cost, used[name].day_cost = _costs(conn, name, now)
        if limits[name].budgeted:
            _read_held(conn, used[name], name, hour, day)
    return used


def _read_held(conn: Connection, usage: EvaluatorUsage, name: str, hour: int, day: int) -> None:
    """``usage``'s tokens and cost held for calls in flight and for calls answered (their targets not stored)."""
    m = _mark(conn)
    held: dict[str, list[float]] = {HOLDING: [0, 0, 0.0, 0.0], HELD: [0, 0, 0.0, 0.0]}
    for place, start in ((0, hour), (1, day)):
        for outcome, tokens, cost in conn.exec_driver_sql(
            _HELD.format(m=m), (name, HOLDING, HELD, start, day + DAY_NS)
        ):
            held[outcome][place], held[outcome][place + 2] = int(tokens), float(cost)
    usage.flying = (held[HOLDING][0], held[HOLDING][1], held[HOLDING][2], held[HOLDING][3])
    usage.answered = (held[HELD][0], held[HELD][1], held[HELD][2], held[HELD][3])


def take(
    conn: Connection, usage: EvaluatorUsage, name: str, wanted: int, now: int, in_flight: int = 0
) -> tuple[int, SkipReason | None]:
    """How many of ``wanted`` new targets evaluator ``name`` may score now (``usage``: its row, from
    :func:`lock` in this transaction), counted; and why the rest may not. ``in_flight``: its other targets being
    scored now, whose cost is not counted yet: the budget keeps room for them (:func:`budget_room`)."""
    if wanted <= 0:
        return 0, None
    if usage.budget_spent:
        return 0, SkipReason.BUDGET
    per_hour = usage.limits.max_per_hour
    room = wanted if per_hour is None else max(0, min(wanted, per_hour - usage.targets))
    reason = SkipReason.RATE if room < wanted else None
    left = budget_room(usage, in_flight)
    if left is not None and left < room:
        room, reason = left, SkipReason.BUDGET
    if room:
        _count(conn, name, room, 0, now)
        usage.targets += room
        usage.day_targets += room
    return room, reason


def cost_unknown(usage: EvaluatorUsage, in_flight: int) -> bool:
    """Whether an evaluator with a budget has no target scored yet this hour or day to learn a target's cost from:
    it then scores one at a time (the others wait, not skipped) until one is."""
    limits = usage.limits
    kinds = ((limits.tokens_per_hour, usage.targets), (limits.tokens_per_day, usage.day_targets),
             (limits.cost_per_hour, usage.targets), (limits.cost_per_day, usage.day_targets))  # fmt: skip
    return any(limit is not None and taken - in_flight <= 0 for limit, taken in kinds)


def budget_room(usage: EvaluatorUsage, in_flight: int) -> int | None:
    """How many more targets the budget has room for, once the ``in_flight`` targets (being scored: taken, not yet
    counted) have had theirs: each at the dearest of the mean cost of those scored so far in its hour or day and
    the costliest target this process has seen (:class:`Costliest`, scaled from tokens to cost by the mean's
    ratio), so that the targets taken do not cost more than the budget unless one costs more than any before it.
    ``None``: no limit, or no target scored yet to take the cost of."""
    limits = usage.limits
    spent = usage.spent()
    kinds = (  # the limit, what was used of it, the targets taken and the tokens spent in its hour or day
        (limits.tokens_per_hour, spent[0], usage.targets, spent[0]),
        (limits.tokens_per_day, spent[1], usage.day_targets, spent[1]),
        (limits.cost_per_hour, spent[2], usage.targets, spent[0]),
        (limits.cost_per_day, spent[3], usage.day_targets, spent[1]),
    )
    rooms = []
    for limit, used, taken, tokens in kinds:
        scored = taken - in_flight
        if limit is None or used <= 0 or scored <= 0 or used == float("inf"):
            continue
        each = used / scored
        if usage.costliest * scored > tokens > 0:  # a target dearer than the mean was seen: priced as dear
            each *= usage.costliest * scored / tokens
        rooms.append(max(0, int((limit - used) // each) - in_flight))
    return min(rooms) if rooms else None


class Costliest:
    """The most judge tokens a target of each evaluator has cost, as this process scored them: the budget takes
    each target waiting to be scored for that dear, so that targets cheaper at first than later (a conversation's
    cost grows with its turns) do not let the targets taken pass the budget."""

    def __init__(self) -> None:
        self._tokens: dict[str, float] = {}
        self._lock = threading.Lock()

    def scored(self, tokens: Mapping[str, int], targets: Mapping[str, int]) -> None:
        """A batch's judge ``tokens`` per evaluator, over the ``targets`` it scored of each."""
        with self._lock:
            for name, spent in tokens.items():
                if spent > 0 and targets.get(name, 0) > 0:
                    self._tokens[name] = max(self._tokens.get(name, 0.0), spent / targets[name])

    def apply(self, usage: Mapping[str, EvaluatorUsage]) -> None:
        with self._lock:
            for name, row in usage.items():
                row.costliest = self._tokens.get(name, 0.0)


def spend(conn: Connection, usage: Mapping[str, EvaluatorUsage], tokens: Mapping[str, int], now: int) -> None:
    """Add the judge tokens each evaluator's scoring spent (its row locked by :func:`lock`) to the hour."""
    for name, spent in sorted(tokens.items()):
        if spent > 0 and name in usage:
            _count(conn, name, 0, spent, now)
            usage[name].tokens += spent
            usage[name].day_tokens += spent


def give_back(conn: Connection, targets: Iterable[tuple[str, int]]) -> None:
    """Targets taken but never scored (a worker stopping gave their jobs back): ``(evaluator, claimed_at)`` each,
    uncounted from the hour they were taken in (rows locked by :func:`lock` where they are this hour's)."""
    m = _mark(conn)
    for name, claimed_at in targets:
        conn.exec_driver_sql(
            f"UPDATE online_usage SET targets = targets - 1 WHERE evaluator = {m} AND hour_start = {m} AND targets > 0",
            (name, hour_of(claimed_at)),
        )


def read(conn: Connection, limits: Mapping[str, UsageLimits], now: int) -> dict[str, EvaluatorUsage]:
    """Each evaluator's use of the hour and the day, read without locking (for ``/metrics`` and the pages)."""
    m = _mark(conn)
    hour, day = hour_of(now), now - now % DAY_NS
    used = {}
    for name, evaluator_limits in sorted(limits.items()):
        row = conn.exec_driver_sql(
            f"SELECT targets, tokens FROM online_usage WHERE evaluator = {m} AND hour_start = {m}", (name, hour)
        ).first()
        day_tokens, _ = conn.exec_driver_sql(_DAY.format(m=m), (name, day, day + DAY_NS)).one()
        targets, tokens = (int(row[0]), int(row[1])) if row is not None else (0, 0)
        used[name] = EvaluatorUsage(targets, tokens, int(day_tokens), evaluator_limits)
        if evaluator_limits.costed:
            used[name].cost, used[name].day_cost = _costs(conn, name, now)
    return used


def _costs(conn: Connection, name: str, now: int) -> tuple[float, float]:
    """What evaluator ``name``'s judge cost this clock hour and this UTC day (its ``judge_spend`` at the
    prices of ``model_prices``); infinite when a model it spent tokens on has no price, as the cost cannot be
    known (the budget is then spent: better to skip than to spend unaccounted)."""
    m = _mark(conn)
    hour, day = hour_of(now), now - now % DAY_NS
    costs = []
    for start in (hour, day):
        priced, unpriced = conn.exec_driver_sql(_COST.format(m=m), (name, start, day + DAY_NS, CACHED)).one()
        costs.append(float("inf") if unpriced else float(priced or 0.0))
    return costs[0], costs[1]


def _count(conn: Connection, name: str, targets: int, tokens: int, now: int) -> None:
    conn.exec_driver_sql(_COUNT.format(m=_mark(conn)), (targets, tokens, name, hour_of(now)))
