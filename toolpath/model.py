"""Core records shared by every part of toolpath (docs/spec.md §1).

Records that toolpath writes forbid unknown fields, so a typo is an error rather than silently dropped data.
Trajectory items coming from datasets are accepted in both the Vertex form (``{"tool_name", "tool_input"}``)
and the ADK form (``{"name", "args", "id"}``) by :meth:`ToolCall.from_item` and :func:`parse_trajectory`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Hashable, Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field

from toolpath.errors import DatasetError
from toolpath.values import json_identity, python_identity

__all__ = ["EvalStatus", "Invocation", "MetricResult", "Session", "ToolCall"]

JsonValue = Any
"""Any value JSON can hold (object, array, string, number, boolean or null)."""

TRAJECTORY_COLUMNS = ("predicted_trajectory", "reference_trajectory")
"""The dataset columns that hold trajectories (docs/spec.md §5)."""


_T = TypeVar("_T")
_R = TypeVar("_R", bound="_Record")


class cached(functools.cached_property[_T], Generic[_T]):  # a decorator, named as one
    """:func:`functools.cached_property` without Python 3.11's lock, which costs more than these values."""

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> cached[_T]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> _T | cached[_T]:
        if instance is None:
            return self
        value = instance.__dict__[self.attrname] = self.func(instance)  # type: ignore[index]
        return value


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", ignored_types=(cached,))


class ToolCall(_Record):
    """One tool call of a trajectory."""

    name: str
    """The tool's name."""
    args: dict[str, JsonValue] | None = Field(default_factory=dict)
    """Arguments as a JSON object; ``None`` when the call has none at all (ADK's ``args`` absent or null), which
    ADK's rule holds unequal to ``{}``. In a reference for Vertex's ``trajectory_*`` metrics, ``None`` matches
    any arguments."""
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
    agent_name: str | None = None
    """The agent that made the call (the nearest agent run enclosing it: a sub-agent's call names the sub-agent,
    not the invocation's root agent); ``None`` when unknown. Never compared: two calls are equal whoever made
    them (:attr:`match_key`)."""

    @classmethod
    def from_item(cls, item: Any, *, where: str = "trajectory item") -> ToolCall:
        """Build a call from a dataset trajectory item in the Vertex or ADK form, checked here rather than by
        pydantic (a bad item is a :class:`DatasetError` naming ``where`` and the field). A missing or null
        ``tool_input`` / ``args`` gives ``args=None`` (no arguments; a wildcard in a Vertex reference)."""
        if item.__class__ is not dict:
            if isinstance(item, ToolCall):
                return item
            if not isinstance(item, Mapping):
                raise DatasetError(f"{where}: expected an object with 'tool_name' or 'name', got {kind_of(item)}")
        if "tool_name" in item:
            name, args = item["tool_name"], item.get("tool_input")
        elif "name" in item:
            name, args = item["name"], item.get("args")
        else:
            raise DatasetError(f"{where}: has neither 'tool_name' nor 'name'")
        if name.__class__ is not str or not name:
            if not isinstance(name, str) or not name:
                raise DatasetError(f"{where}: tool name must be a non-empty string, got {name!r}")
            name = str(name)
        if args.__class__ is dict:
            args = dict(args)
        elif args is not None:
            if isinstance(args, str):
                args = _loads_or_none(args)
                if args is None:
                    raise DatasetError(f"{where}: arguments of {name!r} are a string that is not a JSON object")
            if not isinstance(args, Mapping):
                raise DatasetError(f"{where}: arguments of {name!r} must be an object, got {kind_of(args)}")
            args = dict(args)
        if args:
            try:
                "".join(args)  # every name a string, checked in C
            except TypeError:
                raise DatasetError(f"{where}: argument names of {name!r} must be strings, got {list(args)!r}") from None
        call_id = result = error = agent = None
        if len(item) > 2 or (args is None and len(item) == 2):  # more than the name and arguments
            call_id = item["id"] if "id" in item else item.get("call_id")
            if call_id is not None and not isinstance(call_id, str):
                raise DatasetError(f"{where}: the id of {name!r} must be a string, got {kind_of(call_id)}")
            result = item["tool_output"] if "tool_output" in item else item.get("result")
            error = None if item.get("error") is None else str(item["error"])
            if error is None and result.__class__ is dict:
                error = mcp_tool_error(result)
            agent = item["agent_name"] if "agent_name" in item else item.get("author")
        call = call_record(cls, name, args, result, call_id, error)
        if agent is not None:
            if not isinstance(agent, str):
                raise DatasetError(f"{where}: the agent of {name!r} must be a string, got {kind_of(agent)}")
            call.__dict__["agent_name"] = agent
            call.__pydantic_fields_set__.add("agent_name")
        return call

    @cached
    def bool_paths(self) -> frozenset[tuple[Any, ...]]:
        """Where the arguments hold booleans. Two argument values are equal as JSON exactly when they are
        ``==`` in Python and hold booleans at the same places (``==`` alone has ``True == 1``). Cached:
        treat a record's ``args`` as read-only once compared."""
        return _bool_paths(self.args, ()) if self.args else _NO_PATHS

    @cached
    def match_key(self) -> tuple[str, dict[str, JsonValue] | None]:
        """``(name, args)``: two calls are equal by ADK's rule (docs/spec.md §4: ``==`` of the decoded values, so
        ``1 == 1.0 == True``, and absent arguments ``None`` differ from ``{}``) exactly when their keys are
        ``==``, which Python compares in C. Meaningless for a reference whose ``None`` is a wildcard."""
        return self.name, self.args

    @cached
    def identity(self) -> tuple[str, Any]:
        """A hashable form of :attr:`match_key`, equal exactly when the match keys are (:func:`python_identity`)."""
        return self.name, python_identity(self.args)

    @cached
    def json_match_key(self) -> tuple[str, dict[str, JsonValue] | None, frozenset[tuple[Any, ...]]]:
        """``(name, args, bool_paths)``: equal exactly when two calls are equal as JSON (``true != 1``;
        ``null != {}``)."""
        return self.name, self.args, self.bool_paths

    @cached
    def json_identity(self) -> tuple[str, Hashable]:
        """``(name, the arguments' JSON identity)``: hashable, equal exactly when :attr:`json_match_key` is
        (:func:`toolpath.values.json_identity`)."""
        return self.name, json_identity(self.args)

    def to_vertex(self) -> dict[str, JsonValue]:
        """The Vertex dataset form ``{"tool_name", "tool_input"}`` (``tool_input`` null when the call has no
        arguments at all, which :meth:`from_item` reads back as ``None``)."""
        return {"tool_name": self.name, "tool_input": self.args}

    def to_item(self) -> dict[str, JsonValue]:
        """The Vertex form, plus ``error`` when the call failed (the behaviour metrics read it)."""
        item = self.to_vertex()
        if self.error is not None:
            item["error"] = self.error
        return item


