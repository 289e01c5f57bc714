"""Trajectories as datasets are parsed into, and what the metrics compare of their calls, cached
(docs/spec.md §1, §4)."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, overload

from toolpath.errors import DatasetError
from toolpath.jsontext import strict_loads
from toolpath.model import JsonValue, ToolCall, cached, call_record, kind_of
from toolpath.values import counts, python_identity

_new_object = object.__new__


class Trajectory(Sequence[ToolCall]):
    """An immutable trajectory, as datasets are parsed into; caches what the metrics compare.

    A dataset's usual item, ``{"tool_name": str, "tool_input": {...}}``, is kept as its match key ``(name,
    args)`` and its :class:`ToolCall` record is built only when a call is read: the trajectory metrics compare keys,
    so a row scored by them never pays for records (:func:`parse_trajectory`)."""

    __slots__ = ("__dict__", "_calls")

    def __init__(self, calls: Iterable[ToolCall] = ()) -> None:
        self._calls: tuple[ToolCall, ...] | None = tuple(calls)

    @classmethod
    def of_keys(
        cls, keys: list[tuple[str, dict[str, JsonValue]]], agents: Sequence[str | None] | None = None
    ) -> Trajectory:
        """A trajectory of calls with only a name and arguments (a ``dict``: no wildcard), given as match keys, and
        the agent that made each call (``agents``, one per key, when the calls name theirs)."""
        trajectory = _new_object(cls)
        trajectory._calls = None
        trajectory.__dict__ = {"match_keys": tuple(keys), "has_wildcard": False}
        if agents is not None:
            trajectory.__dict__["_agents"] = tuple(agents)
        return trajectory

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The call records, built from the match keys when first read."""
        calls = self._calls
        if calls is None:
            calls = tuple([call_record(ToolCall, n, a, None, None, None) for n, a in self.match_keys])
            for call, agent in zip(calls, self.__dict__.get("_agents", ()), strict=False):
                if agent is not None:
                    call.__dict__["agent_name"] = agent
                    call.__pydantic_fields_set__.add("agent_name")
            self._calls = calls
        return calls

    def __len__(self) -> int:
        return len(self.match_keys if self._calls is None else self._calls)

    @overload
    def __getitem__(self, index: int) -> ToolCall: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ToolCall, ...]: ...
    def __getitem__(self, index: int | slice) -> ToolCall | tuple[ToolCall, ...]:
        return self.calls[index]

    def __iter__(self) -> Iterator[ToolCall]:
        return iter(self.calls)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Trajectory):
            return self.calls == other.calls
        return self.calls == other if isinstance(other, tuple) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # its calls are not hashable

    def __repr__(self) -> str:
        return f"Trajectory({list(self.calls)!r})"

    @cached
    def match_keys(self) -> tuple[tuple[str, dict[str, JsonValue] | None], ...]:
        return tuple([(call.name, call.args) for call in self.calls])  # each call's match_key

    @cached
    def has_wildcard(self) -> bool:
        return any([args is None for _, args in self.match_keys])  # a list: no generator to start

    @cached
    def identities(self) -> tuple[tuple[str, Any], ...]:
        frozen = []
        for name, args in self.match_keys:  # python_identity, its usual case inline
            try:
                frozen.append((name, frozenset(args.items())))  # type: ignore[union-attr]
            except (AttributeError, TypeError):
                frozen.append((name, python_identity(args)))
        return tuple(frozen)

    @cached
    def identity_counts(self) -> dict[tuple[str, Any], int]:
        return counts(self.identities)

    @cached
    def json_match_keys(self) -> tuple[tuple[str, dict[str, JsonValue] | None, frozenset[tuple[Any, ...]]], ...]:
        return tuple(call.json_match_key for call in self.calls)

    @cached
    def json_identities(self) -> tuple[tuple[str, Hashable], ...]:
        return tuple(call.json_identity for call in self.calls)

    @cached
    def json_identity_counts(self) -> dict[tuple[str, Hashable], int]:
        return counts(self.json_identities)


def match_keys(calls: Sequence[ToolCall], json_strict: bool = False) -> tuple[Any, ...]:
    """The calls' match keys (cached on a :class:`Trajectory`): ADK's rule, or JSON equality."""
    if calls.__class__ is Trajectory:
        return calls.json_match_keys if json_strict else calls.match_keys
    return tuple(call.json_match_key if json_strict else call.match_key for call in calls)


def identities(calls: Sequence[ToolCall], json_strict: bool = False) -> tuple[Any, ...]:
    """The calls' hashable identities (cached on a :class:`Trajectory`)."""
    if calls.__class__ is Trajectory:
        return calls.json_identities if json_strict else calls.identities
    return tuple(call.json_identity if json_strict else call.identity for call in calls)


def identity_counts(calls: Sequence[ToolCall], json_strict: bool = False) -> dict[Any, int]:
    """How many times each distinct call occurs (cached on a :class:`Trajectory`)."""
    if calls.__class__ is Trajectory:
        return calls.json_identity_counts if json_strict else calls.identity_counts
    return counts(call.json_identity if json_strict else call.identity for call in calls)


def has_wildcard(calls: Sequence[ToolCall]) -> bool:
    return calls.has_wildcard if calls.__class__ is Trajectory else any(call.args is None for call in calls)


def parse_trajectory(value: Any, *, where: str = "trajectory") -> Trajectory:
    """Parse a trajectory cell: a list of calls, or a JSON string holding one (docs/spec.md §1)."""
    if value.__class__ is not list:  # the usual cell is a list
        value = _unusual_cell(value, where)
        if isinstance(value, Trajectory):
            return value
    keys: list[tuple[str, dict[str, JsonValue]]] = []
    append = keys.append
    try:
        for item in value:  # the usual item, {"tool_name": str, "tool_input": dict}: kept as its match key
            if item.__class__ is dict and len(item) == 2:
                name, args = item.get("tool_name"), item.get("tool_input")
                if args.__class__ is dict and name.__class__ is str and name and "".join(args) is not None:
                    append((name, args.copy()))
                    continue
            done = Trajectory.of_keys(keys).calls  # an unusual item: every call a record
            return Trajectory([*done, *(ToolCall.from_item(item) for item in value[len(keys) :])])
        return Trajectory.of_keys(keys)
    except (DatasetError, TypeError):  # TypeError: "".join met a name that is not a string; from_item names it
        for i, item in enumerate(value):
            ToolCall.from_item(item, where=f"{where}[{i}]")
        raise


def _unusual_cell(value: Any, where: str) -> Any:
    """A cell that is not a list: a trajectory as it is, JSON text decoded, ``None`` as no calls, another
    sequence as it is."""
    if isinstance(value, Trajectory):
        return value
    if isinstance(value, str):
        try:
            value = strict_loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{where}: not valid JSON ({exc.msg} at char {exc.pos}); expected a list of tool calls, "
                'e.g. [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}]'
            ) from None
    if value is None:
        return Trajectory()
    if value.__class__ is not list and (not isinstance(value, Sequence) or isinstance(value, str | bytes)):
        raise DatasetError(f"{where}: expected a list of tool calls, got {kind_of(value)}")
    return value
