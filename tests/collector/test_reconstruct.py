"""Decoded spans of every real peer instrumentation rebuild to their ground truth, in any arrival order: the GenAI
semantic-conventions dump (official OTel LangChain instrumentation), OpenInference, OpenLLMetry and ADK."""

from __future__ import annotations

import json
import random

import pytest

from tests.helpers import SPANS
from tests.helpers.builders import load_spans
from toolpath.collector.reconstruct import build_invocations


def test_otel_genai_langchain_rebuilds_to_ground_truth():
    expected = json.loads((SPANS / "otel-genai-langchain.shared.expected.json").read_text())
    spans = load_spans("otel-genai-langchain")
    random.Random(5).shuffle(spans)  # arrival order must not matter
    invocations = sorted(build_invocations(spans), key=lambda i: i.started_at)
    assert len(invocations) == len(expected["invocations"]) == 2
    for got, want in zip(invocations, expected["invocations"], strict=True):
        assert got.trace_id == want["trace_id"]
        assert (got.prompt, got.response) == (want["prompt"], want["response"])
        assert got.session_id == "home-session-0001"
        assert [(c.name, c.args, c.result if not c.error else None, bool(c.error)) for c in got.tool_calls] == [
            (c["name"], c["args"], c["result"] if not c["error"] else None, c["error"]) for c in want["tool_calls"]
        ]
    failing = invocations[1].tool_calls[-1]
    assert (failing.name, failing.error) == ("set_temperature", "ValueError: No thermostat found in location 'garage'")


FULL_CONTENT = ["adk-v1", "adk-v2", "openinference-langchain", "openllmetry-langchain", "otel-genai-langchain"]


def rebuilt(source: str, seed: int):
    spans = load_spans(source)
    random.Random(seed).shuffle(spans)  # arrival order must not matter
    return sorted(build_invocations(spans), key=lambda i: i.started_at)


@pytest.mark.parametrize("source", FULL_CONTENT)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_peer_rebuilds_to_its_ground_truth(source, seed):
    expected = json.loads((SPANS / f"{source}.shared.expected.json").read_text())["invocations"]
    invocations = rebuilt(source, seed)
    assert len(invocations) == len(expected) == 2
    for got, want in zip(invocations, expected, strict=True):
        assert got.trace_id == want["trace_id"]
        assert (got.agent_name, got.session_id) == ("smart_home_assistant", "home-session-0001")
        assert (got.prompt, got.response) == (want["prompt"], want["response"])
        assert [(c.name, c.args, bool(c.error)) for c in got.tool_calls] == [
            (c["name"], c["args"], c["error"]) for c in want["tool_calls"]
        ]
        assert [c.result for c in got.tool_calls if not c.error] == [
            c["result"] for c in want["tool_calls"] if not c["error"]
        ]
    [failing] = [c for c in invocations[1].tool_calls if c.error]
    assert "No thermostat found in location 'garage'" in failing.error


def test_adk_without_content_keeps_what_is_recoverable():
    expected = json.loads((SPANS / "adk-v2-nocontent.shared.expected.json").read_text())["invocations"]
    invocations = rebuilt("adk-v2-nocontent", 3)
    for got, want in zip(invocations, expected, strict=True):
        assert [(c.name, bool(c.error)) for c in got.tool_calls] == [
            (c["name"], c["error"]) for c in want["tool_calls"]
        ]
        assert all(c.call_id and c.call_id.startswith("adk-") for c in got.tool_calls)
        assert got.session_id == "home-session-0001" and got.prompt is None and got.response is None


def test_an_end_before_the_start_is_an_unknown_latency_not_a_negative_one():
    from toolpath.store.spanrecord import SpanRecord
    from toolpath.tracer import semconv as sc

    root = SpanRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None,
        name="invoke_agent bot",
        kind=1,
        start_time=2_000_000_000,
        end_time=1_000_000_000,  # a clock that went backwards
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "bot"},
    )
    (invocation,) = build_invocations([root])
    assert invocation.latency_seconds is None
    assert invocation.failure == 0
