"""The one path from records to metric inputs.

A metric reads a *row*: a mapping of the columns of docs/spec.md §5 (``prompt``, ``response``, ``reference``,
``predicted_trajectory``, ``reference_trajectory``, ``latency_in_seconds``, ``failure``,
``intermediate_responses``…). Every source of rows — a stored invocation scored online or with
``--from-store``, a replayed or evaluated agent run, an eval-set turn — goes through :func:`turn_row`, so the same
run gives every metric the same input wherever it is scored. Trajectory items keep each call's ``error`` (the
behaviour metrics read it), its result (``tool_output``, what judges check the answer against) and its ``id``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolpath.errors import DatasetError, MetricError
from toolpath.metrics.base import MissingInput, Row, missing
from toolpath.model import TRAJECTORY_COLUMNS, Invocation, ToolCall, call_record
from toolpath.trajectory import Trajectory, parse_trajectory

_PREDICTED = TRAJECTORY_COLUMNS[0]


def turn_row(
    *,
    prompt: str | None,
    response: str | None,
    tool_calls: Sequence[ToolCall],
    latency_in_seconds: float | None,
    failure: int,
    intermediate_responses: Iterable[tuple[str, str]] = (),
) -> dict[str, Any]:
    """The columns one agent turn gives every metric."""
    return _turn_columns(
        prompt, response, [call_item(call) for call in tool_calls], latency_in_seconds, failure, intermediate_responses
    )


def call_item(call: ToolCall) -> dict[str, Any]:
    """A call as a row's trajectory item: :meth:`ToolCall.to_item`, plus its result (``tool_output``), ``id`` and
    the agent that made it (``agent_name``, what a metric's ``agent=`` selects by) when it has them."""
    item = call.to_item()
    if call.result is not None:
        item["tool_output"] = call.result
    if call.call_id is not None:
        item["id"] = call.call_id
    if call.agent_name is not None:
        item["agent_name"] = call.agent_name
    return item


def _turn_columns(
    prompt: str | None,
    response: str | None,
    items: list[dict[str, Any]],
    latency_in_seconds: float | None,
    failure: int,
    intermediate_responses: Iterable[tuple[str, str]],
) -> dict[str, Any]:
    return {
        "prompt": prompt,
        "response": response,
        "predicted_trajectory": items,
        "latency_in_seconds": latency_in_seconds,
        "failure": failure,
        "intermediate_responses": [text for _, text in intermediate_responses],
    }


TRAJECTORY_CUT = "predicted_trajectory_cut"
"""A row's column saying why its predicted trajectory is only a part of the turn's (a storage cap left calls out):
metrics of the trajectory are not scored on a part, they say why (:func:`trajectory_column`)."""


def cut_reason(kept: int, dropped: int) -> str:
    """What :data:`TRAJECTORY_CUT` says of a turn the collector kept ``kept`` calls of, ``dropped`` left out."""
    return (
        f"the collector kept {kept} of this turn's {kept + dropped} tool calls (--max-tool-calls): its trajectory "
        "is not scored on a part of it"
    )


def invocation_row(invocation: Invocation, calls_dropped: int = 0) -> dict[str, Any]:
    """A stored invocation as a row, with the ids that link the row back to the store (``calls_dropped``: the
    calls a storage cap left out of it, said in :data:`TRAJECTORY_CUT`)."""
    cut = {TRAJECTORY_CUT: cut_reason(len(invocation.tool_calls), calls_dropped)} if calls_dropped > 0 else {}
    return {
        **cut,
        **row_ids(invocation),
        **turn_row(
            prompt=invocation.prompt,
            response=invocation.response,
            tool_calls=invocation.tool_calls,
            latency_in_seconds=invocation.latency_seconds,
            failure=invocation.failure,
            intermediate_responses=invocation.intermediate_responses,
        ),
    }


def row_ids(stored: Any) -> dict[str, Any]:
    """The columns that link a row back to its stored invocation (of an :class:`Invocation` or what online scoring
    reads of one)."""
    return {"invocation_id": stored.invocation_id, "session_id": stored.session_id, "agent_name": stored.agent_name}


def stored_row(
    ids: Mapping[str, Any],
    *,
    prompt: str | None,
    response: str | None,
    calls: Sequence[tuple[str, Any, str | None, Any, str | None, str | None]],
    latency_in_seconds: float | None,
    failure: int,
    intermediate_responses: Iterable[tuple[str, str]],
    calls_dropped: int = 0,
) -> tuple[dict[str, Any], Trajectory]:
    """:func:`invocation_row`'s row of a stored invocation read as its columns and its calls' ``(name, arguments,
    error, result, call_id, agent_name)``, and the row's predicted trajectory as :func:`parse_trajectory` parses
    it, made without a second pass over the cell (what online scoring reads for every batch): match keys alone (and
    each call's agent) for calls that have nothing but a name and arguments, else the records as the store builds
    checked ones."""
    items: list[dict[str, Any]] = []
    keys: list[tuple[str, dict[str, Any]]] = []  # while every call is plain: parse_trajectory's usual items
    agents: list[str | None] = []
    records: list[ToolCall] | None = None  # once a call is more: the records, as the store builds checked ones
    checked = True  # every name a non-empty string, every arguments an object or null
    for name, args, error, result, call_id, agent in calls:
        item = {"tool_name": name, "tool_input": args}
        if error is not None:
            item["error"] = error
        if result is not None:
            item["tool_output"] = result
        if call_id is not None:
            item["id"] = call_id
        if not checked or name.__class__ is not str or not name or (args is not None and args.__class__ is not dict):
            checked = False  # parse_trajectory says what is wrong with it
        else:
            copied = None if args is None else args.copy()
            if records is None and (len(item) > 2 or copied is None):
                records = [_record(n, a, g) for (n, a), g in zip(keys, agents, strict=True)]
            if records is None:
                keys.append((name, copied))  # type: ignore[arg-type]  # a dict: the call is plain
            else:
                records.append(_record(name, copied, agent, result, call_id, error))
        if agent is not None:
            item["agent_name"] = agent
        agents.append(agent)
        items.append(item)
    row = {**ids, **_turn_columns(prompt, response, items, latency_in_seconds, failure, intermediate_responses)}
    if calls_dropped > 0:
        row[TRAJECTORY_CUT] = cut_reason(len(items), calls_dropped)
    if not checked:
        return row, parse_trajectory(items, where=_PREDICTED)
    if records is None:
        return row, Trajectory.of_keys(keys, agents if any(agents) else None)
    return row, Trajectory(records)


def _record(
    name: str,
    args: dict[str, Any] | None,
    agent: str | None,
    result: Any = None,
    call_id: str | None = None,
    error: str | None = None,
) -> ToolCall:
    """A call's record, as the store's reads build checked ones (its agent set when it has one)."""
    record = call_record(ToolCall, name, args, result, call_id, error)
    if agent is not None:
        record.__dict__["agent_name"] = agent
        record.__pydantic_fields_set__.add("agent_name")
    return record


def with_parsed_trajectories(row: Mapping[str, Any], predicted: Trajectory | None = None) -> Mapping[str, Any]:
    """The row as metrics see it, a dict of its own: trajectory cells parsed once, shared by every metric of the
    row (``predicted``: its predicted trajectory, parsed already)."""
    parsed: dict[str, Any] = {} if predicted is None else {_PREDICTED: predicted}
    if row.get(TRAJECTORY_CUT):  # a part of the turn's trajectory: no metric reads it as the whole
        parsed[_PREDICTED] = None
    for column in TRAJECTORY_COLUMNS:
        if column not in parsed and row.get(column) is not None:
            # a bad cell is left as it is: each metric reports the problem in its own explanation
            with contextlib.suppress(DatasetError):
                parsed[column] = parse_trajectory(row[column], where=column)
    return {**row, **parsed}


def trajectory_column(row: Row, column: str) -> Trajectory:
    """A parsed trajectory column; a missing column, a bad cell or a trajectory a cap cut is :class:`MissingInput`."""
    if column == _PREDICTED and (cut := row.get(TRAJECTORY_CUT)):
        raise MissingInput(str(cut))
    value = row.get(column)
    if value.__class__ is Trajectory:  # parsed once for the row (with_parsed_trajectories)
        return value
    if value is None:
        raise MissingInput(f"row has no {column!r}")
    try:
        return parse_trajectory(value, where=column)
    except DatasetError as exc:
        raise MissingInput(str(exc)) from None


def text_column(row: Row, column: str) -> str:
    """A text column; a missing column or a non-string is :class:`MissingInput`."""
    value = row.get(column)
    if value is None:
        raise missing(row, column)
    if not isinstance(value, str):
        raise MissingInput(f"{column!r} must be text, got {type(value).__name__}")
    return value


def flag(value: Any, name: str) -> bool:
    """A boolean option given as a bool or as ``"true"`` / ``"false"``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise MetricError(f"{name} must be true or false, got {value!r}")
