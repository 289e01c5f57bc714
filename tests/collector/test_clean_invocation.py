"""Rebuilt invocations are cleaned exactly as a walk through every value would clean them, though values parsed
from text that cannot hold anything to clean are not walked again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolpath.collector import clean
from toolpath.collector.clean import MAX_DEPTH, clean_invocation, clean_value, mark_clean
from toolpath.collector.reconstruct import build_invocations, span_values
from toolpath.collector.reconstruct.span_values import parse_clean_json, parse_json
from toolpath.model import Invocation, ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

CLEAN = [
    '{"device_id": "thermostat", "updates": {"brightness": 30, "color": {"hue": 30.5}}}',
    '{"text": "NaN and Infinity are words here", "n": -1.5e3, "big": 123456789012345678901234567890}',
    '{"accent": "\\u00e9t\\u00e9"}',
    '"a string"',
    "[1, 2, 3]",
    "42",
    "null",
    "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2),
]
UNCLEAN = [
    '{"nul": "a\\u0000b"}',
    '{"lone": "\\ud800"}',
    '{"lone": "\\uDFFF at the end"}',
    '{"raw lone": "\ud800"}',
    '{"raw nul": "a\x00b"}',  # not JSON (a control character in a string): kept as the text, NUL and all
    '{"a": 1}\x00',
    '{"n": NaN}',
    '{"n": -Infinity}',
    "[Infinity]",
    '{"n": 1e999}',
    '{"n": -1E400}',
    "[" + "1" * 400 + ".0]",
    "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1),
]
WALKED_ANYWAY = [
    '{"emoji": "\\ud83d\\ude00 is a pair"}',
    '"\\\\u0000 is text"',
]  # clean, but the text does not prove it
NOT_JSON = ["plain text", " {} ", "\ufeff{}", '{"a": 1', "", "[" * 5000 + "]" * 5000]


@pytest.mark.parametrize("text", CLEAN + UNCLEAN + WALKED_ANYWAY + NOT_JSON)
def test_clean_text_parses_as_parse_json_and_is_said_clean_only_when_it_is(text):
    parsed, known_clean = parse_clean_json(text)
    assert repr(parsed) == repr(parse_json(text))
    if known_clean:  # nothing to clean, even wrapped as a tool's bare input
        assert clean_value(parsed) == (parsed, False)
        assert not clean_value({"input": parsed})[1]
    assert known_clean == (text in CLEAN)


def tool_span(n: int, arguments: Any, result: Any) -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32, span_id=f"{n:016x}", parent_span_id="a" * 16, name="execute_tool t", kind=1,
        start_time=n, end_time=n + 1,
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "t",
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments, sc.GEN_AI_TOOL_CALL_RESULT: result},
    )  # fmt: skip


def run(texts: list[str]) -> list[SpanRecord]:
    root = SpanRecord(
        trace_id="1" * 32, span_id="a" * 16, parent_span_id=None, name="invoke_agent bot", kind=1, start_time=0,
        end_time=100, attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "bot"},
    )  # fmt: skip
    return [root, *(tool_span(n, text, texts[-n]) for n, text in enumerate(texts, 1))]


def cleaned(spans: list[SpanRecord]) -> list[dict[str, Any]]:
    return [json.loads(clean_invocation(inv).model_dump_json()) for inv in build_invocations(spans)]


def test_invocations_are_cleaned_as_a_walk_through_every_value_cleans_them(monkeypatch):
    spans = run(CLEAN + UNCLEAN + WALKED_ANYWAY + NOT_JSON)
    got = cleaned(spans)
    assert "tool_calls" in got[0]["attributes"][sc.TOOLPATH_CLEANED]
    monkeypatch.setattr(span_values, "parse_clean_json", lambda value: (parse_json(value), False))
    monkeypatch.setattr("toolpath.collector.reconstruct.parse_clean_json", span_values.parse_clean_json)
    assert got == cleaned(spans)  # nothing known clean: every value walked


def test_a_value_replaced_after_it_was_known_clean_is_walked():
    call = ToolCall.model_construct(name="t", args={"k": "v"}, result="ok")
    mark_clean(call, True, True)
    assert clean._clean_call(call) is call
    replaced = call.model_copy(update={"args": {"k": "a\x00b"}, "result": float("nan")})
    invocation = Invocation(invocation_id="i", session_id="s", tool_calls=[replaced])
    [fixed] = clean_invocation(invocation).tool_calls
    assert (fixed.args, fixed.result) == ({"k": "a\ufffdb"}, "NaN")
