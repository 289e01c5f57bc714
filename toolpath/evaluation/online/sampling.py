"""How much of the traffic an online evaluator scores: its sample, decided by a hash of each invocation's id, so
that every process writing to one store takes the same invocations."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from toolpath.errors import ConfigError

__all__ = ["Limits", "check_rate", "sampled"]


def sampled(invocation_id: str, rate: float) -> bool:
    """Whether an invocation falls in a sample of ``rate``: a hash of its id, so every process agrees."""
    if rate >= 1.0:
        return True
    digest = hashlib.blake2b(invocation_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


def check_rate(rate: float) -> float:
    """``rate`` when it is a share (0 to 1); otherwise a :class:`~toolpath.errors.ConfigError` naming
    ``sample_rate``."""
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"online: sample_rate must be between 0 and 1, got {rate}")
    return rate


@dataclass(frozen=True)
class Limits:
    """What an evaluator may take of the traffic."""

    sample_rate: float = 1.0
    """The share of the invocations its filters admit that it scores (:func:`sampled`)."""

    def __post_init__(self) -> None:
        check_rate(self.sample_rate)

    def samples(self, invocation_id: str) -> bool:
        """Whether the invocation of this id is in the sample."""
        return sampled(invocation_id, self.sample_rate)
