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
