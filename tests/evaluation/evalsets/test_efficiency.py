"""ADK's efficiency figures of each eval case, from what toolpath traced and stored: tool calls, model calls, tokens,
and the seconds split between model, tools and the rest."""

from __future__ import annotations

import time

import pytest

import toolpath
from tests.helpers import ADK_FIXTURES
from toolpath.evaluation.evalsets.adk_models import DurationDetails, TokenUsageDetails
from toolpath.evaluation.evalsets.efficiency import case_efficiency, traced_efficiency
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.model import Invocation, ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc
from toolpath.tracer import spans

MS = 1_000_000


@toolpath.tool
def get_weather(city: str) -> dict:
    time.sleep(0.02)
    return {"city": city, "sky": "sunny", "temp": 20}


def model_call(input_tokens: int, output_tokens: int) -> None:
    """What toolpath's model adapters record of one model call."""
    span = spans.start_chat_span("scripted-model", None)
    time.sleep(0.01)
    spans.end_chat_span(span, input_tokens, output_tokens)


def agent(prompt: str) -> str:
    model_call(100, 10)
    if "weather" not in prompt:
        return "Hello! I can tell you the weather."
    w = get_weather("Paris")
    model_call(200, 20)
    return f"The weather in Paris is {w['sky']}, {w['temp']}C."


def test_figures_of_a_traced_run(tracing, store_url):
    [case] = evaluate_eval_sets(
        [load_eval_set(ADK_FIXTURES / "weather.test.json")], agent, store=Store(store_url)
    ).cases
    figures = case.efficiency
    turns = figures["per_invocation"]
    assert [t["tool_call_count_v1"] for t in turns] == [0.0, 1.0]
    assert [t["inference_call_count_v1"] for t in turns] == [1.0, 2.0]
    assert [t["token_usage_v1"] for t in turns] == [110.0, 330.0]
    assert (figures["tool_call_count_v1"], figures["inference_call_count_v1"], figures["token_usage_v1"]) == (
        0.5,
        1.5,
        220.0,
    )
    assert figures["token_usage_details"]["input_tokens"] == 200.0
    assert figures["token_usage_details"]["cached_tokens"] is None  # not reported is n/a, never 0
    second = turns[1]["duration_details"]
    assert second["model_seconds"] >= 0.02 and second["tool_seconds"] >= 0.02
    assert second["total_seconds"] >= second["model_seconds"] + second["tool_seconds"]
    assert second["framework_seconds"] == pytest.approx(
        round(second["total_seconds"] - second["model_seconds"] - second["tool_seconds"], 3)
    )
    assert figures["invocation_duration_v1"] == round(
        (turns[0]["invocation_duration_v1"] + turns[1]["invocation_duration_v1"]) / 2, 3
    )


def test_without_the_spans_model_figures_are_not_available():
    """A run traced without a store: the tool calls and the wall time are known, the model figures are not."""
    invocation = Invocation(invocation_id="i", session_id="s", tool_calls=[ToolCall(name="f")], latency_seconds=0.4)
    alone = traced_efficiency(invocation, None)
    assert (alone["tool_call_count_v1"], alone["inference_call_count_v1"], alone["token_usage_v1"]) == (1.0, None, None)
    assert alone["duration_details"] == {
        "total_seconds": 0.4,
        "model_seconds": None,
        "tool_seconds": None,
        "framework_seconds": None,
    }
    assert traced_efficiency(None, None)["tool_call_count_v1"] is None  # tracing did not deliver the invocation


def span(span_id: str, parent: str | None, start_ms: int, end_ms: int, **attributes) -> SpanRecord:
    return SpanRecord("t" * 32, span_id, parent, span_id, 1, start_ms * MS, end_ms * MS, attributes=attributes)


def test_model_time_inside_a_tool_is_model_time_and_overlaps_count_once():
    """An agent-as-tool runs model calls inside its tool interval; parallel model calls overlap. Those calls are
    the tool's agent's own invocation: ADK counts neither them nor their tokens as the turn's."""
    root = span("root", None, 0, 1000, **{sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT})
    first = span("m1", "root", 0, 200, **{sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_USAGE_INPUT_TOKENS: 10})
    tool = span("tool", "root", 200, 700, **{sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL})
    inner_a = span("m2", "tool", 300, 500, **{sc.GEN_AI_OPERATION_NAME: sc.OP_GENERATE_CONTENT})
    inner_b = span("m3", "tool", 400, 600, **{sc.OPENINFERENCE_SPAN_KIND: "LLM", sc.OI_TOKEN_COUNT_COMPLETION: "7"})
    invocation = Invocation(
        invocation_id="root", session_id="s", tool_calls=[ToolCall(name="helper")], latency_seconds=1.0
    )
    figures = traced_efficiency(invocation, [root, first, tool, inner_a, inner_b])
    assert figures["inference_call_count_v1"] == 1.0
    assert figures["duration_details"] == {
        "total_seconds": 1.0,
        "model_seconds": pytest.approx(0.5),  # 0-200 and 300-600
        "tool_seconds": pytest.approx(0.2),  # 200-300 and 600-700
        "framework_seconds": 0.3,
    }
    tokens = figures["token_usage_details"]
    assert (tokens["input_tokens"], tokens["output_tokens"], tokens["total_tokens"]) == (10.0, None, 10.0)


def test_adk_1x_call_llm_spans_count_when_no_genai_model_span_exists():
    root = span("root", None, 0, 100)
    call = span("m", "root", 0, 50, **{sc.GEN_AI_USAGE_INPUT_TOKENS: 5})
    call.name = sc.ADK_CALL_LLM
    invocation = Invocation(invocation_id="root", session_id="s", latency_seconds=0.1)
    assert traced_efficiency(invocation, [root, call])["inference_call_count_v1"] == 1.0


def test_case_means_follow_adk():
    def turn(tokens: dict, seconds: float | None) -> dict:
        details: dict = dict.fromkeys(TokenUsageDetails.model_fields)
        details.update(tokens)
        duration: dict = dict.fromkeys(DurationDetails.model_fields)
        duration["total_seconds"] = seconds
        return {
            "tool_call_count_v1": 1.0,
            "inference_call_count_v1": None,
            "token_usage_v1": details["total_tokens"],
            "invocation_duration_v1": seconds,
            "token_usage_details": details,
            "duration_details": duration,
        }

    figures = case_efficiency(
        [turn({"total_tokens": 10.0, "reasoning_tokens": 4.0}, 1.0), turn({"total_tokens": 20.0}, None)]
    )
    assert figures["inference_call_count_v1"] is None
    assert figures["token_usage_details"]["reasoning_tokens"] == 2.0  # missing in one turn: 0 there
    assert figures["token_usage_details"]["cached_tokens"] is None  # missing everywhere: n/a
    assert figures["invocation_duration_v1"] == 1.0  # untimed turns are left out
