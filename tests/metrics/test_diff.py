"""Trajectory differences: added, removed, reordered calls and changed arguments."""

from __future__ import annotations

from toolpath.metrics.diff import trajectory_diff
from toolpath.model import ToolCall


def test_trajectory_diff_kinds():
    a, b, c = (ToolCall(name=n, args={"x": 1}) for n in "abc")
    assert trajectory_diff([a, b, c], [a, b, c]) == []
    moved = trajectory_diff([a, b, c], [b, a, c])
    assert [(d.kind, d.tool, d.reference_index, d.predicted_index) for d in moved] == [("reordered", "a", 0, 1)]
    changed = trajectory_diff([a], [ToolCall(name="a", args={"x": 2, "y": 1})])
    assert [(d.kind, d.args) for d in changed] == [("args_changed", {"added": ["y"], "changed": ["x"]})]
    assert [d.kind for d in trajectory_diff([a, b], [b])] == ["removed"]
    assert [d.describe() for d in trajectory_diff([], [c])] == ["+ c (call 1)"]
    wildcard = ToolCall(name="a", args=None)
    assert trajectory_diff([wildcard], [ToolCall(name="a", args={"x": 9})]) == []
