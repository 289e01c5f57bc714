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
from collections.abc import Callable, Sequence
from typing import Any

from toolpath.errors import MetricError
from toolpath.model import (
    MetricResult,
    ToolCall,
    Trajectory,
    canonical_json,
    has_wildcard,
    identities,
    identity_counts,
    match_keys,
)


def canonical_args(args: Any) -> str:
    """A string equal for two argument values exactly when they are equal as JSON values."""
    return canonical_json(args)


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
    if predicted.__class__ is Trajectory and reference.__class__ is Trajectory:  # cached keys: the hot path
        if ignore_args or reference.has_wildcard:
            return _match(predicted, reference, ignore_args)[0]
        have, want = predicted.identity_counts, reference.identity_counts
    elif not ignore_args and not has_wildcard(reference):
        have, want = identity_counts(predicted), identity_counts(reference)
    else:
        return _match(predicted, reference, ignore_args)[0]
    if have == want:
        return len(reference)
    matched = 0
    for identity, count in want.items():
        found = have.get(identity, 0)
        matched += count if found >= count else found
    return matched


def _match(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], ignore_args: bool) -> tuple[int, list[str]]:
    """The maximum matching's size, and the names of reference calls left without a partner.

    References with concrete arguments take an equal predicted call first (``list.remove`` compares the
    keys in C); wildcards then take any predicted call of their name that is left.
    """
    if not ignore_args and not has_wildcard(reference):
        # a multiset intersection of hashable call identities (cached on Trajectory records)
        have, want = identity_counts(predicted), identity_counts(reference)
        if have == want:
            return len(reference), []
        matched = 0
        unmatched: list[str] = []
        for identity, count in want.items():
            found = have.get(identity, 0)
            if found >= count:
                matched += count
            else:
                matched += found
                unmatched.extend([identity[0]] * (count - found))
        return matched, unmatched
    remaining = list(match_keys(predicted))
    matched = 0
    unmatched = []
    wildcards: list[str] = []
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
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: str = "name_and_args",
) -> MetricResult:
    mode = check_mode(match, ignore_args)
    ignore_args = mode == "name"
    if mode == "name_and_required_args" and len(predicted) == len(reference):
        ok = all(required_args_match(p, r) for p, r in zip(predicted, reference, strict=True))
        return (
            MetricResult(1.0, "every call matches in order")
            if ok
            else MetricResult(0.0, lambda: _first_difference(predicted, reference, False, required_args_match))
        )
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


def _first_difference(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], ignore_args: bool, same: CallPredicate | None = None
) -> str:
    for i, (pred, ref) in enumerate(zip(predicted, reference, strict=True)):
        if not (same(pred, ref) if same else calls_match(pred, ref, ignore_args=ignore_args)):
            return f"call {i + 1}: {describe_difference(pred, ref)}"
    return "every call matches in order"


def in_order_match(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: str = "name_and_args",
) -> MetricResult:
    """1 if the reference is a subsequence of the prediction (greedy earliest match is optimal)."""
    mode = check_mode(match, ignore_args)
    ignore_args = mode == "name"
    if mode == "name_and_required_args":
        position = 0
        for ref in reference:
            while position < len(predicted) and not required_args_match(predicted[position], ref):
                position += 1
            if position == len(predicted):
                return MetricResult(0.0, _not_found_in_order(ref.name))
            position += 1
        return MetricResult(1.0, "reference calls appear in order")
    if not ignore_args and not has_wildcard(reference):
        have = identities(predicted)
        position = 0
        for identity in identities(reference):
            try:
                position = have.index(identity, position) + 1
            except ValueError:
                return MetricResult(0.0, _not_found_in_order(identity[0]))
        return MetricResult(1.0, "reference calls appear in order")
    keys = match_keys(predicted)
    names = [key[0] for key in keys] if ignore_args or has_wildcard(reference) else None
    position = 0
    for ref in reference:
        try:
            if names is not None and (ignore_args or ref.args is None):
                position = names.index(ref.name, position) + 1
            else:
                position = keys.index(ref.match_key, position) + 1
        except ValueError:
            return MetricResult(0.0, _not_found_in_order(ref.name))
    return MetricResult(1.0, "reference calls appear in order")


