"""The one path from records to metric inputs.

A metric reads a *row*: a mapping of the columns of SPEC §5 (``prompt``, ``response``, ``reference``,
``predicted_trajectory``, ``reference_trajectory``, ``latency_in_seconds``, ``failure``,
``intermediate_responses``…). Every source of rows — a stored invocation scored online or with
``--from-store``, a replayed or evaluated agent run, an eval-set turn — goes through :func:`turn_row`, so the same
run gives every metric the same input wherever it is scored. Trajectory items keep each call's ``error`` (the
behaviour metrics read it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolpath.errors import DatasetError, MetricError
from toolpath.evaluators.metrics.registry import MissingInput, Row
from toolpath.model import TRAJECTORY_COLUMNS, Invocation, ToolCall
from toolpath.trajectory import Trajectory, parse_trajectory


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
    return {
        "prompt": prompt,
        "response": response,
        "predicted_trajectory": [call.to_item() for call in tool_calls],
        "latency_in_seconds": latency_in_seconds,
        "failure": failure,
        "intermediate_responses": [text for _, text in intermediate_responses],
    }


def invocation_row(invocation: Invocation) -> dict[str, Any]:
    """A stored invocation as a row, with the ids that link the row back to the store."""
    row = {
        "invocation_id": invocation.invocation_id,
        "session_id": invocation.session_id,
        "agent_name": invocation.agent_name,
    }
    row.update(
        turn_row(
            prompt=invocation.prompt,
            response=invocation.response,
            tool_calls=invocation.tool_calls,
            latency_in_seconds=invocation.latency_seconds,
            failure=invocation.failure,
            intermediate_responses=invocation.intermediate_responses,
        )
    )
    return row


def with_parsed_trajectories(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row as metrics see it, a dict of its own: trajectory cells parsed once, shared by every metric of the
    row."""
    parsed: dict[str, Any] = {}
    for column in TRAJECTORY_COLUMNS:
        if row.get(column) is not None:
            # a bad cell is left as it is: each metric reports the problem in its own explanation
            with contextlib.suppress(DatasetError):
                parsed[column] = parse_trajectory(row[column], where=column)
    return {**row, **parsed}


def trajectory_column(row: Row, column: str) -> Trajectory:
    """A parsed trajectory column; a missing column or a bad cell is :class:`MissingInput`."""
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
        raise MissingInput(f"row has no {column!r}")
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
