"""Reconstruction of calls that cross a process boundary, from spans built here: an MCP span folds into the tool
span of the same call and only that one, OpenLLMetry's MCP tool spans are read, a CallToolResult is the tool's
value, and an A2A server span attributes the remote agent's calls."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

from toolpath.collector.reconstruct import build_invocations
from toolpath.store.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.tracer import semconv as sc

TRACE = "ab" * 16
SERVER, CLIENT, INTERNAL = 2, 3, 1


def span(span_id: int, parent: int | None, name: str, start: int, kind: int = INTERNAL, **attrs: Any) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=f"{span_id:016x}",
        parent_span_id=None if parent is None else f"{parent:016x}",
        name=name,
        kind=kind,
        start_time=start,
        end_time=start + 100,
        attributes=attrs,
    )


def agent(span_id: int, parent: int | None, name: str, start: int) -> SpanRecord:
    return span(span_id, parent, f"invoke_agent {name}", start, **{sc.GEN_AI_OPERATION_NAME: "invoke_agent",
                                                                    sc.GEN_AI_AGENT_NAME: name})  # fmt: skip


def tool(span_id: int, parent: int, name: str, start: int, kind: int = INTERNAL, **attrs: Any) -> SpanRecord:
    base = {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: name}
    return span(span_id, parent, f"execute_tool {name}", start, kind, **base, **attrs)


def mcp(span_id: int, parent: int, name: str, start: int, kind: int, **attrs: Any) -> SpanRecord:
    base = {sc.MCP_METHOD_NAME: "tools/call", sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: name}
    return span(span_id, parent, f"tools/call {name}", start, kind, **base, **attrs)


def calls(spans: list[SpanRecord]) -> list[tuple[str, Any, Any, str | None, str | None]]:
    [invocation] = build_invocations(spans)
    return [(c.name, c.args, c.result, c.error, c.agent_name) for c in invocation.tool_calls]


def test_framework_client_and_server_spans_are_one_step() -> None:
    blocks = json.dumps([{"type": "text", "text": '{"celsius": 4.5}', "id": "lc_1"}])
    spans = [
        agent(1, None, "bot", 0),
        tool(2, 1, "weather_get_forecast", 10, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Oslo"}',
                                                 sc.GEN_AI_TOOL_CALL_RESULT: blocks, sc.GEN_AI_TOOL_CALL_ID: "c1"}),
        mcp(3, 2, "get_forecast", 11, CLIENT, **{sc.GEN_AI_TOOL_CALL_RESULT: '{"celsius":4.5}'}),
        mcp(4, 3, "get_forecast", 12, SERVER, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Oslo"}',
                                                  sc.GEN_AI_TOOL_CALL_RESULT: '{"celsius":4.5}'}),
    ]  # fmt: skip
    assert calls(spans) == [("weather_get_forecast", {"city": "Oslo"}, {"celsius": 4.5}, None, "bot")]


def test_a_tool_calling_another_tool_in_process_stays_two_calls_and_no_fold_crosses_an_agent() -> None:
    spans = [
        agent(1, None, "boss", 0),
        tool(2, 1, "plan", 10, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: "{}"}),
        tool(3, 2, "plan", 11, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: "{}"}),  # no MCP span: two calls
        tool(4, 1, "ask_helper", 20, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: "{}"}),
        agent(5, 4, "helper", 21),
        mcp(6, 5, "ask_helper", 22, CLIENT, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"q":1}'}),  # under another agent
    ]
    got = calls(spans)
    assert [(n, a) for n, _, _, _, a in got] == [("plan", "boss"), ("plan", "boss"), ("ask_helper", "boss"),
                                                 ("ask_helper", "helper")]  # fmt: skip


def test_is_error_from_the_server_span_or_a_call_tool_result() -> None:
    adk_result = {"content": [{"type": "text", "text": "no station in Mars"}], "isError": True}
    spans = [
        agent(1, None, "bot", 0),
        tool(2, 1, "get_forecast", 10, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Mars"}'}),
        span(3, 2, "tools/call get_forecast", 11, SERVER, **{sc.MCP_METHOD_NAME: "tools/call",
             sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "get_forecast",
             sc.ERROR_TYPE: "tool_error"}),
        tool(4, 1, "get_forecast", 20, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Lima"}',
                                          sc.GEN_AI_TOOL_CALL_RESULT: json.dumps(adk_result)}),
        tool(5, 1, "get_forecast", 30, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Oslo"}',
             sc.GEN_AI_TOOL_CALL_RESULT: json.dumps({"content": [{"type": "text", "text": "4"}],
                                                     "structuredContent": {"result": 4}, "isError": False})}),
    ]  # fmt: skip
    spans[2] = dataclasses.replace(spans[2], status_code=STATUS_ERROR, status_message="no station")
    got = calls(spans)
    assert got[0][2:4] == (None, "tool_error: no station")
    assert got[1][2:4] == (None, "tool_error: no station in Mars")
    assert got[2][2:4] == (4, None)


def test_openllmetry_mcp_tool_spans_are_read() -> None:
    traceloop = {sc.TRACELOOP_SPAN_KIND: "tool", sc.TRACELOOP_ENTITY_NAME: "get_forecast",
                 sc.TRACELOOP_ENTITY_INPUT: json.dumps({"tool_name": "get_forecast", "arguments": {"city": "Oslo"}})}  # fmt: skip
    spans = [
        agent(1, None, "bot", 0),
        span(2, 1, "get_forecast.tool", 10, **traceloop,
             **{sc.TRACELOOP_ENTITY_OUTPUT: json.dumps({"result": '{"celsius": 4.5}'})}),
        span(3, 2, "get_forecast.tool", 11, **traceloop,
             **{sc.TRACELOOP_ENTITY_OUTPUT: json.dumps([{"type": "text", "content": '{"celsius": 4.5}'}])}),
        span(4, 1, "mcp.server", 20, **{sc.TRACELOOP_SPAN_KIND: "server"}),
    ]  # fmt: skip
    assert calls(spans) == [("get_forecast", {"city": "Oslo"}, {"celsius": 4.5}, None, "bot")]


def test_an_a2a_server_span_attributes_the_remote_agents_calls() -> None:
    spans = [
        agent(1, None, "planner", 0),
        tool(2, 1, "to_fahrenheit", 5, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"celsius":4.5}'}),
        span(3, 1, "a2a.client", 10, CLIENT, **{sc.A2A_METHOD_NAME: "SendMessage"}),
        span(4, 3, "a2a.server", 11, SERVER, **{sc.A2A_METHOD_NAME: "SendMessage", sc.GEN_AI_AGENT_NAME: "forecaster"}),
        tool(5, 4, "get_forecast", 12, **{sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city":"Oslo"}'}),
    ]
    [invocation] = build_invocations(spans)
    assert invocation.agent_name == "planner"
    assert [(c.name, c.agent_name) for c in invocation.tool_calls] == [("to_fahrenheit", "planner"),
                                                                        ("get_forecast", "forecaster")]  # fmt: skip


def test_importing_the_adapters_loads_neither_sdk() -> None:
    code = (
        "import sys, toolpath.adapters.mcp, toolpath.adapters.a2a\n"
        "print(','.join(m for m in ('mcp', 'a2a', 'opentelemetry.sdk', 'sqlalchemy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_a_server_tool_span_of_another_process_is_the_same_call() -> None:
    """OpenInference's MCP instrumentation only carries the context: the server's own TOOL span (another resource)
    lands under the caller's TOOL span of the same tool."""
    oi = {
        sc.OPENINFERENCE_SPAN_KIND: "TOOL",
        sc.OI_TOOL_NAME: "get_forecast",
        sc.OI_INPUT_MIME_TYPE: "application/json",
    }
    outer = span(2, 1, "get_forecast", 10, **oi, **{sc.OI_INPUT_VALUE: '{"city": "Oslo"}',
                                                   sc.OI_OUTPUT_VALUE: '[{"type": "text", "text": "4.5"}]'})  # fmt: skip
    inner = span(3, 2, "get_forecast", 11, **oi, **{sc.OI_INPUT_VALUE: '{"city": "Oslo"}', sc.OI_OUTPUT_VALUE: "4.5"})
    root = span(1, None, "LangGraph", 0, **{sc.OPENINFERENCE_SPAN_KIND: "CHAIN"})
    same_process = [root, outer, inner]
    assert len(calls(same_process)) == 2  # in one process, a tool calling its namesake: two calls
    served = dataclasses.replace(inner, resource={"service.name": "weather-mcp"})
    assert calls([root, outer, served]) == [("get_forecast", {"city": "Oslo"}, 4.5, None, "LangGraph")]
