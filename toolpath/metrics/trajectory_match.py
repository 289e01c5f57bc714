"""Trajectory metrics, as pure functions over lists of :class:`ToolCall` (docs/spec.md §4, §6).

Calls compare as :mod:`toolpath.metrics.equality` says: ADK 2.x's rule unless ``json_strict`` asks
for JSON equality; ``null_args_wildcard`` (on by default for Vertex's ``trajectory_*`` metrics, off for ADK's
``tool_trajectory_avg_score``) lets a reference call with ``None`` arguments match any arguments.

Pairing calls one-to-one or in order is :mod:`toolpath.metrics.pairing`'s; each metric takes its fast
path first when both trajectories compare by their cached keys (:func:`~toolpath.metrics.pairing.keyed`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from toolpath.errors import MetricError
from toolpath.metrics import adk_args_rule
from toolpath.metrics.base import invocation_mean
from toolpath.metrics.equality import (
    CallMatch,
    CallPredicate,
    call_predicate,
    calls_match,
    check_mode,
    describe_difference,
    describe_key_difference,
)
from toolpath.metrics.pairing import (
    count_pairs,
    keyed,
    lcs,
    match_calls,
    max_matching,
    same_keys,
    unmatched,
)
from toolpath.model import MetricResult, ToolCall
from toolpath.trajectory import Trajectory, has_wildcard, match_keys


class CallOrder(StrEnum):
    """How precision, recall and F1 pair calls (their ``order`` option)."""

    ANY = "any"
    """A maximum one-to-one matching, in any order."""
    IN_ORDER = "in_order"
    """The longest common subsequence: pairs in the same order on both sides."""


ORDERS = tuple(CallOrder)


def matched_pairs(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> int:
    """Size of a maximum one-to-one matching between predicted and reference calls."""
    return count_pairs(predicted, reference, ignore_args, json_strict, null_args_wildcard)


def exact_match(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> MetricResult:
    if keyed(predicted, reference, match, ignore_args, json_strict, null_args_wildcard):  # the usual row
        if same_keys(predicted, reference):  # type: ignore[arg-type]
            return MetricResult(1.0, "every call matches in order")
        return MetricResult(0.0, lambda: _keyed_difference(predicted, reference))  # type: ignore[arg-type]
    mode = check_mode(match, ignore_args)
    ignore_args = mode == CallMatch.NAME
    if mode == CallMatch.NAME_AND_REQUIRED_ARGS and len(predicted) == len(reference):
        same = call_predicate(mode, json_strict, null_args_wildcard)
        ok = all(same(p, r) for p, r in zip(predicted, reference, strict=True))
        return (
            MetricResult(1.0, "every call matches in order")
            if ok
            else MetricResult(0.0, lambda: _first_difference(predicted, reference, same, json_strict))
        )
    if len(predicted) != len(reference):
        return MetricResult(
            0.0,
            lambda: (
                f"predicted {len(predicted)} call(s), reference {len(reference)}"
                f"{_names(match_calls(predicted, reference, ignore_args, json_strict, null_args_wildcard)[1])}"
            ),
        )
    if ignore_args or (null_args_wildcard and has_wildcard(reference)):
        if all(
            calls_match(p, r, ignore_args=ignore_args, json_strict=json_strict, null_args_wildcard=null_args_wildcard)
            for p, r in zip(predicted, reference, strict=True)
        ):
            return MetricResult(1.0, "every call matches in order")
    elif match_keys(predicted, json_strict) == match_keys(reference, json_strict):  # compared in C
        return MetricResult(1.0, "every call matches in order")
    return MetricResult(
        0.0,
        lambda: _first_difference(
            predicted, reference, call_predicate(mode, json_strict, null_args_wildcard), json_strict
        ),
    )


def _keyed_difference(predicted: Trajectory, reference: Trajectory) -> str:
    """:func:`exact_match`'s explanation for two :func:`keyed` trajectories that differ."""
    if len(predicted) != len(reference):
        missing = _names(unmatched(predicted, reference))
        return f"predicted {len(predicted)} call(s), reference {len(reference)}{missing}"
    for i, (pred, ref) in enumerate(zip(predicted.match_keys, reference.match_keys, strict=True)):
        if pred != ref:
            return f"call {i + 1}: {describe_key_difference(pred, ref)}"
    return "every call matches in order"


def _first_difference(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], same: CallPredicate, json_strict: bool
) -> str:
    for i, (pred, ref) in enumerate(zip(predicted, reference, strict=True)):
        if not same(pred, ref):
            return f"call {i + 1}: {describe_difference(pred, ref, json_strict)}"
    return "every call matches in order"


