"""A real ADK agent (scripted ``BaseLlm``, no network) traced in-process: an agent transfer is one invocation in
ADK's default span format and in its legacy one (``invocation`` root, one ``invoke_agent`` per agent)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

import toolpath
from toolpath.store.store import Store

pytest.importorskip("google.adk")


def set_temperature(location: str, temperature: float) -> dict:
    """Set a room's thermostat."""
    return {"location": location, "target": temperature}


def scripted(steps: list[Any]) -> Any:
    from google.adk.models import BaseLlm, LlmResponse
    from google.genai import types

    replies = iter(steps)

    class ScriptedLlm(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[Any, None]:
            step = next(replies)
            if isinstance(step, str):
                parts = [types.Part(text=step)]
            else:
                parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in step]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    return ScriptedLlm(model="scripted")


def run_transfer(session_id: str) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    expert = LlmAgent(
        name="thermostat_expert",
        description="Sets thermostats.",
        model=scripted([[("set_temperature", {"location": "office", "temperature": 20.0})], "Office set to 20."]),
        tools=[set_temperature],
    )
    coordinator = LlmAgent(
        name="home",
        model=scripted([[("transfer_to_agent", {"agent_name": "thermostat_expert"})]]),
        sub_agents=[expert],
    )
    runner = InMemoryRunner(coordinator, app_name="home")

    async def turn() -> None:
        await runner.session_service.create_session(app_name="home", user_id="u", session_id=session_id)
        message = types.Content(role="user", parts=[types.Part(text="Set the office to 20 degrees.")])
        async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
            pass

    asyncio.run(turn())


@pytest.mark.parametrize("schema", ["2", "1"])
def test_an_agent_transfer_is_one_invocation(tracing, store_url, monkeypatch, schema):
    monkeypatch.setenv("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", schema)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    run_transfer(f"adk-schema-{schema}")
    toolpath.flush()
    [inv] = Store(store_url).get_session(f"adk-schema-{schema}").invocations
    assert (inv.agent_name, inv.prompt, inv.response) == ("home", "Set the office to 20 degrees.", "Office set to 20.")
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("transfer_to_agent", {"agent_name": "thermostat_expert"}, None),
        ("set_temperature", {"location": "office", "temperature": 20.0}, {"location": "office", "target": 20.0}),
    ]


def get_energy_price(hour: int) -> float:
    """Electricity price for an hour of tonight."""
    return {22: 0.19, 23: 0.12}[hour]


@pytest.mark.parametrize("schema", ["2", "1"])
def test_a_sub_agent_behind_an_agent_tool_belongs_to_the_outer_run(tracing, store_url, monkeypatch, schema):
    """An ``AgentTool`` runs its agent in a nested run (ADK 2.x: a nested ``invoke_workflow`` under the tool span)
    that ends before the outer one: its calls are the outer run's, in the model's order, not an invocation."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    monkeypatch.setenv("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", schema)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    advisor = LlmAgent(
        name="energy_advisor",
        description="Knows tonight's prices.",
        model=scripted([[("get_energy_price", {"hour": 22}), ("get_energy_price", {"hour": 23})], "23:00."]),
        tools=[get_energy_price],
    )
    home = LlmAgent(
        name="home",
        model=scripted([[("energy_advisor", {"request": "Cheapest hour?"})], "At 23:00."]),
        tools=[AgentTool(agent=advisor)],
    )
    runner = InMemoryRunner(home, app_name="home")
    session_id = f"adk-agent-tool-{schema}"

    async def turn() -> None:
        await runner.session_service.create_session(app_name="home", user_id="u", session_id=session_id)
        message = types.Content(role="user", parts=[types.Part(text="When is power cheapest?")])
        async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
            pass

    asyncio.run(turn())
    toolpath.flush()
    store = Store(store_url)
    [inv] = store.get_session(session_id).invocations
    assert (inv.agent_name, inv.prompt, inv.response) == ("home", "When is power cheapest?", "At 23:00.")
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("energy_advisor", {"request": "Cheapest hour?"}, "23:00."),
        ("get_energy_price", {"hour": 22}, 0.19),
        ("get_energy_price", {"hour": 23}, 0.12),
    ]
    assert store.counts()["invocations"] == 1
