"""The store's JSON text reads back as the same values ``json.dumps`` would have written, orjson's refusals
included."""

from __future__ import annotations

import json

import pytest

from toolpath.jsontext import dumps, strict_loads

VALUES = [
    {"a": 1, "b": [1, 2.5, None, True, False], "c": {"d": "e"}},
    {"é": "ü — 東京 🚀"},
    {"big": 2**70, "negative": -(2**65)},  # past orjson's 64 bits
    {1: "int key", None: "null key"},  # keys json turns into strings
    "a\ud800b",  # a lone surrogate (cleaned away before the store, but never an error here)
    [1.0000000000000002, -0.0, 1e308, 5e-324],
    (1, 2),
    None,
    "",
    {},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_reads_back_as_json_dumps_would(value: object) -> None:
    assert json.loads(dumps(value)) == json.loads(json.dumps(value))


def test_what_neither_can_encode_is_json_s_error() -> None:
    with pytest.raises(TypeError):
        dumps({"x": object()})


def test_json_nested_past_what_python_reads_is_an_error_at_its_deepest_place() -> None:
    text = '{"a": 1, "b": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(json.JSONDecodeError) as refused:
        strict_loads(text)
    assert refused.value.msg == "arrays and objects nested 100001 deep: too deep to read"
    assert refused.value.pos == text.index("[") + 99_999  # the last bracket opened
    assert strict_loads('{"b": ' + "[" * 200 + '"]]"' + "]" * 200 + "}")["b"][0][0]  # brackets in a string: text
