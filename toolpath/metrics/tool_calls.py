"""Vertex AI's tool-call metrics over a single model response (docs/spec.md §4).

The response and the reference are JSON strings ``{"content": str, "tool_calls": [{"name", "arguments"}]}``;
``arguments`` may itself be a JSON string (the OpenAI habit). Calls are paired by position.

- ``tool_call_valid``: 1 if the response parses and has at least one call, each with a non-empty ``name`` and
  object ``arguments``.
- ``tool_name_match``: 1 if the lists of call names are equal, in order.
- ``tool_parameter_key_match``: per pair, shared keys ÷ union of keys (two empty argument objects: 1); the
  mean over ``max(len(response calls), len(reference calls))`` pairs, so a missing or extra call counts 0.
- ``tool_parameter_kv_match``: the same, where a key counts when its value matches too: as JSON values with
  strings compared after trimming and case-folding, or, with ``use_strict_string_match``, as exact JSON text.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from toolpath.errors import ToolpathError
from toolpath.metrics.equality import canonical_args
from toolpath.model import MetricResult


class ToolCallParseError(ToolpathError, ValueError):
    """The text is not the tool-call JSON these metrics read."""


def parse_tool_calls(text: Any, *, which: str) -> list[tuple[Any, Any]]:
    """``[(name, arguments)]`` of a tool-call JSON string (or already-parsed object), both as the JSON gave
    them (:func:`tool_call_valid` checks their types)."""
    value = text
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolCallParseError(f"{which} is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise ToolCallParseError(f"{which} must be a JSON object with 'tool_calls'")
    calls = value.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ToolCallParseError(f"{which}: 'tool_calls' must be a list")
    parsed = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise ToolCallParseError(f"{which}: tool_calls[{i}] is not an object")
        args = call.get("arguments")
        if isinstance(args, str):
            with contextlib.suppress(json.JSONDecodeError):  # not JSON: tool_call_valid reports it
                args = json.loads(args)
        parsed.append((call.get("name"), args))
    return parsed


def tool_call_valid(response: Any) -> MetricResult:
    try:
        calls = parse_tool_calls(response, which="response")
    except ToolCallParseError as exc:
        return MetricResult(score=0.0, explanation=str(exc))
    if not calls:
        return MetricResult(score=0.0, explanation="no tool calls")
    for i, (name, args) in enumerate(calls):
        if not isinstance(name, str) or not name:
            return MetricResult(score=0.0, explanation=f"tool_calls[{i}] has no name")
        if not isinstance(args, dict):
            return MetricResult(score=0.0, explanation=f"tool_calls[{i}] arguments are not an object")
    return MetricResult(score=1.0, explanation=f"{len(calls)} valid call(s)")


def tool_name_match(response: Any, reference: Any) -> MetricResult:
    predicted, expected = _both(response, reference)
    got, want = [n for n, _ in predicted], [n for n, _ in expected]
    return MetricResult(score=1.0 if got == want else 0.0, explanation=f"expected {want}, got {got}")


def tool_parameter_key_match(response: Any, reference: Any) -> MetricResult:
    return _per_pair(response, reference, lambda got, want: set(got) & set(want))


def tool_parameter_kv_match(response: Any, reference: Any, *, use_strict_string_match: bool = False) -> MetricResult:
    same = _strict_same if use_strict_string_match else _loose_same
    return _per_pair(response, reference, lambda got, want: {k for k in set(got) & set(want) if same(got[k], want[k])})


def _both(response: Any, reference: Any) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    return parse_tool_calls(response, which="response"), parse_tool_calls(reference, which="reference")


def _per_pair(
    response: Any, reference: Any, matching_keys: Callable[[dict[str, Any], dict[str, Any]], set[str]]
) -> MetricResult:
    predicted, expected = _both(response, reference)
    pairs = max(len(predicted), len(expected))
    if pairs == 0:
        return MetricResult(score=1.0, explanation="no tool calls on either side")
    total = 0.0
    for (_, got), (_, want) in zip(predicted, expected, strict=False):
        got = got if isinstance(got, dict) else {}
        want = want if isinstance(want, dict) else {}
        union = set(got) | set(want)
        total += len(matching_keys(got, want)) / len(union) if union else 1.0
    return MetricResult(score=total / pairs, explanation=f"mean over {pairs} call pair(s)")


def _strict_same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, ensure_ascii=False) == json.dumps(b, sort_keys=True, ensure_ascii=False)


def _loose_same(a: Any, b: Any) -> bool:
    return canonical_args(_fold(a)) == canonical_args(_fold(b))


def _fold(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, dict):
        return {k: _fold(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fold(v) for v in value]
    return value
