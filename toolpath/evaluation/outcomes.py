"""What one agent run produced: the record every runner fills in (a live run, a recorded session, ADK's recorded
result) and every judge reads, below both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.model import Invocation, ToolCall


@dataclass
class AgentOutcome:
    """What one agent call produced, as the runner fills it into a row."""

    response: str | None
    tool_calls: Sequence[ToolCall]
    latency_in_seconds: float | None
    failure: int
    error: str | None
    invocation: Invocation | None
    """The invocation as traced and stored; ``None`` if tracing could not deliver it in time."""
    prompt: str | None = None
    """The user's text, when it is not the eval case's own (a simulated user wrote it)."""
    response_note: str | None = None
    """Why ``response`` is ``None`` although the agent returned something (it had no text: bytes), when tracing
    did not deliver the invocation, which says so itself."""
    produced: Invocation | None = field(default=None, repr=False)
    """The same run rebuilt from the values the agent produced, before redaction: what computed metrics score
    (:func:`~toolpath.evaluation.outcome_rows.scored_row`). It lives in this process's memory only: never store,
    write, log or show it."""
    adk_invocation: dict[str, Any] | None = field(default=None, repr=False)
    """ADK's own ``Invocation`` of this turn (JSON, as ADK's inference records it: app details, events in order),
    when ADK ran or recorded it; for ADK's judges (:mod:`toolpath.evaluation.evalsets.adk_invocations`)."""


def crash_message(turn: int, error: str | None) -> str:
    """How a run that ended in a raising turn is reported (as a simulated conversation's is)."""
    return f"turn {turn}: the agent failed: {error or 'it raised'}"
