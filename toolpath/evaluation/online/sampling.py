"""How much of the traffic an online evaluator scores: its sample, decided by a hash of each target's id and the
evaluator's name, so that every process writing to one store takes the same targets (and a rescore picks them
again), while two evaluators with the same rate take samples of their own; and its limits — targets scored per
hour, judge calls in flight, judge tokens per hour and per day."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from toolpath.errors import ConfigError

__all__ = ["JudgeBudget", "Limits", "check_rate", "sampled"]


def sampled(target_id: str, evaluator: str, rate: float) -> bool:
    """Whether a target falls in evaluator ``evaluator``'s sample of ``rate``: a hash of both names, so every
    process agrees."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    key = f"{evaluator}\x00{target_id}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


def check_rate(rate: float) -> float:
    """``rate`` when it is a share (0 to 1); otherwise a :class:`~toolpath.errors.ConfigError` naming
    ``sample_rate``."""
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"online: sample_rate must be between 0 and 1, got {rate}")
    return rate


@dataclass(frozen=True)
class JudgeBudget:
    """The judge tokens (input + output, cache hits free) an evaluator may spend per clock hour and per UTC day,
    every process on the store together; ``None``: no limit of that kind. Once one is spent, further targets are
    skipped (reason ``budget``) until the hour or day turns."""

    tokens_per_hour: int | None = None
    tokens_per_day: int | None = None
    cost_per_hour: float | None = None
    """The judge's cost per clock hour, in the currency of the model price table (tokens at its prices)."""
    cost_per_day: float | None = None

    def __post_init__(self) -> None:
        for name in ("tokens_per_hour", "tokens_per_day"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"online: budget {name} must be a whole number, at least 1, got {value!r}")
        for name in ("cost_per_hour", "cost_per_day"):
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < float("inf")
            ):
                raise ConfigError(f"online: budget {name} must be a number more than 0, got {value!r}")

    @property
    def limited(self) -> bool:
        return self.tokens_limited or self.costed

    @property
    def tokens_limited(self) -> bool:
        return self.tokens_per_hour is not None or self.tokens_per_day is not None

    @property
    def costed(self) -> bool:
        return self.cost_per_hour is not None or self.cost_per_day is not None


@dataclass(frozen=True)
class Limits:
    """What an evaluator may take of the traffic and of the judge."""

    sample_rate: float = 1.0
    """The share of the targets its filters admit that it scores (:func:`sampled`)."""
    max_per_hour: int | None = None
    """Targets it scores per clock hour, every process on the store together; the rest are skipped (reason
    ``rate``) and counted (``None``: no limit)."""
    concurrency: int | None = None
    """Its judge calls in flight at once, all its workers together; more wait (``None``: the ``[judge]``
    ``concurrency`` setting)."""
    budget: JudgeBudget = field(default_factory=JudgeBudget)

    def __post_init__(self) -> None:
        check_rate(self.sample_rate)
        for name in ("max_per_hour", "concurrency"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"online: {name} must be a whole number, at least 1, got {value!r}")

    def samples(self, target_id: str, evaluator: str) -> bool:
        """Whether the target of this id is in evaluator ``evaluator``'s sample."""
        return sampled(target_id, evaluator, self.sample_rate)

    @property
    def quota(self) -> bool:
        """Whether scoring a target must first ask the store for room (a rate or a budget, shared by processes)."""
        return self.max_per_hour is not None or self.budget.limited
