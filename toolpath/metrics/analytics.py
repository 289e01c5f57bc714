"""Trajectory analytics: how close the arguments came, and how the agent behaved (pure functions).

- ``tool_argument_similarity``: reference calls pair with predicted calls of the same name, in order (the
  first ``f`` with the first ``f``…). Each pair scores the mean over the *reference's* argument keys:
  numbers and booleans exact (``1 == 1.0``, ``true != 1``), strings by token F1 after NFKC, case-folding and
  punctuation removal (so equal normalised text is 1), objects recursively over the reference's keys, lists
  position by position over the longer length; a key the prediction lacks scores 0; a reference call without
  arguments (or with wildcard ``null`` arguments) scores 1. The score is the mean over pairs.
- ``tool_call_count``: the number of predicted calls.
- ``redundant_tool_calls``: calls identical (name and arguments) to an earlier call of the trajectory.
- ``tool_loop_detected``: 1 if a call, or a cycle of up to ``max_cycle`` calls, repeats back to back at least
  ``min_repeats`` times.
- ``tool_error_rate``: failed calls ÷ calls.
- ``error_recovery``: for each failure episode (a failing call, not counting identical retries that fail
  too), *recovered* if a later call succeeded, *repeated* if the agent only retried the identical failing call,
  *gave up* otherwise; the score is recovered ÷ episodes.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from toolpath.errors import MetricError
from toolpath.model import MetricResult, ToolCall
from toolpath.trajectory import Trajectory
from toolpath.values import counts, json_identity

_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)


# --- argument similarity -----------------------------------------------------------------------------------


def text_tokens(text: str) -> list[str]:
    normal = unicodedata.normalize("NFKC", text).casefold()
    return _PUNCTUATION.sub(" ", normal).split()


def token_f1(got: str, want: str) -> float:
    got_tokens, want_tokens = text_tokens(got), text_tokens(want)
    if not got_tokens and not want_tokens:
        return 1.0
    common = sum((Counter(got_tokens) & Counter(want_tokens)).values())
    if not common:
        return 0.0
    precision, recall = common / len(got_tokens), common / len(want_tokens)
    return 2 * precision * recall / (precision + recall)


def value_similarity(got: Any, want: Any) -> float:
    """Similarity in [0, 1] of a predicted value to the reference value (see the module docstring)."""
    if isinstance(want, bool) or want is None:
        return 1.0 if got is want else 0.0
    if isinstance(want, int | float):
        return 1.0 if isinstance(got, int | float) and not isinstance(got, bool) and got == want else 0.0
    if isinstance(want, str):
        return token_f1(got, want) if isinstance(got, str) else 0.0
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return 0.0
        if not want:
            return 1.0
        return sum(value_similarity(got[k], v) if k in got else 0.0 for k, v in want.items()) / len(want)
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple):
            return 0.0
        length = max(len(got), len(want))
        if length == 0:
            return 1.0
        return sum(value_similarity(g, w) for g, w in zip(got, want, strict=False)) / length
    return 1.0 if got == want else 0.0


def pair_by_name(predicted: Sequence[ToolCall], reference: Sequence[ToolCall]) -> list[tuple[ToolCall, ToolCall]]:
    """Reference calls paired with predicted calls of the same name, in order of appearance."""
    queues: dict[str, list[ToolCall]] = {}
    for call in predicted:
        queues.setdefault(call.name, []).append(call)
    pairs = []
    for ref in reference:
        queue = queues.get(ref.name)
        if queue:
            pairs.append((queue.pop(0), ref))
    return pairs


def tool_argument_similarity(predicted: Sequence[ToolCall], reference: Sequence[ToolCall]) -> MetricResult:
    if not reference:
        return MetricResult.not_evaluated("the reference has no tool calls to compare arguments with")
    pairs = pair_by_name(predicted, reference)
    if not pairs:
        return MetricResult.not_evaluated("no predicted call has the name of a reference call")
    scores, differing = [], []
    for pred, ref in pairs:
        want = ref.args
        if not want:
            scores.append(1.0)
            continue
        got = pred.args or {}
        per_key = {key: value_similarity(got[key], value) if key in got else 0.0 for key, value in want.items()}
        scores.append(sum(per_key.values()) / len(per_key))
        differing += [f"{ref.name}.{key} ({score:.2f})" for key, score in per_key.items() if score < 1.0]
    return MetricResult(
        sum(scores) / len(scores),
        lambda: f"arguments that differ: {', '.join(differing)}" if differing else "all arguments match",
        {"per_pair_scores": scores},
    )


# --- reference-free behaviour ----------------------------------------------------------------------------


def _identity(call: ToolCall) -> tuple[str, Hashable]:
    """Name and the arguments' JSON identity, absent arguments as ``{}``; cached on the call (the behaviour
    metrics of a row share it)."""
    return call.json_identity if call.args is not None else (call.name, _NO_ARGUMENTS)


_NO_ARGUMENTS = json_identity({})


def _records(predicted: Sequence[ToolCall]) -> Sequence[ToolCall]:
    """The calls to read: a :class:`Trajectory`'s records as a tuple (counted and iterated without its methods)."""
    return predicted.calls if predicted.__class__ is Trajectory else predicted