class Invocation(_Record):
    """One user turn handled by an agent: the prompt, the tools it called in order, and its final answer."""

    invocation_id: str
    session_id: str
    agent_name: str | None = None
    """The agent the turn was sent to (the root agent of a multi-agent system)."""
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
    answered_by: str | None = None
    """The agent that gave the final response (the author of the last answer: a sub-agent the turn was
    transferred to, say); ``None`` when unknown."""

    @property
    def predicted_trajectory(self) -> list[dict[str, JsonValue]]:
        """The tool calls in the Vertex dataset form."""
        return [call.to_vertex() for call in self.tool_calls]

    @property
    def span_id(self) -> str | None:
        """The agent span this invocation was rebuilt from, when its id is :func:`invocation_key`'s."""
        return agent_span_id(self.invocation_id, self.trace_id)


def invocation_key(trace_id: str, span_id: str) -> str:
    """The id of the invocation rebuilt from agent span ``span_id`` of trace ``trace_id``: both ids, since a span
    id is unique only within its trace (docs/spec.md §3)."""
    return f"{trace_id}-{span_id}"


def agent_span_id(invocation_id: str, trace_id: str | None) -> str | None:
    """The agent span an invocation of ``trace_id`` was rebuilt from, when its id is :func:`invocation_key`'s."""
    if trace_id and invocation_id.startswith(f"{trace_id}-"):
        return invocation_id[len(trace_id) + 1 :]
    return None


class Session(_Record):
    """A conversation: the invocations that share a session id, in order."""

    session_id: str
    agent_name: str | None = None
    invocations: list[Invocation] = Field(default_factory=list)


class ExpectedInvocation(_Record):
    """One turn of an eval case: what the user says and what the agent is expected to do."""

    invocation_id: str | None = None
    prompt: str
    """The text of the user's message (its text parts joined with newlines, as ADK shows it)."""
    user_content: dict[str, JsonValue] | None = None
    """The user's message as the eval set gives it (ADK's ``Content`` as JSON) when it is more than ``prompt`` as
    one ``user`` text part — several parts, say; an ADK agent is sent it as it is, as ADK's evaluation sends it."""
    reference: str | None = None
    """The expected final response; ``None`` when the case gives none."""
    reference_trajectory: list[ToolCall] = Field(default_factory=list)
    tool_responses: list[JsonValue] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, str]] = Field(default_factory=list)
    adk: dict[str, JsonValue] | None = Field(default=None, repr=False)
    """The turn as the eval set gives it (ADK's ``Invocation`` as JSON: its rubrics, intermediate data, app
    details), for ADK's own judges; ``None`` when it does not come from an ADK eval set."""


