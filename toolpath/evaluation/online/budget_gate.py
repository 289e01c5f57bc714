"""An online evaluator's judge budget, held call by call in the store (:mod:`toolpath.store.judge_holds`): the
holds its judge's :class:`~toolpath.judges.call_gate.GatedBackend` asks before each call it sends."""

from __future__ import annotations

import time
from typing import Any

from toolpath.judges.call_gate import BudgetHolds
from toolpath.store import judge_holds
from toolpath.store.online_usage import UsageLimits
from toolpath.store.usage import prices

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "StoreHolds"]

DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""The most tokens a reply of a judge with a budget may have, thinking included, unless the ``[judge]`` table's
``max_output_tokens`` says otherwise: each call is held against the budget at its most, so it needs one."""


class StoreHolds(BudgetHolds):
    """The holds of evaluator ``evaluator`` (its ``limits``) in ``store``, every process's together."""

    def __init__(self, store: Any, evaluator: str, limits: UsageLimits) -> None:
        self.store = store
        self.evaluator = evaluator
        self.limits = limits

    def hold(self, model: str, input_tokens: int, output_tokens: int) -> int | bool:
        price = prices(self.store).get(model) if self.limits.costed else None
        with self.store.durable_write() as conn:  # a hold lost in a power cut would be a call uncounted
            key = judge_holds.hold(
                conn, self.evaluator, self.limits, model, (input_tokens, output_tokens), price, time.time_ns()
            )
        return key is judge_holds.NoRoom.YET if isinstance(key, judge_holds.NoRoom) else key

    def settle(
        self, key: int, model: str, held: tuple[int, int], reported: tuple[int, int] | None, *, ended: bool = False
    ) -> None:
        with self.store.durable_write() as conn:
            judge_holds.settle(conn, self.evaluator, key, model, held, reported, ended=ended)