def tool_call_count(predicted: Sequence[ToolCall]) -> MetricResult:
    count = len(predicted)
    return MetricResult(float(count), f"{count} call(s)")


def redundant_tool_calls(predicted: Sequence[ToolCall]) -> MetricResult:
    seen: set[tuple[str, Hashable]] = set()
    repeats: list[str] = []
    calls = _records(predicted)
    if len(calls) > 1 and len({call.name for call in calls}) < len(calls):  # else no name twice: args unread
        for call in calls:
            identity = _identity(call)
            if identity in seen:
                repeats.append(call.name)
            seen.add(identity)
    return MetricResult(
        float(len(repeats)), f"repeated: {', '.join(repeats)}" if repeats else "no call repeats an earlier one"
    )


def tool_loop_detected(predicted: Sequence[ToolCall], *, min_repeats: int = 3, max_cycle: int = 3) -> MetricResult:
    if min_repeats < 2 or max_cycle < 1:
        raise MetricError("min_repeats must be at least 2 and max_cycle at least 1")
    calls = _records(predicted)
    # every call of a repeated cycle repeats with it: no name as often as min_repeats (fewer calls than that, or
    # no name twice), no loop (args unread)
    often = len(calls) >= min_repeats
    if often:
        called = [call.name for call in calls]
        often = len(set(called)) < len(called) and max(counts(called).values()) >= min_repeats
    if not often:
        return MetricResult(0.0, f"no call or cycle of up to {max_cycle} calls repeats {min_repeats} times")
    ids = [_identity(call) for call in calls]
    for length in range(1, max_cycle + 1):
        for start in range(len(ids) - length * min_repeats + 1):
            cycle = ids[start : start + length]
            repeats = 1
            while ids[start + repeats * length : start + (repeats + 1) * length] == cycle:
                repeats += 1
            if repeats >= min_repeats:
                names = " → ".join(name for name, _ in cycle)
                return MetricResult(1.0, f"{names} repeated {repeats} times from call {start + 1}")
    return MetricResult(0.0, f"no call or cycle of up to {max_cycle} calls repeats {min_repeats} times")


def tool_error_rate(predicted: Sequence[ToolCall]) -> MetricResult:
    calls = _records(predicted)
    if not calls:
        return MetricResult.not_evaluated("no tool calls")
    failed = len([None for call in calls if call.error])
    return MetricResult(failed / len(calls), f"{failed} of {len(calls)} call(s) failed")


def error_recovery(predicted: Sequence[ToolCall]) -> MetricResult:
    outcomes: list[str] = []
    index = 0
    while index < len(predicted):
        call = predicted[index]
        if not call.error:
            index += 1
            continue
        identity = _identity(call)
        later = index + 1
        while later < len(predicted) and predicted[later].error and _identity(predicted[later]) == identity:
            later += 1  # identical retries that fail too belong to the same episode
        rest = predicted[later:]
        if any(not c.error for c in rest):
            outcomes.append("recovered")
        elif later > index + 1:
            outcomes.append("repeated")
        else:
            outcomes.append("gave_up")
        index = later
    if not outcomes:
        return MetricResult.not_evaluated("no failing tool call")
    counts = Counter(outcomes)
    return MetricResult(
        counts["recovered"] / len(outcomes),
        f"{len(outcomes)} failure(s): {counts['recovered']} recovered, {counts['repeated']} repeated the "
        f"failing call, {counts['gave_up']} gave up",
        {"outcomes": outcomes},
    )
