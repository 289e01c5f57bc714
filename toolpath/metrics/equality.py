"""When two tool calls are equal (docs/spec.md §4): ADK 2.x's rule by default, JSON-strict equality and wildcards as
options, and the match modes of the trajectory metrics.

ADK's rule: same ``name`` and ``args == args`` as Python values after JSON decoding — key order ignored, list
order significant, ``1 == 1.0``, ``0 == False``, ``1 == True`` (also nested), and arguments absent (``None``)
unequal to ``{}``. ``json_strict`` compares arguments as JSON values instead (``true != 1``; still
``1 == 1.0``); ``null_args_wildcard`` lets a reference call whose ``args`` is ``None`` match any arguments.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from toolpath.errors import MetricError
from toolpath.model import ToolCall
from toolpath.values import canonical_json


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


def values_equal(a: Any, b: Any, json_strict: bool = False) -> bool:
    """Two argument values under ADK's rule (Python ``==``) or, with ``json_strict``, as JSON values."""
    return json_equal(a, b) if json_strict else bool(a == b)


def calls_match(
    predicted: ToolCall,
    reference: ToolCall,
    *,
    ignore_args: bool = False,
    json_strict: bool = False,
    null_args_wildcard: bool = True,
) -> bool:
    if ignore_args or (null_args_wildcard and reference.args is None):
        return predicted.name == reference.name
    if json_strict:
        return predicted.json_match_key == reference.json_match_key
    return predicted.match_key == reference.match_key


def describe_difference(predicted: ToolCall, reference: ToolCall, json_strict: bool = False) -> str:
    """Why two calls differ, naming the arguments when the names agree."""
    return describe_key_difference((predicted.name, predicted.args), (reference.name, reference.args), json_strict)


MatchKey = tuple[str, dict[str, Any] | None]
"""A call's ``(name, args)``."""


def describe_key_difference(predicted: MatchKey, reference: MatchKey, json_strict: bool = False) -> str:
    """:func:`describe_difference` of two calls given as their match keys ``(name, args)``."""
    (got_name, got_args), (name, expected_args) = predicted, reference
    if got_name != name:
        return f"expected {name}, got {got_name}"
    if (got_args is None) != (expected_args is None):  # no arguments at all is not {}
        return f"{name} arguments: expected {_brief(expected_args)}, got {_brief(got_args)}"
    expected, got = expected_args or {}, got_args or {}
    parts = []
    for key in sorted(expected.keys() | got.keys()):
        if key not in got:
            parts.append(f"{key} missing")
        elif key not in expected:
            parts.append(f"unexpected {key}={_brief(got[key])}")
        elif not (json_equal(got[key], expected[key]) if json_strict else got[key] == expected[key]):
            parts.append(f"{key}: expected {_brief(expected[key])}, got {_brief(got[key])}")
    return f"{name} " + "; ".join(parts)


_encode = json.JSONEncoder(ensure_ascii=False, default=repr).encode


def _brief(value: Any) -> str:
    """A value as JSON text, for explanations (``json.dumps`` with these options, without a new encoder per call;
    an integer written directly, as the encoder writes it)."""
    return int.__repr__(value) if value.__class__ is int else _encode(value)


class CallMatch(StrEnum):
    """What of two calls must be equal for them to match (a trajectory metric's ``match`` option)."""

    NAME = "name"
    NAME_AND_ARGS = "name_and_args"
    """The default: ADK's rule."""
    NAME_AND_REQUIRED_ARGS = "name_and_required_args"
    """Every argument the reference gives, equal; extra predicted arguments are fine."""


MATCH_MODES = tuple(CallMatch)


def check_mode(match: CallMatch | str, ignore_args: bool = False) -> CallMatch:
    """The effective match mode; ``ignore_args`` is the ADK spelling of ``match="name"``."""
    if match == CallMatch.NAME_AND_ARGS:  # the default: nothing to check
        return CallMatch.NAME if ignore_args else CallMatch.NAME_AND_ARGS
    if match not in MATCH_MODES:
        raise MetricError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
    return CallMatch.NAME if ignore_args else CallMatch(match)


def required_args_match(predicted: ToolCall, reference: ToolCall, json_strict: bool = False) -> bool:
    """Same name, and every argument the reference gives is present with an equal value (extra predicted
    arguments are fine)."""
    if predicted.name != reference.name:
        return False
    want = reference.args
    if not want:
        return True
    got = predicted.args or {}
    return all(key in got and values_equal(got[key], value, json_strict) for key, value in want.items())


CallPredicate = Callable[[ToolCall, ToolCall], bool]


def call_predicate(mode: CallMatch | str, json_strict: bool = False, null_args_wildcard: bool = True) -> CallPredicate:
    """Whether two calls match under a match mode and the equality options."""
    if mode == CallMatch.NAME:
        return lambda p, r: p.name == r.name
    if mode == CallMatch.NAME_AND_ARGS:
        return lambda p, r: calls_match(p, r, json_strict=json_strict, null_args_wildcard=null_args_wildcard)
    return lambda p, r: required_args_match(p, r, json_strict)
