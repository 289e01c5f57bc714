"""Trajectory metrics, as pure functions over lists of :class:`ToolCall` (SPEC §4, §6).

Call equality: same ``name`` and ``args`` equal as JSON values — key order ignored, ``1 == 1.0``, ``true != 1``,
list order significant. A reference call whose ``args`` is ``None`` matches any arguments; ``ignore_args``
compares names only.

One-to-one pairing (any-order, precision, recall) is a *maximum* matching. Because JSON equality is an
equivalence relation, it is computed exactly without a graph search: reference calls with concrete
arguments are paired greedily within their equality class first (any partner in the class is as good as
another), then wildcard references take the predicted calls of the same name that are left — so a wildcard
never steals the only partner of a stricter reference.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolpath.model import MetricResult, ToolCall, has_wildcard, match_keys


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


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: key order ignored, ``1 == 1.0``, ``true != 1``, list order significant."""
    # Python's == is the fast path: JSON-equal values are always ==, and == values differ as JSON only
    # where a boolean stands against a number, which _same_bools checks.
    return a == b and _same_bools(a, b)


def _same_bools(a: Any, b: Any) -> bool:
    kind_a, kind_b = a.__class__, b.__class__
    if kind_a is dict and kind_b is dict:
        return all(_same_bools(value, b[key]) for key, value in a.items())
    if kind_a is list and kind_b is list:
        return all(_same_bools(x, y) for x, y in zip(a, b, strict=True))
    return (kind_a is bool) == (kind_b is bool)


def calls_match(predicted: ToolCall, reference: ToolCall, *, ignore_args: bool = False) -> bool:
    if ignore_args or reference.args is None:
        return predicted.name == reference.name
    return predicted.match_key == reference.match_key


def matched_pairs(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False) -> int:
    """Size of a maximum one-to-one matching between predicted and reference calls."""
    return _match(predicted, reference, ignore_args)[0]


def _match(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], ignore_args: bool) -> tuple[int, list[str]]:
    """The maximum matching's size, and the names of reference calls left without a partner.

    References with concrete arguments take an equal predicted call first (``list.remove`` compares the
    keys in C); wildcards then take any predicted call of their name that is left.
    """
    keys = match_keys(predicted)
    remaining = list(keys)
    matched = 0
    unmatched: list[str] = []
    wildcards: list[str] = []
    if not ignore_args and not has_wildcard(reference):
        wanted = match_keys(reference)
        if keys == wanted:  # the common case, compared in C
            return len(wanted), []
        for key in wanted:
            try:
                remaining.remove(key)
                matched += 1
            except ValueError:
                unmatched.append(key[0])
        return matched, unmatched
    for ref in reference:
        if ignore_args or ref.args is None:
            wildcards.append(ref.name)
            continue
        key = ref.match_key
        if key in remaining:
            remaining.remove(key)
            matched += 1
        else:
            unmatched.append(ref.name)
    if wildcards:
        names = [key[0] for key in remaining]
        for name in wildcards:
            if name in names:
                names.remove(name)
                matched += 1
            else:
                unmatched.append(name)
    return matched, unmatched


def exact_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    if len(predicted) != len(reference):
        return MetricResult(
            0.0,
            lambda: (
                f"predicted {len(predicted)} call(s), reference {len(reference)}"
                f"{_names(_match(predicted, reference, ignore_args)[1])}"
            ),
        )
    if ignore_args or has_wildcard(reference):
        if all(calls_match(p, r, ignore_args=ignore_args) for p, r in zip(predicted, reference, strict=True)):
            return MetricResult(1.0, "every call matches in order")
    elif match_keys(predicted) == match_keys(reference):
        return MetricResult(1.0, "every call matches in order")
    return MetricResult(0.0, lambda: _first_difference(predicted, reference, ignore_args))


def _first_difference(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], ignore_args: bool) -> str:
    for i, (pred, ref) in enumerate(zip(predicted, reference, strict=True)):
        if not calls_match(pred, ref, ignore_args=ignore_args):
            return f"call {i + 1}: {describe_difference(pred, ref)}"
    return "every call matches in order"


def in_order_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    """1 if the reference is a subsequence of the prediction (greedy earliest match is optimal)."""
    keys = match_keys(predicted)
    if not ignore_args and keys == match_keys(reference):
        return MetricResult(1.0, "reference calls appear in order")
    names = [key[0] for key in keys] if ignore_args or has_wildcard(reference) else None
    position = 0
    for ref in reference:
        try:
            if names is not None and (ignore_args or ref.args is None):
                position = names.index(ref.name, position) + 1
            else:
                position = keys.index(ref.match_key, position) + 1
        except ValueError:
            return MetricResult(0.0, lambda ref=ref: f"{ref.name} not found in order")
    return MetricResult(1.0, "reference calls appear in order")


def any_order_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    matched, missing = _match(predicted, reference, ignore_args)
    if matched == len(reference):
        return MetricResult(1.0, "every reference call is matched")
    return MetricResult(0.0, lambda: f"{len(missing)} of {len(reference)} reference call(s) unmatched{_names(missing)}")


def precision(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False
) -> MetricResult:
    if not predicted:
        return MetricResult(1.0 if not reference else 0.0, "no predicted calls")
    matched = _match(predicted, reference, ignore_args)[0]
    return MetricResult(matched / len(predicted), lambda: f"{matched} of {len(predicted)} predicted call(s) matched")


def recall(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, ignore_args: bool = False) -> MetricResult:
    if not reference:
        return MetricResult(1.0, "empty reference")
    matched, missing = _match(predicted, reference, ignore_args)
    return MetricResult(
        matched / len(reference), lambda: f"{matched} of {len(reference)} reference call(s) matched{_names(missing)}"
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

    def explain() -> str:
        if all(scores):
            return f"all {len(scores)} invocation(s) match ({match_type.upper()})"
        return "; ".join(f"invocation {i + 1}: {r.explanation}" for i, r in enumerate(results) if not r.score)

    return MetricResult(sum(scores) / len(scores), explain, {"per_invocation_scores": scores})


def _result(ok: bool, explanation: str) -> MetricResult:
    return MetricResult(1.0 if ok else 0.0, explanation)


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
            parts.append(f"unexpected {key}={_brief(got[key])}")
        elif not json_equal(got[key], expected[key]):
            parts.append(f"{key}: expected {_brief(expected[key])}, got {_brief(got[key])}")
    return f"{reference.name} " + "; ".join(parts)


def _brief(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def _names(missing: list[str]) -> str:
    return f"; missing {', '.join(missing)}" if missing else ""
