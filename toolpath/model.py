"""Core records shared by every part of toolpath (SPEC §1).

Records that toolpath writes forbid unknown fields, so a typo is an error rather than silently dropped data.
Trajectory items coming from datasets are accepted in both the Vertex form (``{"tool_name", "tool_input"}``)
and the ADK form (``{"name", "args", "id"}``) by :meth:`ToolCall.from_item` and :func:`parse_trajectory`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolpath.errors import DatasetError

JsonValue = Any
"""Any value JSON can hold (object, array, string, number, boolean or null)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Record):
    """One tool call of a trajectory."""

    name: str
    """The tool's name."""
    args: dict[str, JsonValue] | None = Field(default_factory=dict)
    """Arguments as a JSON object. ``None`` only in a *reference*, where it means "any arguments"."""
    result: JsonValue = None
    """What the tool returned, as JSON."""
    call_id: str | None = None
    """The id the model or framework gave the call, when known."""
    error: str | None = None
    """``"ExceptionType: message"`` when the call failed."""
    start_time: int | None = None
    """Start, in nanoseconds since the epoch."""
    end_time: int | None = None
    """End, in nanoseconds since the epoch."""

    @classmethod
    def from_item(cls, item: Any, *, where: str = "trajectory item") -> ToolCall:
        """Build a call from a dataset trajectory item in the Vertex or ADK form.

        A missing or null ``tool_input`` / ``args`` gives ``args=None`` (matches any arguments).
        """
        if isinstance(item, ToolCall):
            return item
        if not isinstance(item, Mapping):
            raise DatasetError(f"{where}: expected an object with 'tool_name' or 'name', got {_kind(item)}")
        if "tool_name" in item:
            name, args = item["tool_name"], item.get("tool_input")
        elif "name" in item:
            name, args = item["name"], item.get("args")
        else:
            raise DatasetError(f"{where}: has neither 'tool_name' nor 'name'")
        if not isinstance(name, str) or not name:
            raise DatasetError(f"{where}: tool name must be a non-empty string, got {name!r}")
        if isinstance(args, str):
            args = _loads_or_none(args)
            if args is None:
                raise DatasetError(f"{where}: arguments of {name!r} are a string that is not a JSON object")
        if args is not None and not isinstance(args, Mapping):
            raise DatasetError(f"{where}: arguments of {name!r} must be an object, got {_kind(args)}")
        return cls(
            name=name,
            args=dict(args) if args is not None else None,
            result=item.get("tool_output", item.get("result")),
            call_id=item.get("id", item.get("call_id")),
        )

    def to_vertex(self) -> dict[str, JsonValue]:
        """The Vertex dataset form ``{"tool_name", "tool_input"}``."""
        return {"tool_name": self.name, "tool_input": self.args if self.args is not None else {}}


class Invocation(_Record):
    """One user turn handled by an agent: the prompt, the tools it called in order, and its final answer."""

    invocation_id: str
    session_id: str
    agent_name: str | None = None
    prompt: str | None = None
    """The user's text."""
    response: str | None = None
    """The agent's final text."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """The predicted trajectory, in call order."""
    intermediate_responses: list[tuple[str, str]] = Field(default_factory=list)
    """``(author, text)`` pairs the agent produced before its final answer."""
    latency_seconds: float | None = None
    """Wall time of the run; ``None`` when the run raised."""
    failure: int = 0
    """1 when the run raised, else 0."""
    error: str | None = None
    trace_id: str | None = None
    started_at: datetime | None = None
    """Start of the run, UTC."""
    attributes: dict[str, JsonValue] = Field(default_factory=dict)

    @property
    def predicted_trajectory(self) -> list[dict[str, JsonValue]]:
        """The tool calls in the Vertex dataset form."""
        return [call.to_vertex() for call in self.tool_calls]


class Session(_Record):
    """A conversation: the invocations that share a session id, in order."""

    session_id: str
    agent_name: str | None = None
    invocations: list[Invocation] = Field(default_factory=list)


class MetricResult(_Record):
    """The score one metric gave one row. ``score`` is ``None`` when it could not be computed; then
    ``explanation`` says why."""

    score: float | None
    explanation: str | None = None
    details: dict[str, JsonValue] = Field(default_factory=dict)

    @classmethod
    def not_evaluated(cls, reason: str) -> MetricResult:
        return cls(score=None, explanation=reason)


def parse_trajectory(value: Any, *, where: str = "trajectory") -> list[ToolCall]:
    """Parse a trajectory cell: a list of calls, or a JSON string holding one (SPEC §1)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not valid JSON ({exc.msg} at char {exc.pos})") from None
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise DatasetError(f"{where}: expected a list of tool calls, got {_kind(value)}")
    return [ToolCall.from_item(item, where=f"{where}[{i}]") for i, item in enumerate(value)]


def ns_to_datetime(ns: int | None) -> datetime | None:
    """Nanoseconds since the epoch as an aware UTC datetime."""
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC)


def _loads_or_none(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
