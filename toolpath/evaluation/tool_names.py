"""Tool names as the metrics compare them: an agent sees an MCP server's tools under the names its framework gave
them (``weather_get_forecast`` for ``get_forecast`` of the server ``weather``, say); a reference written with the
server's own names still matches once that prefix is stripped from both sides."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from toolpath.errors import ConfigError
from toolpath.model import ToolCall
from toolpath.trajectory import Trajectory

TRAJECTORY_COLUMNS = ("predicted_trajectory", "reference_trajectory")


def check_prefixes(prefixes: str | Sequence[str] | None) -> tuple[str, ...]:
    """The prefixes to strip, longest first; an empty or non-string prefix is a :class:`ConfigError`."""
    if prefixes is None:
        return ()
    listed = [prefixes] if isinstance(prefixes, str) else list(prefixes)
    for prefix in listed:
        if not isinstance(prefix, str) or not prefix:
            raise ConfigError(f"strip_tool_prefix: each prefix must be a non-empty string, got {prefix!r}")
    return tuple(sorted(set(listed), key=len, reverse=True))


def stripped_name(name: str, prefixes: Sequence[str]) -> str:
    """``name`` less the longest of ``prefixes`` it starts with (a name that is only the prefix is kept)."""
    for prefix in prefixes:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


def strip_calls(calls: Any, prefixes: Sequence[str]) -> Any:
    """A trajectory (a parsed :class:`Trajectory`, tool calls, or items in the Vertex or ADK form) with the prefixes
    stripped from its names; anything that is no trajectory is returned as it is."""
    if isinstance(calls, Trajectory):
        return Trajectory(strip_calls(list(calls), prefixes))
    if not isinstance(calls, list):
        return calls
    out: list[Any] = []
    for call in calls:
        if isinstance(call, ToolCall):
            name = stripped_name(call.name, prefixes)
            call = call if name == call.name else call.model_copy(update={"name": name})
        elif isinstance(call, Mapping):
            key = "tool_name" if "tool_name" in call else "name"
            if isinstance(call.get(key), str):
                call = {**call, key: stripped_name(call[key], prefixes)}
        out.append(call)
    return out


def strip_views(
    views: Iterable[tuple[dict[str, Any], Mapping[str, Any]]], prefixes: Sequence[str]
) -> Iterator[tuple[dict[str, Any], Mapping[str, Any]]]:
    """Each ``(row, view)`` with the view's trajectories' names stripped (the view is updated in place, so a view of
    a richer kind keeps its kind); the row, which is kept and shown, keeps the names as recorded."""
    for row, view in views:
        if prefixes and any(column in view for column in TRAJECTORY_COLUMNS):
            view = view if isinstance(view, dict) else dict(view)
            for column in TRAJECTORY_COLUMNS:
                if column in view:
                    view[column] = strip_calls(view[column], prefixes)
        yield row, view