def in_order_match(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> MetricResult:
    """1 if the reference is a subsequence of the prediction (greedy earliest match is optimal)."""
    if keyed(predicted, reference, match, ignore_args, json_strict, null_args_wildcard):  # the usual row
        keys, position = predicted.match_keys, 0  # type: ignore[attr-defined]
        for key in reference.match_keys:  # type: ignore[attr-defined]
            try:
                position = keys.index(key, position) + 1
            except ValueError:
                return MetricResult(0.0, _not_found_in_order(key[0]))
        return MetricResult(1.0, "reference calls appear in order")
    mode = check_mode(match, ignore_args)
    ignore_args = mode == CallMatch.NAME
    if mode == CallMatch.NAME_AND_REQUIRED_ARGS:
        same = call_predicate(mode, json_strict, null_args_wildcard)
        position = 0
        for ref in reference:
            while position < len(predicted) and not same(predicted[position], ref):
                position += 1
            if position == len(predicted):
                return MetricResult(0.0, _not_found_in_order(ref.name))
            position += 1
        return MetricResult(1.0, "reference calls appear in order")
    wild = null_args_wildcard and has_wildcard(reference)
    keys = match_keys(predicted, json_strict)
    if not ignore_args and not wild:
        position = 0
        for key in match_keys(reference, json_strict):
            try:
                position = keys.index(key, position) + 1
            except ValueError:
                return MetricResult(0.0, _not_found_in_order(key[0]))
        return MetricResult(1.0, "reference calls appear in order")
    names = [key[0] for key in keys]
    position = 0
    for ref in reference:
        try:
            if ignore_args or (wild and ref.args is None):
                position = names.index(ref.name, position) + 1
            else:
                position = keys.index(ref.json_match_key if json_strict else ref.match_key, position) + 1
        except ValueError:
            return MetricResult(0.0, _not_found_in_order(ref.name))
    return MetricResult(1.0, "reference calls appear in order")


def any_order_match(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> MetricResult:
    if keyed(predicted, reference, match, ignore_args, json_strict, null_args_wildcard):  # the usual row
        if same_keys(predicted, reference):  # type: ignore[arg-type]
            return MetricResult(1.0, "every reference call is matched")
        missing = unmatched(predicted, reference)  # type: ignore[arg-type]
        if not missing:
            return MetricResult(1.0, "every reference call is matched")
        return MetricResult(0.0, lambda: _unmatched_text(missing, len(reference)))
    mode = check_mode(match, ignore_args)
    if mode == CallMatch.NAME_AND_REQUIRED_ARGS:
        pairs = max_matching(predicted, reference, call_predicate(mode, json_strict, null_args_wildcard))
        if pairs == len(reference):
            return MetricResult(1.0, "every reference call is matched")
        return MetricResult(0.0, lambda: f"{len(reference) - pairs} of {len(reference)} reference call(s) unmatched")
    if count_pairs(predicted, reference, mode == CallMatch.NAME, json_strict, null_args_wildcard) == len(reference):
        return MetricResult(1.0, "every reference call is matched")
    equality = (json_strict, null_args_wildcard)
    return MetricResult(
        0.0,
        lambda: _unmatched_text(
            match_calls(predicted, reference, mode == CallMatch.NAME, *equality)[1], len(reference)
        ),
    )


def _unmatched_text(missing: Sequence[str], count: int) -> str:
    return f"{len(missing)} of {count} reference call(s) unmatched{_names(missing)}"


def precision(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    order: CallOrder | str = CallOrder.ANY,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> MetricResult:
    if not predicted:
        check_mode(match, ignore_args)
        return MetricResult(1.0 if not reference else 0.0, "no predicted calls")
    if order == CallOrder.ANY and keyed(predicted, reference, match, ignore_args, json_strict, null_args_wildcard):
        matched = len(reference) - len(unmatched(predicted, reference))  # type: ignore[arg-type]
    else:
        matched = _count(predicted, reference, check_mode(match, ignore_args), order, json_strict, null_args_wildcard)
    return MetricResult(matched / len(predicted), lambda: f"{matched} of {len(predicted)} predicted call(s) matched")


def recall(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    order: CallOrder | str = CallOrder.ANY,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> MetricResult:
    if not reference:
        check_mode(match, ignore_args)
        return MetricResult(1.0, "empty reference")
    if order == CallOrder.ANY and keyed(predicted, reference, match, ignore_args, json_strict, null_args_wildcard):
        count = len(reference)
        if same_keys(predicted, reference):  # type: ignore[arg-type]
            return MetricResult(1.0, lambda: f"{count} of {count} reference call(s) matched")
        missing = unmatched(predicted, reference)  # type: ignore[arg-type]
        matched = count - len(missing)
        return MetricResult(matched / count, lambda: f"{matched} of {count} reference call(s) matched{_names(missing)}")
    mode = check_mode(match, ignore_args)
    matched = _count(predicted, reference, mode, order, json_strict, null_args_wildcard)
    return MetricResult(
        matched / len(reference),
        lambda: _recall_text(predicted, reference, matched, mode, order, (json_strict, null_args_wildcard)),
    )


def _recall_text(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    matched: int,
    mode: CallMatch,
    order: CallOrder | str,
    equality: tuple[bool, bool],
) -> str:
    text = f"{matched} of {len(reference)} reference call(s) matched"
    missing = order == CallOrder.ANY and mode != CallMatch.NAME_AND_REQUIRED_ARGS and matched < len(reference)
    if missing:  # name what is missing
        text += _names(match_calls(predicted, reference, mode == CallMatch.NAME, *equality)[1])
    return text


def _count(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    mode: CallMatch,
    order: CallOrder | str,
    strict: bool,
    wildcard: bool,
) -> int:
    if order == CallOrder.ANY and mode != CallMatch.NAME_AND_REQUIRED_ARGS:  # the common case, without a dispatch
        return count_pairs(predicted, reference, mode == CallMatch.NAME, strict, wildcard)
    return pair_count(predicted, reference, match=mode, order=order, json_strict=strict, null_args_wildcard=wildcard)


def single_tool_use(predicted: Sequence[ToolCall], tool_name: str) -> MetricResult:
    used = any(call.name == tool_name for call in predicted)
    return _result(used, f"{tool_name} {'was' if used else 'was not'} called")


class MatchType(StrEnum):
    """How ``tool_trajectory_avg_score`` matches an invocation's calls: ADK's ``ToolTrajectoryCriterion.MatchType``,
    its member names as the values (ADK's own numbers are its files' business:
    :class:`toolpath.evaluation.evalsets.adk_models.MatchType`)."""

    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"


MATCH_TYPES: dict[MatchType, Callable[..., MetricResult]] = {
    MatchType.EXACT: exact_match,
    MatchType.IN_ORDER: in_order_match,
    MatchType.ANY_ORDER: any_order_match,
}


def match_type_of(value: object) -> MatchType:
    """``value`` as a :class:`MatchType`, in any case (``"in_order"``); else a :class:`MetricError` naming them."""
    try:
        return MatchType(str(value).upper())
    except ValueError:
        raise MetricError(f"match_type must be one of {', '.join(MatchType)}, got {value!r}") from None


def tool_trajectory_avg_score(
    actual: Sequence[Sequence[ToolCall]],
    expected: Sequence[Sequence[ToolCall]],
    *,
    match_type: MatchType | str = MatchType.EXACT,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    json_strict: bool = False,
    null_args_wildcard: bool = False,
    none_args_equal_empty: bool | None = None,
) -> MetricResult:
    """ADK's criterion: the mean over a case's invocations of the 0/1 trajectory match of each, by ADK's call
    equality unless an option asks otherwise (no wildcards by default: ``None`` arguments are a value).
    ``none_args_equal_empty``: whether a call without arguments equals one with ``{}``; by default the installed
    google-adk's answer. The calls ADK sends its client are left out where the installed google-adk leaves them out
    (:mod:`toolpath.metrics.adk_args_rule`)."""
    options: dict[str, Any] = {"match_type": match_type, "ignore_args": ignore_args, "match": match}
    options.update(json_strict=json_strict, null_args_wildcard=null_args_wildcard)
    result = _avg_score(actual, expected, **options)
    if result.score is None or result.score == 1.0:  # ADK's reading of the calls only adds matches: none to add
        return result
    read = adk_args_rule.read_pair(actual, expected, none_args_equal_empty, null_args_wildcard)
    return result if read is None else _avg_score(*read, **options)


def _avg_score(
    actual: Sequence[Sequence[ToolCall]],
    expected: Sequence[Sequence[ToolCall]],
    *,
    match_type: MatchType | str = MatchType.EXACT,
    ignore_args: bool = False,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    json_strict: bool = False,
    null_args_wildcard: bool = False,
) -> MetricResult:
    if (
        match_type == MatchType.EXACT
        and match == CallMatch.NAME_AND_ARGS
        and not ignore_args
        and not json_strict
        and not null_args_wildcard
        and len(expected) == 1
        and len(actual) == 1
    ):  # the usual row, one invocation: score it directly
        score = 1.0 if match_keys(actual[0]) == match_keys(expected[0]) else 0.0
        return MetricResult(
            score,
            lambda: (
                "all 1 invocation(s) match (EXACT)"
                if score
                else f"invocation 1: {exact_match(actual[0], expected[0], null_args_wildcard=False).explanation}"
            ),
            {"per_invocation_scores": [score]},
        )
    mode = check_mode(match, ignore_args)
    kind = match_type_of(match_type)
    compare = MATCH_TYPES[kind]
    if not expected:
        return MetricResult.not_evaluated("no invocations to compare")
    if len(actual) != len(expected):
        return MetricResult.not_evaluated(f"{len(actual)} actual invocation(s) for {len(expected)} expected")
    options: dict[str, Any] = {"match": mode, "json_strict": json_strict, "null_args_wildcard": null_args_wildcard}
    if (
        compare is exact_match
        and mode == CallMatch.NAME_AND_ARGS
        and not (null_args_wildcard and _any_wildcard(expected))
    ):
        # equal key sequences are an exact match: score without a result object per invocation
        scores = [
            1.0 if match_keys(a, json_strict) == match_keys(e, json_strict) else 0.0
            for a, e in zip(actual, expected, strict=True)
        ]
    else:
        scores = [compare(a, e, **options).score or 0.0 for a, e in zip(actual, expected, strict=True)]

    def explain() -> str:
        if all(scores):
            return f"all {len(scores)} invocation(s) match ({kind})"
        return "; ".join(
            f"invocation {i + 1}: {compare(a, e, **options).explanation}"
            for i, (a, e, score) in enumerate(zip(actual, expected, scores, strict=True))
            if not score
        )

    return MetricResult(invocation_mean(scores), explain, {"per_invocation_scores": scores})


def _any_wildcard(trajectories: Sequence[Sequence[ToolCall]]) -> bool:
    return any(map(has_wildcard, trajectories))


def _result(ok: bool, explanation: str) -> MetricResult:
    return MetricResult(1.0 if ok else 0.0, explanation)


def _names(missing: Sequence[str]) -> str:
    return f"; missing {', '.join(missing)}" if missing else ""


def _not_found_in_order(name: str) -> Callable[[], str]:
    return lambda: f"{name} not found in order"


# --- order and F1 (partial credit) --------------------------------------------------------------------------


def pair_count(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    order: CallOrder | str = CallOrder.ANY,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> int:
    """Matched pairs under a match mode: a maximum one-to-one matching (``any``) or the longest common
    subsequence (``in_order``)."""
    if order == CallOrder.ANY:
        if (
            match == CallMatch.NAME_AND_ARGS or match == CallMatch.NAME
        ):  # the common case first: a multiset intersection
            return count_pairs(predicted, reference, match == CallMatch.NAME, json_strict, null_args_wildcard)
        return max_matching(predicted, reference, call_predicate(match, json_strict, null_args_wildcard))
    if order != CallOrder.IN_ORDER:
        raise MetricError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    return lcs(predicted, reference, call_predicate(match, json_strict, null_args_wildcard))


def precision_recall_f1(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    order: CallOrder | str = CallOrder.ANY,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> tuple[float, float, float, int]:
    """(precision, recall, F1, pairs) with the empty-trajectory rules of docs/spec.md §4; F1 of 0 and 0 is 0."""
    pairs = pair_count(
        predicted, reference, match=match, order=order, json_strict=json_strict, null_args_wildcard=null_args_wildcard
    )
    p = pairs / len(predicted) if predicted else (1.0 if not reference else 0.0)
    r = pairs / len(reference) if reference else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f1, pairs


def f1(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    match: CallMatch | str = CallMatch.NAME_AND_ARGS,
    order: CallOrder | str = CallOrder.ANY,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> MetricResult:
    p, r, score, pairs = precision_recall_f1(
        predicted, reference, match=match, order=order, json_strict=json_strict, null_args_wildcard=null_args_wildcard
    )
    return MetricResult(
        score,
        lambda: f"precision {p:.3f} ({pairs}/{len(predicted)}), recall {r:.3f} ({pairs}/{len(reference)})",
        {"precision": p, "recall": r},
    )
