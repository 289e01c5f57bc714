"""Live recordings of OpenLLMetry's and OpenInference's MCP instrumentations (tests/fixtures/spans/recorders/
record_mcp.py): a LangGraph agent calling an MCP server over stdio through langchain-mcp-adapters, instrumented on
both sides. OpenLLMetry's LangChain ``execute_tool`` spans and its MCP ``{tool}.tool`` spans record each call twice;
OpenInference's TOOL spans hold LangChain's ToolMessage (content blocks, the structured result in its artifact, a
handled failure as ``status: error``). Either way the rebuild has one step per call with what the tool received
and returned, in the model's order."""

from __future__ import annotations

import json
import random

import pytest

from tests.helpers import SPANS
from toolpath.collector.otlp import decode
from toolpath.collector.reconstruct import build_invocations
from toolpath.tracer import semconv as sc

SOURCES = ["openllmetry-mcp", "openinference-mcp"]


def recorded(source: str, kind: str) -> list:
    body = (SPANS / f"{source}.scenarios.otlp.{kind}").read_bytes()
    return decode(body, "application/x-protobuf" if kind == "pb" else "application/json")


def test_the_openllmetry_recording_records_each_call_twice() -> None:
    spans = recorded("openllmetry-mcp", "pb")
    mcp_tool_spans = [
        s for s in spans if s.attributes.get(sc.TRACELOOP_SPAN_KIND) == "tool" and s.name.endswith(".tool")
    ]
    assert len(mcp_tool_spans) == 3
    assert {s.resource.get("service.name") for s in spans} == {"weather-agent", "weather-mcp"}


@pytest.mark.parametrize("kind", ["pb", "json"])
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("source", SOURCES)
def test_each_call_is_one_step_with_what_the_tools_received(source: str, kind: str, seed: int) -> None:
    want = json.loads((SPANS / f"{source}.scenarios.expected.json").read_text(encoding="utf-8"))
    spans = recorded(source, kind)
    random.Random(seed).shuffle(spans)
    invocations = sorted(build_invocations(spans), key=lambda i: i.started_at)
    assert [i.trace_id for i in invocations] == [w["trace_id"] for w in want["invocations"]]
    for got, turn in zip(invocations, want["invocations"], strict=True):
        assert (got.session_id, got.agent_name) == (want["session_id"], want["agent_name"])
        assert (got.prompt, got.response) == (turn["prompt"], turn["response"])
        rebuilt = [(c.name, c.args, None if c.error else c.result, bool(c.error)) for c in got.tool_calls]
        truth = [(c["name"], c["args"], None if c["error"] else c["result"], c["error"]) for c in turn["tool_calls"]]
        assert rebuilt == truth
        for call, true_call in zip(got.tool_calls, turn["tool_calls"], strict=True):
            assert not true_call["error"] or true_call["result"] in (call.error or "")
