"""toolpath.adapters.mcp on the real ``mcp`` SDK: a client session and a FastMCP / low-level server connected in
memory, spans by the OpenTelemetry MCP conventions, the context carried in ``params._meta``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_connected_server_and_client_session
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import toolpath
from toolpath.adapters import mcp as tp_mcp
from toolpath.tracer import semconv as sc
from toolpath.tracer import spans


@pytest.fixture
def instrumented(app_spans: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    tp_mcp.instrument()
    yield app_spans
    tp_mcp.uninstrument()


def weather_app() -> FastMCP:
    app = FastMCP("weather")

    @app.tool()
    def forecast(city: str) -> dict[str, Any]:
        """The forecast of a city."""
        return {"city": city, "temp": 21}

    @app.tool()
    def add_one(n: int) -> int:
        return n + 1

    @app.tool()
    def fail(city: str) -> str:
        raise ValueError(f"no station in {city}")

    return app


def run(app_server: Any, *calls: tuple[str, dict[str, Any]], meta: dict[str, Any] | None = None) -> list[Any]:
    results: list[Any] = []

    async def main() -> None:
        async with create_connected_server_and_client_session(app_server) as session:
            for name, args in calls:
                results.append(await session.call_tool(name, args, meta=meta))

    anyio.run(main)
    return results


def by_kind(exported: InMemorySpanExporter, kind: SpanKind, name_prefix: str = "tools/call") -> list[Any]:
    return [s for s in exported.get_finished_spans() if s.kind is kind and s.name.startswith(name_prefix)]


def test_fastmcp_call_is_a_client_span_with_the_server_span_its_child(instrumented: InMemorySpanExporter) -> None:
    results = run(weather_app()._mcp_server, ("forecast", {"city": "Oslo"}), ("add_one", {"n": 1}))
    assert [r.isError for r in results] == [False, False]
    clients, servers = by_kind(instrumented, SpanKind.CLIENT), by_kind(instrumented, SpanKind.SERVER)
    assert [s.name for s in clients] == ["tools/call forecast", "tools/call add_one"]
    assert [s.name for s in servers] == ["tools/call forecast", "tools/call add_one"]
    for client, server in zip(clients, servers, strict=True):
        assert server.parent is not None and server.parent.span_id == client.context.span_id
        assert server.context.trace_id == client.context.trace_id
        for span in (client, server):
            attrs = span.attributes
            assert attrs[sc.MCP_METHOD_NAME] == "tools/call"
            assert attrs[sc.GEN_AI_OPERATION_NAME] == "execute_tool"
            assert attrs[sc.JSONRPC_REQUEST_ID] == client.attributes[sc.JSONRPC_REQUEST_ID]
    assert json.loads(clients[0].attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"city": "Oslo"}
    assert json.loads(clients[0].attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == {"city": "Oslo", "temp": 21}
    # FastMCP wraps a value that is no object as {"result": 2}; the span holds the value the tool returned
    assert json.loads(servers[1].attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == 2
    assert json.loads(clients[1].attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == 2


def test_is_error_result_is_a_tool_error_on_both_sides(instrumented: InMemorySpanExporter) -> None:
    [result] = run(weather_app()._mcp_server, ("fail", {"city": "Atlantis"}))
    assert result.isError
    for span in by_kind(instrumented, SpanKind.CLIENT) + by_kind(instrumented, SpanKind.SERVER):
        assert span.attributes[sc.ERROR_TYPE] == "tool_error"
        assert span.status.status_code is StatusCode.ERROR
        assert "no station in Atlantis" in (span.status.description or "")
        assert sc.GEN_AI_TOOL_CALL_RESULT not in span.attributes


def test_low_level_server_and_callers_meta_kept(instrumented: InMemorySpanExporter) -> None:
    server: Server[Any, Any] = Server("low")
    seen_meta: list[dict[str, Any]] = []

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name="echo", inputSchema={"type": "object"})]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        meta = server.request_context.meta
        seen_meta.append(meta.model_dump() if meta else {})
        return [types.TextContent(type="text", text=f"echo {arguments['text']}")]

    [result] = run(server, ("echo", {"text": "hi", "password": "hunter2"}), meta={"app.example/user": "u1"})
    assert result.content[0].text == "echo hi"
    [client], [srv] = by_kind(instrumented, SpanKind.CLIENT), by_kind(instrumented, SpanKind.SERVER)
    assert srv.parent is not None and srv.parent.span_id == client.context.span_id
    assert seen_meta[0]["app.example/user"] == "u1"  # the caller's own _meta goes through beside the context
    assert seen_meta[0]["traceparent"].split("-")[2] == format(client.context.span_id, "016x")
    assert json.loads(srv.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == "echo hi"
    for span in (client, srv):  # arguments go through the content policy's redaction on both sides
        assert "hunter2" not in span.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
        assert json.loads(span.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])["text"] == "hi"


def test_a_framework_tool_span_is_enriched_not_doubled(instrumented: InMemorySpanExporter) -> None:
    static = spans.tool_static_attributes("weather_forecast", None)

    async def main() -> None:
        async with create_connected_server_and_client_session(weather_app()._mcp_server) as session:
            span, token = spans.start_tool_span("execute_tool weather_forecast", static, {"city": "Rome"}, "call_1")
            result = await session.call_tool("forecast", {"city": "Rome"})
            spans.end_tool_span(span, token, {"framework": "saw this"})
            assert not result.isError

    anyio.run(main)
    assert by_kind(instrumented, SpanKind.CLIENT) == []
    [framework] = [s for s in instrumented.get_finished_spans() if s.name == "execute_tool weather_forecast"]
    [server] = by_kind(instrumented, SpanKind.SERVER)
    assert framework.attributes[sc.MCP_METHOD_NAME] == "tools/call"
    assert sc.JSONRPC_REQUEST_ID in framework.attributes
    assert json.loads(framework.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == {"framework": "saw this"}
    assert server.parent is not None and server.parent.span_id == framework.context.span_id


def test_a_span_named_for_the_tool_before_its_attributes_is_enriched(instrumented: InMemorySpanExporter) -> None:
    """ADK starts ``execute_tool {tool}`` bare and sets its attributes when the tool returns."""
    tracer = trace.get_tracer("adk-like")

    async def main() -> None:
        async with create_connected_server_and_client_session(weather_app()._mcp_server) as session:
            with tracer.start_as_current_span("execute_tool forecast"):
                await session.call_tool("forecast", {"city": "Rome"})
            with tracer.start_as_current_span("execute_tool (merged)"):  # ADK's summary span is no call of it
                await session.call_tool("forecast", {"city": "Oslo"})

    anyio.run(main)
    [client] = by_kind(instrumented, SpanKind.CLIENT)
    assert json.loads(client.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"city": "Oslo"}
    [adk_like] = [s for s in instrumented.get_finished_spans() if s.name == "execute_tool forecast"]
    assert adk_like.attributes[sc.MCP_METHOD_NAME] == "tools/call"


def test_a_broken_tracer_never_breaks_the_session(
    instrumented: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer down")

    monkeypatch.setattr("toolpath.tracer.mcp_spans.start_client_call", broken)
    monkeypatch.setattr("toolpath.tracer.mcp_spans.start_server_call", broken)
    [result] = run(weather_app()._mcp_server, ("forecast", {"city": "Lima"}))
    assert json.loads(result.content[0].text) == {"city": "Lima", "temp": 21}
    assert by_kind(instrumented, SpanKind.CLIENT) == by_kind(instrumented, SpanKind.SERVER) == []


def test_list_tools_is_a_light_span_and_uninstrument_restores(instrumented: InMemorySpanExporter) -> None:
    async def main() -> None:
        async with create_connected_server_and_client_session(weather_app()._mcp_server) as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == {"forecast", "add_one", "fail"}

    anyio.run(main)
    [listing] = by_kind(instrumented, SpanKind.CLIENT, "tools/list")
    assert listing.attributes[sc.MCP_METHOD_NAME] == "tools/list"
    assert sc.GEN_AI_OPERATION_NAME not in listing.attributes
    tp_mcp.uninstrument()
    instrumented.clear()
    run(weather_app()._mcp_server, ("forecast", {"city": "Oslo"}))
    assert instrumented.get_finished_spans() == ()
    assert trace.get_current_span().is_recording() is False


def test_an_sdk_without_the_methods_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server.lowlevel.server import Server as LowLevel

    from toolpath.errors import ConfigError

    monkeypatch.delattr(LowLevel, "_handle_request")
    with pytest.raises(ConfigError, match=re.escape("supports the mcp SDK 1.x: Server._handle_request is not there")):
        tp_mcp.instrument()
    assert not tp_mcp.is_instrumented()
    from mcp.client.session import ClientSession

    assert not hasattr(ClientSession.call_tool, "__wrapped__")  # what was patched first is put back


def test_langgraph_mcp_tools_rebuild_without_the_mcp_adapter(tracing: Any, store_url: str) -> None:
    """Only toolpath's LangChain handler: an MCP tool's ToolMessage (text blocks, the structured result in its
    artifact, a failure as ``status="error"``) still gives the tool's value and its error."""
    from langchain_mcp_adapters.tools import load_mcp_tools

    from tests.helpers.mcp_langgraph import run_langgraph
    from tests.helpers.mcp_weather import build_app
    from toolpath.adapters import langchain as tp_langchain
    from toolpath.store.store import Store

    async def main() -> None:
        async with create_connected_server_and_client_session(build_app()._mcp_server) as session:
            await run_langgraph(await load_mcp_tools(session), "plain-langchain")

    tp_langchain.instrument()
    try:
        anyio.run(main)
    finally:
        tp_langchain.uninstrument()
    toolpath.flush()
    [invocation] = Store(store_url).list_invocations(limit=None)
    got = [(c.name, c.args, c.result, c.error) for c in invocation.tool_calls]
    assert got[:2] == [
        ("get_forecast", {"city": "Oslo"}, {"city": "Oslo", "celsius": 4.5}, None),
        ("to_fahrenheit", {"celsius": 4.5}, 40.1, None),
    ]
    assert got[2][:3] == ("get_forecast", {"city": "Mars"}, None)
    assert "no station in Mars" in (got[2][3] or "")
