"""Trajectory metrics, as pure functions over lists of :class:`ToolCall` (SPEC §4, §6).

Call equality: same ``name`` and ``args`` equal as JSON values — key order ignored, ``1 == 1.0``, ``true != 1``,
list order significant. A reference call whose ``args`` is ``None`` matches any arguments; ``ignore_args``
compares names only.

One-to-one pairing (any-order, precision, recall) is a *maximum* matching. Because JSON equality is an
equivalence relation, it is computed exactly without a graph search: reference calls with concrete
arguments are paired within their equality class first, then wildcard references take the predicted calls
of the same name that are left — a wildcard never steals the only partner of a stricter reference.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from toolpath.model import MetricResult, ToolCall

_WILDCARD = None


def canonical_args(args: Any) -> str:
    """A string equal for two argument values exactly when they are equal as JSON values."""
    return json.dumps(_canonical(args), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _ref_key(call: ToolCall, ignore_args: bool) -> tuple[str, str | None]:
    if ignore_args or call.args is None:
        return call.name, _WILDCARD
    return call.name, canonical_args(call.args)


def _pred_key(call: ToolCall) -> tuple[str, str]:
    return call.name, canonical_args(call.args if call.args is not None else {})


def calls_match(predicted: ToolCall, reference: ToolCall, *, ignore_args: bool = False) -> bool:
    name, args = _ref_key(reference, ignore_args)
    return predicted.name == name and (args is _WILDCARD or _pred_key(predicted)[1] == args)


def matched_pairs(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False) -> int:
    """Size of a maximum one-to-one matching between predicted and reference calls."""
    available = Counter(_pred_key(c) for c in predicted)
    wildcards: Counter[str] = Counter()
    matched = 0
    for ref in reference:
        name, args = _ref_key(ref, ignore_args)
        if args is _WILDCARD:
            wildcards[name] += 1
        elif available[(name, args)] > 0:
            available[(name, args)] -= 1
            matched += 1
    left_by_name: dict[str, int] = defaultdict(int)
    for (name, _args), count in available.items():
        left_by_name[name] += count
    matched += sum(min(count, left_by_name[name]) for name, count in wildcards.items())
    return matched


def exact_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    if len(predicted) != len(reference):
        extra = _missing(predicted, reference, ignore_args)
        return _result(False, f"predicted {len(predicted)} call(s), reference {len(reference)}{extra}")
    for i, (pred, ref) in enumerate(zip(predicted, reference, strict=True)):
        if not calls_match(pred, ref, ignore_args=ignore_args):
            return _result(False, f"call {i + 1}: {describe_difference(pred, ref)}")
    return _result(True, "every call matches in order")


def in_order_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    """1 if the reference is a subsequence of the prediction (greedy earliest match is optimal)."""
    position = 0
    for ref in reference:
        while position < len(predicted) and not calls_match(predicted[position], ref, ignore_args=ignore_args):
            position += 1
        if position == len(predicted):
            return _result(False, f"{_show(ref)} not found in order")
        position += 1
    return _result(True, "reference calls appear in order")


def any_order_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    matched = matched_pairs(predicted, reference, ignore_args=ignore_args)
    if matched == len(reference):
        return _result(True, "every reference call is matched")
    missing = _missing(predicted, reference, ignore_args)
    return _result(False, f"{len(reference) - matched} of {len(reference)} reference call(s) unmatched{missing}")


def precision(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    if not predicted:
        return MetricResult(score=1.0 if not reference else 0.0, explanation="no predicted calls")
    matched = matched_pairs(predicted, reference, ignore_args=ignore_args)
    return MetricResult(
        score=matched / len(predicted), explanation=f"{matched} of {len(predicted)} predicted call(s) matched"
    )


def recall(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False) -> MetricResult:
    if not reference:
        return MetricResult(score=1.0, explanation="empty reference")
    matched = matched_pairs(predicted, reference, ignore_args=ignore_args)
    missing = _missing(predicted, reference, ignore_args)
    return MetricResult(
        score=matched / len(reference), explanation=f"{matched} of {len(reference)} reference call(s) matched{missing}"
    )


def single_tool_use(predicted: Sequence[ToolCall], tool_name: str) -> MetricResult:
    used = any(call.name == tool_name for call in predicted)
    return _result(used, f"{tool_name} {'was' if used else 'was not'} called")


MATCH_TYPES = {"EXACT": exact_match, "IN_ORDER": in_order_match, "ANY_ORDER": any_order_match}


def tool_trajectory_avg_score(
    actual: Sequence[Sequence[ToolCall]],
    expected: Sequence[Sequence[ToolCall]],
    *,
    match_type: str = "EXACT",
    ignore_args: bool = False,
) -> MetricResult:
    """ADK's criterion: the mean over a case's invocations of the 0/1 trajectory match of each."""
    match = MATCH_TYPES.get(match_type.upper())
    if match is None:
        raise ValueError(f"match_type must be one of {', '.join(MATCH_TYPES)}, got {match_type!r}")
    if not expected:
        return MetricResult.not_evaluated("no invocations to compare")
    if len(actual) != len(expected):
        return MetricResult.not_evaluated(f"{len(actual)} actual invocation(s) for {len(expected)} expected")
    results = [match(a, e, ignore_args=ignore_args) for a, e in zip(actual, expected, strict=True)]
    scores = [r.score or 0.0 for r in results]
    failing = [f"invocation {i + 1}: {r.explanation}" for i, r in enumerate(results) if not r.score]
    return MetricResult(
        score=sum(scores) / len(scores),
        explanation="; ".join(failing) if failing else f"all {len(scores)} invocation(s) match ({match_type.upper()})",
        details={"per_invocation_scores": scores},
    )


def _result(ok: bool, explanation: str) -> MetricResult:
    return MetricResult(score=1.0 if ok else 0.0, explanation=explanation)


def describe_difference(predicted: ToolCall, reference: ToolCall) -> str:
    """Why two calls differ, naming the arguments when the names agree."""
    if predicted.name != reference.name:
        return f"expected {reference.name}, got {predicted.name}"
    expected, got = reference.args or {}, predicted.args or {}
    parts = []
    for key in sorted(set(expected) | set(got)):
        if key not in got:
            parts.append(f"{key} missing")
        elif key not in expected:
            parts.append(f"unexpected {key}={canonical_args(got[key])}")
        elif canonical_args(expected[key]) != canonical_args(got[key]):
            parts.append(f"{key}: expected {canonical_args(expected[key])}, got {canonical_args(got[key])}")
    return f"{reference.name} " + "; ".join(parts)


def _show(call: ToolCall) -> str:
    if call.args is None:
        return f"{call.name}(…)"
    return f"{call.name}({canonical_args(call.args)})"


def _missing(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], ignore_args: bool) -> str:
    """Names of reference calls with no partner, for explanations (by greedy pass; indicative only)."""
    left = list(predicted)
    missing: list[str] = []
    for ref in sorted(reference, key=lambda c: c.args is None or ignore_args):
        for i, pred in enumerate(left):
            if calls_match(pred, ref, ignore_args=ignore_args):
                del left[i]
                break
        else:
            missing.append(ref.name)
    return f"; missing {', '.join(missing)}" if missing else ""
