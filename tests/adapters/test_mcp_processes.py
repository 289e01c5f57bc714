"""MCP tools in another process, traced on both sides, collected by a real ``toolpath collect`` over OTLP.

The weather server (tests/helpers/mcp_weather.py) runs as a subprocess on stdio, or on Streamable HTTP on
loopback; the callers are a plain ``mcp`` client, a LangGraph agent through ``langchain-mcp-adapters`` and an ADK
agent through ``MCPToolset``, each driven by a scripted model. Each run must be one trace and one invocation with
one step per call (arguments, result, error), nothing doubled, and the same trajectory as the same tools called in
process.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams, StreamableHTTPConnectionParams
from google.genai import types as genai_types
from langchain_core.tools import tool as lc_tool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import toolpath
from tests.helpers.adk_agent import ScriptedModel, answer, call, calls
from tests.helpers.collector import TOKEN, Collector
from tests.helpers.mcp_langgraph import run_langgraph
from tests.helpers.mcp_weather import ROOT, TOOLS, http_server, tracing_into
from toolpath.adapters import langchain as tp_langchain
from toolpath.adapters import mcp as tp_mcp
from toolpath.model import Invocation

CALLS = [("get_forecast", {"city": "Oslo"}), ("to_fahrenheit", {"celsius": 4.5}), ("get_forecast", {"city": "Mars"})]
EXPECTED = [
    ("get_forecast", {"city": "Oslo"}, {"city": "Oslo", "celsius": 4.5}, None),
    ("to_fahrenheit", {"celsius": 4.5}, 40.1, None),
    ("get_forecast", {"city": "Mars"}, None, "no station in Mars"),
]


@pytest.fixture
def traced(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """This process traces into the collector too; yields the environment of the server process."""
    with tracing_into(collector.url, TOKEN, monkeypatch, "agent", tp_mcp) as env:
        yield env


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tests.helpers.mcp_weather", "stdio"], env=env, cwd=str(ROOT)
    )


def collected(collector: Collector, steps: int, runs: int = 1, timeout: float = 60) -> list[Invocation]:
    """The collector's invocations once ``runs`` of them hold ``steps`` calls each and the server's span of every
    call over MCP has arrived (the server process exports on its own)."""
    toolpath.flush()
    store = collector.store()
    deadline = time.monotonic() + timeout
    found: list[Invocation] = []
    while time.monotonic() < deadline:
        found = store.list_invocations(limit=None)
        if len(found) >= runs and all(len(i.tool_calls) >= steps for i in found):
            served = sum(
                1
                for i in found
                for s in store.spans_of_trace(i.trace_id)
                if s.kind == 2 and s.resource.get("service.name") == "weather-mcp"
            )
            if served >= len(CALLS):  # one run went over MCP
                time.sleep(0.3)  # the rebuild its last span caused is written with it; read once more
                return store.list_invocations(limit=None)
        time.sleep(0.2)
    raise AssertionError(f"collector has {[(i.agent_name, len(i.tool_calls)) for i in found]}")


def steps(invocation: Invocation) -> list[tuple[str, Any, Any, str | None]]:
    return [(c.name, c.args, c.result, c.error) for c in invocation.tool_calls]


def assert_one_trace_framework_spans_enriched(collector: Collector, invocation: Invocation) -> None:
    """The server's spans are in the run's trace, one per call; the framework's execute_tool spans carry the MCP
    attributes and no second client span was made."""
    spans = collector.store().spans_of_trace(invocation.trace_id)
    served = [s.name for s in spans if s.resource.get("service.name") == "weather-mcp" and s.kind == 2]  # SERVER
    assert served == [f"tools/call {name}" for name, _ in CALLS]
    assert [s.name for s in spans if s.kind == 3 and s.name.startswith("tools/call")] == []  # 3: CLIENT
    enriched = [s for s in spans if s.attributes.get("mcp.method.name") == "tools/call" and s.kind != 2]
    assert len(enriched) == len(CALLS)


def comparable(invocation: Invocation) -> list[tuple[str, Any, Any, bool]]:
    """Name, arguments, the result of a call that succeeded, and whether it failed (the error's wording is each
    framework's own; ADK hands the model an ``{"error"}`` result of a failure its callback caught)."""
    return [(n, a, None if e else r, e is not None) for n, a, r, e in steps(invocation)]


def assert_trajectory(invocation: Invocation, expected: list[tuple[str, Any, Any, str | None]]) -> None:
    got = steps(invocation)
    assert [(n, a, r) for n, a, r, _ in got] == [(n, a, r) for n, a, r, _ in expected], got
    for (_, _, _, error), (_, _, _, wanted) in zip(got, expected, strict=True):
        assert (error is None) == (wanted is None) and (wanted is None or wanted in error), got


async def call_all(session: ClientSession) -> None:
    await session.initialize()
    for name, args in CALLS:
        await session.call_tool(name, args)


@toolpath.agent(name="plain")
async def plain_stdio(env: dict[str, str]) -> str:
    async with stdio_client(stdio_params(env)) as (read, write), ClientSession(read, write) as session:
        await call_all(session)
    return "done"


@toolpath.agent(name="plain")
async def plain_http(url: str) -> str:
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await call_all(session)
    return "done"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_plain_client_one_trace_one_step_per_call(transport: str, collector: Collector, traced: dict[str, str]) -> None:
    if transport == "stdio":
        anyio.run(plain_stdio, traced)
    else:
        with http_server(traced) as url:
            anyio.run(plain_http, url)
    [invocation] = collected(collector, len(CALLS))
    assert invocation.agent_name == "plain"
    assert_trajectory(invocation, EXPECTED)
    spans = collector.store().spans_of_trace(invocation.trace_id)
    served = [s for s in spans if s.resource.get("service.name") == "weather-mcp"]  # joined the caller's trace
    assert [s.name for s in served if s.kind == 2] == [f"tools/call {name}" for name, _ in CALLS]  # 2: SERVER
    sessions = {s.attributes.get("mcp.session.id") for s in served if s.kind == 2}
    if transport == "http":  # Streamable HTTP names its session; stdio has none
        assert len(sessions) == 1 and None not in sessions
        assert {s.attributes.get("network.transport") for s in served if s.kind == 2} == {"tcp"}
    else:
        assert sessions == {None}


# --- LangGraph through langchain-mcp-adapters -------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_langgraph_through_mcp_adapters_matches_in_process(
    transport: str, collector: Collector, traced: dict[str, str]
) -> None:
    tp_langchain.instrument()
    try:

        async def over_mcp(url: str | None) -> None:
            connection: dict[str, Any] = (
                {"transport": "streamable_http", "url": url}
                if url
                else {"transport": "stdio", "command": sys.executable, "cwd": str(ROOT),
                      "args": ["-m", "tests.helpers.mcp_weather", "stdio"], "env": traced}
            )  # fmt: skip
            client = MultiServerMCPClient({"weather": connection})
            async with client.session("weather") as session:
                await run_langgraph(await load_mcp_tools(session), "over-mcp")

        if transport == "stdio":
            anyio.run(over_mcp, None)
        else:
            with http_server(traced) as url:
                anyio.run(over_mcp, url)
        anyio.run(run_langgraph, [lc_tool(fn) for fn in TOOLS], "in-process")
    finally:
        tp_langchain.uninstrument()
    found = {i.session_id: i for i in collected(collector, len(CALLS), runs=2)}
    remote, local = found["over-mcp"], found["in-process"]
    assert_trajectory(remote, EXPECTED)
    assert comparable(remote) == comparable(local)
    assert_one_trace_framework_spans_enriched(collector, remote)
    assert [c.call_id for c in remote.tool_calls] == ["call_a", "call_b", "call_c"]


