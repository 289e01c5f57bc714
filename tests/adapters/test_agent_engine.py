"""Agent Engine-style apps: query / stream_query / async variants, traced and rebuilt."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.agents import AgentAction
from langchain_core.load import dumpd
from langchain_core.tools import tool

import toolpath
from tests.helpers import adk_agent
from toolpath.adapters.agent_engine import instrument_app, trajectory_from_steps
from toolpath.store.store import Store


@tool
def dim_light(device_id: str, brightness: int) -> str:
    """Dim a light."""
    return f"{device_id} at {brightness}%"


class LangchainTemplateApp:
    """Like Vertex's LangChain template: query(input=..., config=...) returning input/output."""

    def __init__(self) -> None:
        self.ready = False

    def set_up(self) -> None:
        self.ready = True

    def register_operations(self) -> dict[str, list[str]]:
        return {"": ["query"], "stream": ["stream_query"]}

    def query(self, *, input: str, config: dict | None = None) -> dict[str, Any]:
        assert self.ready
        observation = dim_light.invoke({"device_id": "light-hall", "brightness": 30}, config=config)
        return {"input": input, "output": f"Done: {observation}."}


class UntracedToolsApp:
    """Returns intermediate_steps in dumpd form; its tools make no spans."""

    def query(self, *, input: str) -> dict[str, Any]:
        action = AgentAction(tool="lock_door", tool_input={"door_id": "door-back"}, log="")
        return {"input": input, "output": "Locked.", "intermediate_steps": dumpd([(action, "locked")])}