def any_order_match(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: str = "name_and_args",
) -> MetricResult:
    mode = check_mode(match, ignore_args)
    if mode == "name_and_required_args":
        pairs = _max_matching(predicted, reference, required_args_match)
        if pairs == len(reference):
            return MetricResult(1.0, "every reference call is matched")
        return MetricResult(0.0, lambda: f"{len(reference) - pairs} of {len(reference)} reference call(s) unmatched")
    matched, missing = _match(predicted, reference, mode == "name")
    if matched == len(reference):
        return MetricResult(1.0, "every reference call is matched")
    return MetricResult(0.0, lambda: f"{len(missing)} of {len(reference)} reference call(s) unmatched{_names(missing)}")


def precision(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: str = "name_and_args",
    order: str = "any",
) -> MetricResult:
    mode = check_mode(match, ignore_args)
    if not predicted:
        return MetricResult(1.0 if not reference else 0.0, "no predicted calls")
    matched = pair_count(predicted, reference, match=mode, order=order)
    return MetricResult(matched / len(predicted), lambda: f"{matched} of {len(predicted)} predicted call(s) matched")


def recall(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: str = "name_and_args",
    order: str = "any",
) -> MetricResult:
    mode = check_mode(match, ignore_args)
    if not reference:
        return MetricResult(1.0, "empty reference")
    matched = pair_count(predicted, reference, match=mode, order=order)
    return MetricResult(matched / len(reference), lambda: _recall_text(predicted, reference, matched, mode, order))


def _recall_text(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], matched: int, mode: str, order: str
) -> str:
    text = f"{matched} of {len(reference)} reference call(s) matched"
    if order == "any" and mode != "name_and_required_args":  # the greedy pairing names what is missing
        text += _names(_match(predicted, reference, mode == "name")[1])
    return text


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
    match: str = "name_and_args",
) -> MetricResult:
    """ADK's criterion: the mean over a case's invocations of the 0/1 trajectory match of each."""
    if (
        match_type == "EXACT"
        and match == "name_and_args"
        and not ignore_args
        and len(expected) == 1
        and len(actual) == 1
        and not has_wildcard(expected[0])
    ):  # the usual row, one invocation: score it directly
        score = 1.0 if identities(actual[0]) == identities(expected[0]) else 0.0
        return MetricResult(
            score,
            lambda: (
                f"all 1 invocation(s) match ({match_type.upper()})"
                if score
                else f"invocation 1: {exact_match(actual[0], expected[0]).explanation}"
            ),
            {"per_invocation_scores": [score]},
        )
    mode = check_mode(match, ignore_args)
    compare = MATCH_TYPES.get(match_type) or MATCH_TYPES.get(match_type.upper())
    if compare is None:
        raise MetricError(f"match_type must be one of {', '.join(MATCH_TYPES)}, got {match_type!r}")
    if not expected:
        return MetricResult.not_evaluated("no invocations to compare")
    if len(actual) != len(expected):
        return MetricResult.not_evaluated(f"{len(actual)} actual invocation(s) for {len(expected)} expected")
    if compare is exact_match and mode == "name_and_args" and not _any_wildcard(expected):
        # equal identity sequences are an exact match: score without a result object per invocation
        scores = [1.0 if identities(a) == identities(e) else 0.0 for a, e in zip(actual, expected, strict=True)]
    else:
        scores = [compare(a, e, match=mode).score or 0.0 for a, e in zip(actual, expected, strict=True)]

    def explain() -> str:
        if all(scores):
            return f"all {len(scores)} invocation(s) match ({match_type.upper()})"
        return "; ".join(
            f"invocation {i + 1}: {compare(a, e, match=mode).explanation}"
            for i, (a, e, score) in enumerate(zip(actual, expected, scores, strict=True))
            if not score
        )

    return MetricResult(sum(scores) / len(scores), explain, {"per_invocation_scores": scores})


