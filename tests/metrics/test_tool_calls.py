"""Vertex tool-call metrics over a single JSON response, pinned by hand."""

from __future__ import annotations

import json

import pytest

from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluation.scoring import score_row


def calls(*items, content="") -> str:
    return json.dumps({"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in items]})


def run(spec: str, response, reference=None):
    row = {"response": response} if reference is None else {"response": response, "reference": reference}
    return score_row(resolve_metric(spec), row)


class TestToolCallValid:
    @pytest.mark.parametrize(
        ("response", "expected"),
        [
            (calls(("get", {"id": 1})), 1.0),
            (calls(("get", '{"id": 1}')), 1.0),  # arguments as a JSON string
            (calls(("", {"id": 1})), 0.0),
            (calls(("get", "not json")), 0.0),
            (calls(("get", [1, 2])), 0.0),
            (calls(), 0.0),
            ("{not json", 0.0),
            ('"just a string"', 0.0),
        ],
    )
    def test_cases(self, response, expected):
        assert run("tool_call_valid", response).score == expected


class TestMatches:
    def test_name_match_in_order(self):
        assert run("tool_name_match", calls(("a", {}), ("b", {})), calls(("a", {}), ("b", {}))).score == 1.0
        assert run("tool_name_match", calls(("b", {}), ("a", {})), calls(("a", {}), ("b", {}))).score == 0.0
        assert run("tool_name_match", calls(), calls()).score == 1.0

    def test_key_match_by_hand(self):
        # pair 1: keys {x, y} vs {x, z} -> 1/3; pair 2 missing on the response side -> 0; mean over 2 = 1/6
        response = calls(("f", {"x": 1, "y": 2}))
        reference = calls(("f", {"x": 9, "z": 3}), ("g", {"q": 1}))
        assert run("tool_parameter_key_match", response, reference).score == pytest.approx(1 / 6)

    def test_kv_match_loose_and_strict(self):
        response = calls(("f", {"city": " Paris ", "n": 1, "on": True}))
        reference = calls(("f", {"city": "paris", "n": 1.0, "on": True}))
        assert run("tool_parameter_kv_match", response, reference).score == 1.0
        # strict: " Paris " != "paris" and 1 != 1.0 as JSON text; only "on" matches
        strict = run("tool_parameter_kv_match(use_strict_string_match=true)", response, reference)
        assert strict.score == pytest.approx(1 / 3)

    def test_two_empty_argument_objects_match(self):
        assert run("tool_parameter_key_match", calls(("f", {})), calls(("f", {}))).score == 1.0

    def test_unparsable_input_is_null_with_reason(self):
        result = run("tool_name_match", "{oops", calls(("a", {})))
        assert result.score is None and "response is not valid JSON" in result.explanation
        missing = run("tool_parameter_kv_match", calls(("a", {})))
        assert missing.score is None and missing.explanation == "row has no 'reference'"