# --- ADK through MCPToolset --------------------------------------------------------------------------------

ADK_PROMPT = "Weather in Oslo and Mars?"


def adk_agent(tools: list[Any]) -> LlmAgent:
    model = ScriptedModel(
        turns={
            ADK_PROMPT: [
                calls(call("get_forecast", city="Oslo"), call("to_fahrenheit", celsius=4.5)),
                calls(call("get_forecast", city="Mars")),
                answer("Oslo is 40.1F; Mars has no station."),
            ]
        }
    )

    def tool_failed(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, Any]:
        return {"error": str(error)}  # ADK's way to hand the model a tool's failure instead of ending the run

    return LlmAgent(name="weather_adk", model=model, tools=tools, on_tool_error_callback=tool_failed)


async def run_adk(tools: list[Any], session_id: str) -> None:
    runner = Runner(app_name="weather", agent=adk_agent(tools), session_service=InMemorySessionService())
    await runner.session_service.create_session(app_name="weather", user_id="u", session_id=session_id)
    message = genai_types.Content(role="user", parts=[genai_types.Part(text=ADK_PROMPT)])
    async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
        pass
    for tool in tools:
        if isinstance(tool, McpToolset):
            await tool.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_adk_through_mcp_toolset_matches_in_process(
    transport: str, collector: Collector, traced: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

    def toolset(url: str | None) -> McpToolset:
        if url:
            return McpToolset(connection_params=StreamableHTTPConnectionParams(url=url, timeout=30))
        return McpToolset(connection_params=StdioConnectionParams(server_params=stdio_params(traced), timeout=30))

    if transport == "stdio":
        anyio.run(run_adk, [toolset(None)], "over-mcp")
    else:
        with http_server(traced) as url:
            anyio.run(run_adk, [toolset(url)], "over-mcp")
    anyio.run(run_adk, list(TOOLS), "in-process")
    found = {i.session_id: i for i in collected(collector, len(CALLS), runs=2)}
    remote, local = found["over-mcp"], found["in-process"]
    assert_trajectory(remote, EXPECTED)
    assert comparable(remote) == comparable(local)
    assert_one_trace_framework_spans_enriched(collector, remote)
    assert all(c.agent_name == "weather_adk" for c in remote.tool_calls)