def _any_wildcard(trajectories: Sequence[Sequence[ToolCall]]) -> bool:
    return any(map(has_wildcard, trajectories))


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


def _not_found_in_order(name: str) -> Callable[[], str]:
    return lambda: f"{name} not found in order"


# --- match modes, order, F1 (partial credit) ---------------------------------------------------------------

MATCH_MODES = ("name", "name_and_args", "name_and_required_args")
ORDERS = ("any", "in_order")


def check_mode(match: str, ignore_args: bool = False) -> str:
    """The effective match mode; ``ignore_args`` is the ADK spelling of ``match="name"``."""
    if match == "name_and_args":  # the default: nothing to check
        return "name" if ignore_args else match
    if match not in MATCH_MODES:
        raise MetricError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
    return "name" if ignore_args else match


def required_args_match(predicted: ToolCall, reference: ToolCall) -> bool:
    """Same name, and every argument the reference gives is present with an equal value (extra predicted
    arguments are fine)."""
    if predicted.name != reference.name:
        return False
    want = reference.args
    if not want:
        return True
    got = predicted.args or {}
    return all(key in got and json_equal(got[key], value) for key, value in want.items())


CallPredicate = Callable[[ToolCall, ToolCall], bool]


def _predicate(mode: str) -> CallPredicate:
    if mode == "name":
        return lambda p, r: p.name == r.name
    if mode == "name_and_args":
        return calls_match
    return required_args_match


def pair_count(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, match: str = "name_and_args", order: str = "any"
) -> int:
    """Matched pairs under a match mode: a maximum one-to-one matching (``any``) or the longest common
    subsequence (``in_order``)."""
    if order == "any":
        if match == "name_and_args" or match == "name":  # the common case first: a multiset intersection
            return matched_pairs(predicted, reference, ignore_args=match == "name")
        return _max_matching(predicted, reference, required_args_match)
    if order != "in_order":
        raise MetricError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    return _lcs(predicted, reference, _predicate(match))


def _lcs(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], same: CallPredicate) -> int:
    previous = [0] * (len(reference) + 1)
    for pred in predicted:
        current = [0]
        for j, ref in enumerate(reference):
            current.append(previous[j] + 1 if same(pred, ref) else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _max_matching(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], same: CallPredicate) -> int:
    """Maximum bipartite matching by augmenting paths (Kuhn), for predicates that are not equivalences."""
    partners = [[i for i, pred in enumerate(predicted) if same(pred, ref)] for ref in reference]
    owner: list[int | None] = [None] * len(predicted)

    def augment(ref_index: int, seen: set[int]) -> bool:
        for pred_index in partners[ref_index]:
            if pred_index in seen:
                continue
            seen.add(pred_index)
            current = owner[pred_index]
            if current is None or augment(current, seen):
                owner[pred_index] = ref_index
                return True
        return False

    return sum(augment(r, set()) for r in range(len(reference)))


def precision_recall_f1(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, match: str = "name_and_args", order: str = "any"
) -> tuple[float, float, float, int]:
    """(precision, recall, F1, pairs) with the empty-trajectory rules of SPEC §4; F1 of 0 and 0 is 0."""
    pairs = pair_count(predicted, reference, match=match, order=order)
    p = pairs / len(predicted) if predicted else (1.0 if not reference else 0.0)
    r = pairs / len(reference) if reference else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1, pairs


def f1(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], *, match: str = "name_and_args", order: str = "any"
) -> MetricResult:
    p, r, score, pairs = precision_recall_f1(predicted, reference, match=match, order=order)
    return MetricResult(
        score,
        lambda: f"precision {p:.3f} ({pairs}/{len(predicted)}), recall {r:.3f} ({pairs}/{len(reference)})",
        {"precision": p, "recall": r},
    )
