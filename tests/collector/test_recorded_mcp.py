"""A live recording of OpenLLMetry's MCP instrumentation (tests/fixtures/spans/recorders/record_mcp.py): a LangGraph
agent calling an MCP server over stdio, OpenLLMetry on both sides. Its LangChain ``execute_tool`` spans and its MCP
``{tool}.tool`` spans record each call twice; the rebuild has one step per call, in the model's order."""

from __future__ import annotations

import json
import random

import pytest

from tests.helpers import SPANS
from toolpath.collector.otlp import decode
from toolpath.collector.reconstruct import build_invocations
from toolpath.tracer import semconv as sc

SOURCE = "openllmetry-mcp"


def recorded(kind: str) -> list:
    body = (SPANS / f"{SOURCE}.scenarios.otlp.{kind}").read_bytes()
    return decode(body, "application/x-protobuf" if kind == "pb" else "application/json")


@pytest.mark.parametrize("kind", ["pb", "json"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_call_is_one_step_with_what_the_tools_received(kind: str, seed: int) -> None:
    want = json.loads((SPANS / f"{SOURCE}.scenarios.expected.json").read_text(encoding="utf-8"))
    spans = recorded(kind)
    mcp_tool_spans = [
        s for s in spans if s.attributes.get(sc.TRACELOOP_SPAN_KIND) == "tool" and s.name.endswith(".tool")
    ]
    assert len(mcp_tool_spans) == 3  # the recording does hold the second record of every call
    assert {s.resource.get("service.name") for s in spans} == {"weather-agent", "weather-mcp"}
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
