"""What changed between a reference trajectory and a new one, call by call (for replay and reports).

Calls are aligned by name on the longest common subsequence. An aligned pair whose arguments differ is
``args_changed`` (with the argument keys added, removed and changed). A reference call left unaligned is
``removed`` and a new one ``added`` — unless a call of the same name sits on the other side, in which case the
call moved: ``reordered`` (and its arguments are compared too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolpath.metrics.equality import json_equal
from toolpath.model import ToolCall


class ChangeKind(StrEnum):
    """How one call differs between the reference trajectory and the new one."""

    ADDED = "added"
    REMOVED = "removed"
    REORDERED = "reordered"
    """The same call name, moved (its arguments compared too)."""
    ARGS_CHANGED = "args_changed"

    @property
    def mark(self) -> str:
        """Its short name on the calls the UI and the HTML report mark (``moved``, ``args``)."""
        return {ChangeKind.REORDERED: "moved", ChangeKind.ARGS_CHANGED: "args"}.get(self, self.value)


@dataclass
class Change:
    kind: ChangeKind
    tool: str
    reference_index: int | None = None
    predicted_index: int | None = None
    args: dict[str, list[str]] = field(default_factory=dict)
    """For changed arguments: ``{"added": [...], "removed": [...], "changed": [...]}`` (keys only, non-empty)."""

    def describe(self) -> str:
        if self.kind == ChangeKind.ADDED:
            return f"+ {self.tool} (call {self.predicted_index + 1 if self.predicted_index is not None else '?'})"
        if self.kind == ChangeKind.REMOVED:
            return f"- {self.tool} (was call {self.reference_index + 1 if self.reference_index is not None else '?'})"
        moved = ""
        if self.kind == ChangeKind.REORDERED:
            before, after = (self.reference_index or 0) + 1, (self.predicted_index or 0) + 1
            moved = f"{self.tool} moved from call {before} to {after}"
        details = "; ".join(f"{what} {', '.join(keys)}" for what, keys in self.args.items())
        if self.kind == ChangeKind.ARGS_CHANGED:
            return f"~ {self.tool} arguments: {details}"
        return f"↕ {moved}" + (f" (arguments: {details})" if details else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tool": self.tool,
            "reference_index": self.reference_index,
            "predicted_index": self.predicted_index,
            "args": self.args,
        }


def trajectory_diff(reference: Sequence[ToolCall], predicted: Sequence[ToolCall]) -> list[Change]:
    pairs = _align([c.name for c in reference], [c.name for c in predicted])
    changes: list[Change] = []
    for i, j in pairs:
        args = argument_diff(reference[i].args, predicted[j].args)
        if args:
            changes.append(Change(ChangeKind.ARGS_CHANGED, reference[i].name, i, j, args))
    aligned_ref = {i for i, _ in pairs}
    aligned_pred = {j for _, j in pairs}
    removed = [i for i in range(len(reference)) if i not in aligned_ref]
    added = [j for j in range(len(predicted)) if j not in aligned_pred]
    for i in removed:
        partner = next((j for j in added if predicted[j].name == reference[i].name), None)
        if partner is None:
            changes.append(Change(ChangeKind.REMOVED, reference[i].name, i, None))
            continue
        added.remove(partner)
        args = argument_diff(reference[i].args, predicted[partner].args)
        changes.append(Change(ChangeKind.REORDERED, reference[i].name, i, partner, args))
    changes.extend(Change(ChangeKind.ADDED, predicted[j].name, None, j) for j in added)
    return sorted(changes, key=_position)


def _position(change: Change) -> tuple[int, int]:
    anchor = change.predicted_index if change.predicted_index is not None else change.reference_index
    return (anchor if anchor is not None else 0, 0 if change.kind == ChangeKind.REMOVED else 1)


def argument_diff(reference: Any, predicted: Any) -> dict[str, list[str]]:
    """Keys added, removed and changed between two argument objects (a wildcard reference matches anything)."""
    if reference is None:
        return {}
    ref, pred = reference or {}, predicted or {}
    out = {
        "added": sorted(k for k in pred if k not in ref),
        "removed": sorted(k for k in ref if k not in pred),
        "changed": sorted(k for k in ref if k in pred and not json_equal(ref[k], pred[k])),
    }
    return {what: keys for what, keys in out.items() if keys}


def _align(reference: list[str], predicted: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two name lists."""
    n, m = len(reference), len(predicted)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1 if reference[i] == predicted[j] else max(table[i + 1][j], table[i][j + 1])
            )
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if reference[i] == predicted[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
