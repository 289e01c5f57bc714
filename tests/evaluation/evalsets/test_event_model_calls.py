"""Which model calls ADK's efficiency figures count, read from a turn's ADK events (as dumps, either key style) and
carried on the agent span: an answer ADK leaves out of the invocation is no call and has no tokens; a span
attribute that is not a list of usage reports is ignored for the model spans."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolpath.adapters.adk_events import EventReader
from toolpath.evaluation.evalsets.efficiency import traced_efficiency
from toolpath.model import Invocation, agent_span_id
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

MS = 1_000_000
TRACE = "a" * 32


def event(author: str, parts: list[dict[str, Any]] | None, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"author": author, **fields}
    if parts is not None:
        data["content"] = {"role": "model", "parts": parts}
    return data


def usage(prompt: int, answer: int, **more: int) -> dict[str, int]:
    return {"prompt_token_count": prompt, "candidates_token_count": answer, **more}


def test_only_the_events_adk_keeps_are_model_calls():
    reader = EventReader()
    reader.add({"author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}})
    reader.add(event("root", [{"function_call": {"name": "look", "args": {}}}], usage_metadata=usage(10, 1)))
    reader.add(event("root", [{"function_response": {"name": "look", "response": {"ok": True}}}]))  # no usage
    reader.add(event("root", [{"text": ""}], usage_metadata=usage(12, 0)))  # an empty answer: left out
    reader.add(event("root", None, usage_metadata=usage(3, 3)))  # no content at all: left out
    reader.add(event("root", None, groundingMetadata={"webSearchQueries": ["q"]}, modelVersion="m-2"))  # kept
    reader.add(event("helper", [{"text": "done"}], usageMetadata={"promptTokenCount": 4, "thoughtsTokenCount": 2}))
    turn = reader.turn()
    assert turn.agent_events == 6
    assert turn.model_usage == [
        usage(10, 1),
        None,  # a model version and no usage: a call, no tokens
        {"promptTokenCount": 4, "thoughtsTokenCount": 2},
    ]
    assert turn.response == "done"


def test_a_stream_of_no_agent_event_claims_nothing():
    reader = EventReader()
    assert not reader.add({"unrelated": 1})
    assert (reader.turn().agent_events, reader.turn().model_usage) == (0, [])


def spans_of(root_attributes: dict[str, Any]) -> tuple[Invocation, list[SpanRecord]]:
    invocation = Invocation(invocation_id=f"{TRACE}-r", session_id="s", trace_id=TRACE, latency_seconds=1.0)
    root_id = agent_span_id(invocation.invocation_id, TRACE)
    assert root_id is not None
    root = SpanRecord(TRACE, root_id, None, "invoke_agent root", 1, 0, 1000 * MS, attributes=root_attributes)
    model = {sc.GEN_AI_OPERATION_NAME: sc.OP_GENERATE_CONTENT, sc.GEN_AI_USAGE_INPUT_TOKENS: 12}
    calls = [
        SpanRecord(TRACE, f"m{i}", root_id, "generate_content m", 1, i * 100 * MS, (i + 1) * 100 * MS, attributes=model)
        for i in range(3)
    ]
    return invocation, [root, *calls]


def test_the_figures_read_adks_count_from_the_agent_span():
    reported = [usage(10, 1, tool_use_prompt_token_count=2, cached_content_token_count=5), None]
    invocation, spans = spans_of({sc.TOOLPATH_MODEL_USAGE: json.dumps(reported)})
    figures = traced_efficiency(invocation, spans)
    assert figures["inference_call_count_v1"] == 2.0  # not the 3 model spans
    tokens = figures["token_usage_details"]
    assert (tokens["input_tokens"], tokens["output_tokens"], tokens["total_tokens"]) == (12, 1, 13)
    assert (tokens["prompt_tokens"], tokens["tool_use_tokens"], tokens["cached_tokens"]) == (10, 2, 5)
    assert figures["duration_details"]["model_seconds"] == pytest.approx(0.3)  # time still from the spans

    invocation, spans = spans_of({sc.TOOLPATH_MODEL_USAGE: "[]"})
    none = traced_efficiency(invocation, spans)
    assert (none["inference_call_count_v1"], none["token_usage_v1"]) == (0.0, None)


@pytest.mark.parametrize("attribute", ["not json", '{"a": 1}', "[1, 2]", '[{"prompt_token_count": "many"}]'])
def test_an_attribute_that_is_not_usage_reports_leaves_the_model_spans_to_count(attribute):
    invocation, spans = spans_of({sc.TOOLPATH_MODEL_USAGE: attribute})
    figures = traced_efficiency(invocation, spans)
    assert (figures["inference_call_count_v1"], figures["token_usage_v1"]) == (3.0, 36.0)
