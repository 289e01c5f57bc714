"""What an online evaluator scores: its target — each turn as it is stored, or each session as a whole — and the
filters a stored invocation must pass to be scored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolpath.model import Invocation

__all__ = ["Filters", "TargetKind"]


class TargetKind(StrEnum):
    """What one of an evaluator's results is about."""

    TURN = "turn"
    """One invocation: a turn of a session, scored as it is stored."""
    SESSION = "session"
    """A session as a whole: all its turns, scored together."""


@dataclass(frozen=True)
class Filters:
    """Which stored invocations an evaluator considers; the defaults admit every one."""

    agent_names: tuple[str, ...] | None = None
    """Only these agents' invocations (``None``: every agent's)."""
    failures_only: bool = False
    """Only invocations that failed."""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """Invocation attributes that must have these values."""
    tool_called: tuple[str, ...] | None = None
    """Only invocations that called at least one of these tools (``None``: whatever they called)."""
    min_latency_seconds: float | None = None
    """Only invocations that took at least this long (a run that raised has no latency: not admitted)."""
    max_latency_seconds: float | None = None
    """Only invocations that took at most this long (likewise)."""

    def admits(self, invocation: Invocation) -> bool:
        """Whether ``invocation`` passes every filter."""
        if self.agent_names is not None and invocation.agent_name not in self.agent_names:
            return False
        if self.failures_only and not invocation.failure:
            return False
        if self.tool_called is not None and not any(c.name in self.tool_called for c in invocation.tool_calls):
            return False
        if self.min_latency_seconds is not None or self.max_latency_seconds is not None:
            latency = invocation.latency_seconds
            if latency is None:
                return False
            if self.min_latency_seconds is not None and latency < self.min_latency_seconds:
                return False
            if self.max_latency_seconds is not None and latency > self.max_latency_seconds:
                return False
        return all(invocation.attributes.get(key) == value for key, value in self.attributes.items())
