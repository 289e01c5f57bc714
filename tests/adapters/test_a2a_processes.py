"""An ADK agent calling a remote ADK agent over A2A (a2a-sdk on loopback, the remote in a process of its own),
both traced by toolpath and exporting to a real ``toolpath collect``: one trace, one invocation, each agent's
calls attributed to it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.remote_a2a_agent import AGENT_CARD_WELL_KNOWN_PATH, RemoteA2aAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.agent_tool import AgentTool
from google.genai import types as genai_types

import toolpath
from tests.helpers.a2a_remote import REMOTE_NAME, remote_agent
from tests.helpers.adk_agent import ScriptedModel, answer, call, calls
from tests.helpers.collector import TOKEN, Collector
from tests.helpers.mcp_weather import to_fahrenheit, tracing_into
from toolpath.adapters import a2a as tp_a2a
from toolpath.tracer import semconv as sc

PROMPT = "How warm is Oslo in Fahrenheit?"


@pytest.fixture
def traced(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    with tracing_into(collector.url, TOKEN, monkeypatch, "planner", tp_a2a) as env:
        yield env


async def run_planner(remote_url: str) -> None:
    remote = RemoteA2aAgent(name=REMOTE_NAME, agent_card=remote_url + AGENT_CARD_WELL_KNOWN_PATH)
    model = ScriptedModel(
        turns={
            PROMPT: [
                calls(call(REMOTE_NAME, request="Oslo")),
                calls(call("to_fahrenheit", celsius=4.5)),
                answer("Oslo is 40.1F."),
            ]
        }
    )
    planner = LlmAgent(name="planner", model=model, tools=[AgentTool(agent=remote), to_fahrenheit])
    runner = Runner(app_name="trip", agent=planner, session_service=InMemorySessionService())
    await runner.session_service.create_session(app_name="trip", user_id="u", session_id="trip-1")
    message = genai_types.Content(role="user", parts=[genai_types.Part(text=PROMPT)])
    async for _ in runner.run_async(user_id="u", session_id="trip-1", new_message=message):
        pass


def test_remote_agent_over_a2a_is_part_of_the_callers_invocation(collector: Collector, traced: dict[str, str]) -> None:
    with remote_agent(traced) as url:
        anyio.run(run_planner, url)
        toolpath.flush()
        store = collector.store()
        found: list[Any] = []
        for _ in range(150):  # the remote's spans come from its own exporter
            found = store.list_invocations(limit=None)
            if found and any(c.name == "get_forecast" for c in found[0].tool_calls):
                break
            anyio.run(anyio.sleep, 0.2)
    anyio.run(anyio.sleep, 1.0)
    found = store.list_invocations(limit=None)
    assert len(found) == 1, [(i.agent_name, [c.name for c in i.tool_calls]) for i in found]
    [invocation] = found
    assert invocation.agent_name == "planner" and invocation.session_id == "trip-1"
    got = [(c.name, c.args, c.agent_name) for c in invocation.tool_calls]
    assert got == [
        (REMOTE_NAME, {"request": "Oslo"}, "planner"),
        ("get_forecast", {"city": "Oslo"}, REMOTE_NAME),
        ("to_fahrenheit", {"celsius": 4.5}, "planner"),
    ]
    assert invocation.tool_calls[1].result == {"city": "Oslo", "celsius": 4.5}
    spans = store.spans_of_trace(invocation.trace_id)
    [server] = [s for s in spans if s.name == "a2a.server"]
    [client] = [s for s in spans if s.name == "a2a.client"]
    assert server.parent_span_id == client.span_id
    assert server.resource.get("service.name") == REMOTE_NAME
    assert server.attributes[sc.A2A_TASK_ID] and server.attributes[sc.GEN_AI_CONVERSATION_ID]