class AdkStyleApp:
    """Streams ADK-style events with function_call / function_response parts."""

    name = "adk_home"

    def stream_query(self, *, message: str, user_id: str, session_id: str | None = None) -> Any:
        yield {
            "author": "adk_home",
            "content": {"parts": [{"function_call": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
        }
        yield {
            "author": "adk_home",
            "content": {"parts": [{"function_response": {"name": "get_weather", "response": {"t": -3}}}]},
        }
        yield {"author": "adk_home", "content": {"parts": [{"text": "It is -3 °C in Oslo."}]}}

    async def async_stream_query(self, *, message: str, user_id: str, session_id: str | None = None) -> Any:
        for event in self.stream_query(message=message, user_id=user_id, session_id=session_id):
            yield event

    async def async_query(self, *, input: str, session_id: str | None = None) -> dict[str, Any]:
        if input == "boom":
            raise RuntimeError("backend down")
        return {"output": f"echo {input}"}


def stored(store_url: str, session_id: str):
    toolpath.flush()
    return Store(store_url).get_session(session_id).invocations


def test_langchain_template_gets_the_handler_and_keeps_its_operations(tracing, store_url, app_spans):
    app = instrument_app(LangchainTemplateApp())
    app.set_up()
    assert app.register_operations() == {"": ["query"], "stream": ["stream_query"]}
    result = app.query(input="Dim the hall light", config={"configurable": {"thread_id": "ae-1"}})
    assert result["output"] == "Done: light-hall at 30%."
    [inv] = stored(store_url, "ae-1")
    assert (inv.agent_name, inv.prompt, inv.response) == (
        "LangchainTemplateApp",
        "Dim the hall light",
        "Done: light-hall at 30%.",
    )
    assert [(c.name, c.args) for c in inv.tool_calls] == [("dim_light", {"device_id": "light-hall", "brightness": 30})]
    assert instrument_app(app) is app  # idempotent: no double wrapping
    app.query(input="again", config={"configurable": {"thread_id": "ae-1b"}})
    assert sum(s.name == "execute_tool dim_light" for s in app_spans.get_finished_spans()) == 2


def test_trajectory_from_intermediate_steps_when_tools_are_untraced(tracing, store_url):
    app = instrument_app(UntracedToolsApp())
    app.query(input="Lock the back door")
    toolpath.flush()
    [inv] = Store(store_url).list_invocations(agent_name="UntracedToolsApp")
    assert inv.response == "Locked."
    assert inv.predicted_trajectory == [{"tool_name": "lock_door", "tool_input": {"door_id": "door-back"}}]


def test_stream_is_traced_until_exhausted(tracing, store_url):
    app = instrument_app(AdkStyleApp())
    events = list(app.stream_query(message="Weather in Oslo?", user_id="u1", session_id="adk-1"))
    assert len(events) == 3
    [inv] = stored(store_url, "adk-1")
    assert (inv.agent_name, inv.prompt, inv.response) == ("adk_home", "Weather in Oslo?", "It is -3 °C in Oslo.")
    assert inv.predicted_trajectory == [{"tool_name": "get_weather", "tool_input": {"city": "Oslo"}}]


def test_stream_closed_early_still_ends_the_span(tracing, store_url):
    app = instrument_app(AdkStyleApp())
    stream = app.stream_query(message="Weather?", user_id="u1", session_id="adk-2")
    next(stream)
    stream.close()
    [inv] = stored(store_url, "adk-2")
    assert inv.predicted_trajectory == [{"tool_name": "get_weather", "tool_input": {"city": "Oslo"}}]
    assert inv.response is None and inv.failure == 0


async def test_async_stream_and_async_query(tracing, store_url):
    app = instrument_app(AdkStyleApp())
    events = [e async for e in app.async_stream_query(message="Weather?", user_id="u1", session_id="adk-3")]
    assert len(events) == 3
    assert await app.async_query(input="hi", session_id="adk-4") == {"output": "echo hi"}
    with pytest.raises(RuntimeError, match="backend down"):
        await app.async_query(input="boom", session_id="adk-5")
    assert stored(store_url, "adk-3")[0].response == "It is -3 °C in Oslo."
    assert stored(store_url, "adk-4")[0].response == "echo hi"
    [failed] = stored(store_url, "adk-5")
    assert failed.failure == 1 and failed.error == "RuntimeError: backend down"


def test_steps_as_plain_objects_and_string_inputs():
    steps = [(AgentAction(tool="search", tool_input="cats", log=""), "found")]
    assert trajectory_from_steps(steps) == [{"tool_name": "search", "tool_input": {"input": "cats"}}]


def test_not_an_app():
    with pytest.raises(TypeError, match="has none of query"):
        instrument_app(object())


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_adk_app_stream_keeps_its_trajectory_over_adks_content_less_spans(
    tracing, store_url, monkeypatch, asynchronous
):
    """A real ADK agent behind an AdkApp-style stream: ADK 2.x's own tool spans (under the app's agent span) carry
    no arguments by default; the stream's events do, and the final answer's two text parts are joined as ADK
    joins them."""
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    adk_agent.RECEIVED.clear()
    app = instrument_app(adk_agent.StreamingAdkApp(adk_agent.build_home_agent()))
    session = app.create_session(user_id="ana", state={"home": "flat 7"})["id"]
    query = {"message": adk_agent.STATUS, "user_id": "ana", "session_id": session}
    events = [e async for e in app.async_stream_query(**query)] if asynchronous else list(app.stream_query(**query))
    assert len(events) == 3
    [inv] = stored(store_url, session)
    assert inv.response == "The hall light is on at 80%.\nThe living room is at 20.5 °C."
    assert [(c.name, c.args, c.call_id) for c in inv.tool_calls] == [
        (r["name"], r["args"], r["id"]) for r in adk_agent.RECEIVED
    ]
    assert len(inv.tool_calls) == 2 and inv.tool_calls[1].result["celsius"] == 20.5
    assert inv.intermediate_responses == [("home", "Let me look.")]
    assert inv.attributes["toolpath.content_missing"] is True  # ADK's spans were there, without arguments
    spans = Store(store_url).spans_of_trace(inv.trace_id)
    adk_tools = [s for s in spans if s.scope == "gcp.vertex.agent" and s.name.startswith("execute_tool get_device")]
    assert len(adk_tools) == 2 and all("gen_ai.tool.call.arguments" not in s.attributes for s in adk_tools)
