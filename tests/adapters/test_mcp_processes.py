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
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

import toolpath
from tests.helpers.collector import TOKEN, Collector
from tests.helpers.mcp_weather import ROOT, http_server, otlp_env, server_env
from toolpath.adapters import mcp as tp_mcp
from toolpath.model import Invocation

CALLS = [("get_forecast", {"city": "Oslo"}), ("to_fahrenheit", {"celsius": 4.5}), ("get_forecast", {"city": "Mars"})]
EXPECTED = [
    ("get_forecast", {"city": "Oslo"}, {"city": "Oslo", "celsius": 4.5}, None),
    ("to_fahrenheit", {"celsius": 4.5}, 40.1, None),
    ("get_forecast", {"city": "Mars"}, None, "no station in Mars"),
]


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    started = Collector(tmp_path).start()
    yield started
    started.stop()


@pytest.fixture
def traced(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """This process traces into the collector too; yields the environment of the server process."""
    for key, value in otlp_env(collector.url, TOKEN).items():
        monkeypatch.setenv(key, value)
    toolpath.shutdown()
    toolpath.init(store=False, service_name="agent")
    tp_mcp.instrument()
    yield server_env(collector.url, TOKEN)
    tp_mcp.uninstrument()
    toolpath.shutdown()


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tests.helpers.mcp_weather", "stdio"], env=env, cwd=str(ROOT)
    )


def collected(collector: Collector, steps: int, runs: int = 1, timeout: float = 60) -> list[Invocation]:
    """The collector's invocations once ``runs`` of them hold ``steps`` calls each and no span is still coming."""
    toolpath.flush()
    store = collector.store()
    deadline = time.monotonic() + timeout
    found: list[Invocation] = []
    while time.monotonic() < deadline:
        found = store.list_invocations(limit=None)
        if len(found) >= runs and all(len(i.tool_calls) >= steps for i in found):
            time.sleep(0.5)  # a late span would rebuild the run: read it again once more
            return store.list_invocations(limit=None)
        time.sleep(0.2)
    raise AssertionError(f"collector has {[(i.agent_name, len(i.tool_calls)) for i in found]}")


def steps(invocation: Invocation) -> list[tuple[str, Any, Any, str | None]]:
    return [(c.name, c.args, c.result, c.error) for c in invocation.tool_calls]


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
    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
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
