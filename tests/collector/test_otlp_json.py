"""Flattening what no JSON parser recurses through: brackets inside strings (escaped quotes too) are text, and
only what opens past the limit is replaced."""

from __future__ import annotations

import json

from toolpath.collector.otlp_json import TOO_DEEP, flatten_deep


def test_brackets_in_strings_are_text_and_only_the_deep_part_is_replaced():
    text = '{"a": [1, {"b": "x]}\\"["}, ' + "[" * 10 + "1" + "]" * 10 + '], "c": 2}'
    assert json.loads(flatten_deep(text, 4)) == {"a": [1, {"b": 'x]}"['}, [[TOO_DEEP]]], "c": 2}


def test_a_body_within_the_limit_is_unchanged():
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a[{b"}]}]}]})
    assert flatten_deep(text) == text


def test_ten_thousand_levels_parse_once_flattened():
    text = '{"v": ' + "[" * 10_000 + "]" * 10_000 + ', "after": 1}'
    data = json.loads(flatten_deep(text))
    assert data["after"] == 1