class EvalCase(_Record):
    """A conversation to replay against an agent, turn by turn in one session (an ADK eval case)."""

    eval_set_id: str
    eval_id: str
    invocations: list[ExpectedInvocation]
    app_name: str | None = None
    user_id: str | None = None
    initial_state: dict[str, JsonValue] = Field(default_factory=dict)
    session_id: str | None = None
    """A fixed session id for the case's runs (ADK's ``session_input.session_id``); ``None``: a fresh one each run."""
    conversation_scenario: dict[str, JsonValue] | None = None
    """ADK's simulated-user scenario, when the case gives one instead of a conversation (a simulated user plays it)."""
    source: str | None = None
    """The file the case was read from."""
    rubrics: list[dict[str, JsonValue]] = Field(default_factory=list)
    """ADK's rubrics of the whole case (``Rubric`` as JSON): ADK's judges apply them to every invocation."""


class EvalStatus(StrEnum):
    """A verdict as ADK's ``EvalStatus`` names it: of an invocation, a criterion, a run or an eval case. Its value
    is ADK's member name, the text toolpath's JSON results, the store and the UI hold."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_EVALUATED = "NOT_EVALUATED"
    INFORMATIONAL = "INFORMATIONAL"
    """ADK's efficiency figures: reported, never judged."""


class MetricResult:
    """The score one metric gave one row. ``score`` is ``None`` when it could not be computed; then
    ``explanation`` says why.

    ``explanation`` may be given as a zero-argument callable: it is rendered the first time it is read, so
    a metric scoring many rows pays for explanation text only where someone looks at it.
    """

    __slots__ = ("_details", "_explanation", "score")

    def __init__(
        self,
        score: float | None,
        explanation: str | Callable[[], str] | None = None,
        details: dict[str, JsonValue] | None = None,
    ) -> None:
        self.score = score
        self._explanation = explanation
        self._details = details

    def detail_items(self) -> Iterable[tuple[str, JsonValue]]:
        return self._details.items() if self._details else ()

    @property
    def details(self) -> dict[str, JsonValue]:
        """Extra values the metric reports beside its score (e.g. per-invocation scores); empty by default."""
        if self._details is None:
            self._details = {}
        return self._details

    @property
    def explanation(self) -> str | None:
        text = self._explanation
        if callable(text):
            text = self._explanation = text()
        return text

    @classmethod
    def not_evaluated(cls, reason: str) -> MetricResult:
        return cls(None, reason)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricResult):
            return NotImplemented
        return (self.score, self.explanation, self.details) == (other.score, other.explanation, other.details)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as __eq__ compares values

    def __repr__(self) -> str:
        return f"MetricResult(score={self.score!r}, explanation={self.explanation!r}, details={self.details!r})"


_NO_PATHS: frozenset[tuple[Any, ...]] = frozenset()


def _bool_paths(value: Any, path: tuple[Any, ...]) -> frozenset[tuple[Any, ...]]:
    if value.__class__ is bool:
        return frozenset((path,))
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return _NO_PATHS
    found = _NO_PATHS
    for key, item in items:
        if item.__class__ is bool or isinstance(item, dict | list | tuple):
            found = found | _bool_paths(item, (*path, key))
    return found


def ns_to_datetime(ns: int | None) -> datetime | None:
    """Nanoseconds since the epoch as an aware UTC datetime."""
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC)


def _loads_or_none(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


_TIMES = {"start_time": None, "end_time": None, "agent_name": None}
_new_object = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__  # the slots, set without a lookup
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def call_record(cls: type[ToolCall], name: str, args: Any, result: Any, call_id: Any, error: Any) -> ToolCall:
    """What ``cls.model_construct`` builds from these checked values (no times), for a fraction of its cost."""
    call = _new_object(cls)
    _set_dict(call, {"name": name, "args": args, "result": result, "call_id": call_id, "error": error, **_TIMES})
    _set_fields(call, {"name", "args", "result", "call_id", "error"})
    _set_extra(call, None)
    _set_private(call, None)
    return call


def constructed(cls: type[_R], values: dict[str, Any]) -> _R:
    """What ``cls.model_construct(**values)`` builds when ``values`` names every field in order (checked
    values: nothing is validated), for a fraction of its cost."""
    record = _new_object(cls)
    _set_dict(record, values)
    _set_fields(record, set(values))
    _set_extra(record, None)
    _set_private(record, None)
    return record


def kind_of(value: Any) -> str:
    """How an error message names a value's type (JSON's ``null`` for ``None``)."""
    return "null" if value is None else type(value).__name__


def mcp_tool_error(result: Mapping[str, Any]) -> str | None:
    """The error an MCP ``CallToolResult`` (``{"content": [...], "isError": true}``) says, as a trajectory item's
    result may hold it: ``tool_error: `` and the result's text; ``None`` for any other result."""
    if result.get("isError") is not True and result.get("is_error") is not True:
        return None
    blocks = result.get("content")
    if not isinstance(blocks, list):
        return None
    texts = [b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    return "tool_error: " + "\n".join(texts) if texts else "tool_error"
