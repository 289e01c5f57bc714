"""Pairing predicted calls with reference calls: the one-to-one matchings and subsequences the trajectory metrics
count (docs/spec.md §4, §6).

One-to-one pairing (any-order, precision, recall) is a *maximum* matching. Because both equalities are
equivalence relations, it is computed exactly without a graph search: reference calls with concrete
arguments are paired greedily within their equality class first (any partner in the class is as good as
another), then wildcard references take the predicted calls of the same name that are left — so a wildcard
never steals the only partner of a stricter reference. (ADK's ANY_ORDER pairs greedily, which for an
equivalence relation finds a complete pairing exactly when one exists.)

The usual row — :class:`Trajectory` records, ADK's rule, no wildcard to honour (:func:`keyed`) — compares the
calls' cached ``(name, args)`` keys with ``==`` in C: a few calls a side are paired by scanning the keys, more
by counting hashable identities (linear).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolpath.metrics.equality import CallMatch, CallPredicate
from toolpath.model import ToolCall
from toolpath.trajectory import Trajectory, has_wildcard, identities, identity_counts, match_keys

SMALL = 64
"""Up to this many ``len(predicted) * len(reference)`` comparisons, calls are paired by scanning their match keys
(nothing to compute first); above it, by counting hashable identities."""


def keyed(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    match: CallMatch | str,
    ignore_args: bool,
    json_strict: bool,
    wildcard: bool,
) -> bool:
    """Whether two trajectories compare by their cached match keys alone: both :class:`Trajectory` records, calls
    equal by ADK's rule (``match="name_and_args"``, no ``ignore_args``, no ``json_strict``), and no wildcard in the
    reference to honour."""
    return (
        predicted.__class__ is Trajectory
        and reference.__class__ is Trajectory
        and match == CallMatch.NAME_AND_ARGS
        and not ignore_args
        and not json_strict
        and not (wildcard and reference.has_wildcard)
    )


_compared: tuple[Trajectory | None, Trajectory | None, bool] = (None, None, False)
"""The last pair :func:`same_keys` compared and its answer."""


def same_keys(predicted: Trajectory, reference: Trajectory) -> bool:
    """Whether two :func:`keyed` trajectories hold equal calls in the same order. Most metrics of a row ask it of
    the same pair, one after another, and comparing the arguments is most of their work: the answer for the last
    pair is kept (immutable records: the answer for the same two objects stays the answer)."""
    global _compared
    last = _compared
    if last[0] is predicted and last[1] is reference:
        return last[2]
    same = predicted.match_keys == reference.match_keys
    _compared = (predicted, reference, same)
    return same


_last: tuple[Trajectory | None, Trajectory | None, tuple[str, ...]] = (None, None, ())
"""The last pair :func:`unmatched` saw and its answer: the metrics of one row (any-order, precision, recall) ask
about the same pair one after another."""


def unmatched(predicted: Trajectory, reference: Trajectory) -> tuple[str, ...]:
    """The names of the reference calls left without an equal predicted call, in reference order (:func:`keyed`
    trajectories: immutable records, so the answer for the same two objects stays the answer)."""
    global _last
    last = _last
    if last[0] is predicted and last[1] is reference:
        return last[2]
    have, want = predicted.match_keys, reference.match_keys
    if same_keys(predicted, reference):
        missing: list[str] = []
    elif len(have) * len(want) > SMALL:
        missing = _unmatched_identities(predicted.identity_counts, reference.identities)
    else:
        remaining = list(have)
        missing = []
        for key in want:
            if key in remaining:
                remaining.remove(key)
            else:
                missing.append(key[0])
    _last = (predicted, reference, answer := tuple(missing))
    return answer


def _unmatched_identities(available: dict[Any, int], wanted: Sequence[Any]) -> list[str]:
    left = dict(available)
    missing = []
    for identity in wanted:
        count = left.get(identity, 0)
        if count:
            left[identity] = count - 1
        else:
            missing.append(identity[0])
    return missing


def count_pairs(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], ignore_args: bool, json_strict: bool, wildcard: bool
) -> int:
    """Size of a maximum one-to-one matching (``match="name_and_args"``, or names only with ``ignore_args``)."""
    if ignore_args or (wildcard and has_wildcard(reference)):
        return match_calls(predicted, reference, ignore_args, json_strict, wildcard)[0]
    if not json_strict and len(predicted) * len(reference) <= SMALL:  # the usual row: a few calls a side
        have, want = match_keys(predicted), match_keys(reference)
        if have == want:
            return len(want)
        remaining = list(have)
        matched = 0
        for key in want:
            if key in remaining:
                remaining.remove(key)
                matched += 1
        return matched
    counted, wanted = identity_counts(predicted, json_strict), identity_counts(reference, json_strict)
    if counted == wanted:
        return len(reference)
    matched = 0
    for identity, count in wanted.items():
        found = counted.get(identity, 0)
        matched += count if found >= count else found
    return matched


def match_calls(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    ignore_args: bool,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> tuple[int, list[str]]:
    """The maximum matching's size, and the names of reference calls left without a partner (in reference order).

    References with concrete arguments take an equal predicted call first (``list.remove`` compares the
    keys in C); wildcards then take any predicted call of their name that is left.
    """
    wild = null_args_wildcard and has_wildcard(reference)
    if not ignore_args and not wild and (json_strict or len(predicted) * len(reference) > SMALL):
        # hashable call identities (cached on Trajectory records), counted
        missing = _unmatched_identities(identity_counts(predicted, json_strict), identities(reference, json_strict))
        return len(reference) - len(missing), missing
    remaining = list(match_keys(predicted, json_strict))
    matched = 0
    unmatched: list[str] = []
    wildcards: list[str] = []
    for ref, key in zip(reference, match_keys(reference, json_strict), strict=True):
        if ignore_args or (wild and ref.args is None):
            wildcards.append(ref.name)
            continue
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


def lcs(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], same: CallPredicate) -> int:
    """The longest common subsequence's length under ``same``."""
    previous = [0] * (len(reference) + 1)
    for pred in predicted:
        current = [0]
        for j, ref in enumerate(reference):
            current.append(previous[j] + 1 if same(pred, ref) else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def max_matching(predicted: Sequence[ToolCall], reference: Sequence[ToolCall], same: CallPredicate) -> int:
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
