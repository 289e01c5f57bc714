"""@toolpath.tool and @toolpath.agent: spans, attributes, errors, nesting, content policy."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import toolpath
from tests.helpers.builders import spans_by_name
from toolpath.tracer import semconv as sc


@toolpath.tool
def get_weather(city: str, unit: str = "C") -> dict:
    """Current weather for a city.

    Longer text that is not part of the description."""
    return {"city": city, "unit": unit, "temp": 21}


@toolpath.tool(name="lookup_user", description="Find a user by id.")
async def find_user(user_id: int, *, verbose: bool = False) -> dict:
    await asyncio.sleep(0)
    return {"id": user_id, "name": "Ada"}


class Boom(RuntimeError):
    pass


@toolpath.tool
def explode(reason: str) -> None:
    raise Boom(reason)


class TestTool:
    def test_sync_tool_span(self, tracing, app_spans):
        assert get_weather("Paris", unit="F") == {"city": "Paris", "unit": "F", "temp": 21}
        span = spans_by_name(app_spans)["execute_tool get_weather"]
        attrs = span.attributes
        assert span.kind == trace.SpanKind.INTERNAL
        assert attrs[sc.GEN_AI_OPERATION_NAME] == "execute_tool"
        assert attrs[sc.GEN_AI_TOOL_NAME] == "get_weather"
        assert attrs[sc.GEN_AI_TOOL_TYPE] == "function"
        assert attrs[sc.GEN_AI_TOOL_DESCRIPTION] == "Current weather for a city."
        assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"city": "Paris", "unit": "F"}
        assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_RESULT]) == {"city": "Paris", "unit": "F", "temp": 21}
        assert attrs[sc.GEN_AI_TOOL_CALL_ID].startswith("call_")

    def test_defaults_are_not_invented(self, tracing, app_spans):
        get_weather("Oslo")
        args = json.loads(
            spans_by_name(app_spans)["execute_tool get_weather"].attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
        )
        assert args == {"city": "Oslo"}

    def test_call_ids_are_unique(self, tracing, app_spans):
        get_weather("a")
        get_weather("b")
        ids = {s.attributes[sc.GEN_AI_TOOL_CALL_ID] for s in app_spans.get_finished_spans()}
        assert len(ids) == 2

    async def test_async_tool_with_name_and_description(self, tracing, app_spans):
        assert await find_user(7, verbose=True) == {"id": 7, "name": "Ada"}
        span = spans_by_name(app_spans)["execute_tool lookup_user"]
        assert span.attributes[sc.GEN_AI_TOOL_DESCRIPTION] == "Find a user by id."
        assert json.loads(span.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"user_id": 7, "verbose": True}
        assert find_user.__name__ == "find_user"
        assert asyncio.iscoroutinefunction(find_user)

    def test_exception_propagates_unchanged_and_is_recorded(self, tracing, app_spans):
        with pytest.raises(Boom, match="no fuel") as info:
            explode("no fuel")
        assert type(info.value) is Boom
        span = spans_by_name(app_spans)["execute_tool explode"]
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes[sc.ERROR_TYPE] == "Boom"
        events = [e for e in span.events if e.name == "exception"]
        assert events and events[0].attributes["exception.message"] == "no fuel"
        assert sc.GEN_AI_TOOL_CALL_RESULT not in span.attributes

    def test_spans_inside_a_tool_nest_under_it(self, tracing, app_spans):
        inner_tracer = trace.get_tracer("user.code")

        @toolpath.tool
        def outer(n: int) -> int:
            with inner_tracer.start_as_current_span("db.query"):
                return get_weather("x")["temp"] + n

        outer(1)
        spans = spans_by_name(app_spans)
        tool_span = spans["execute_tool outer"]
        assert spans["db.query"].parent.span_id == tool_span.context.span_id
        assert spans["execute_tool get_weather"].parent.span_id == spans["db.query"].context.span_id
        assert len({s.context.trace_id for s in spans.values()}) == 1

    def test_methods_drop_self_and_var_kwargs_flatten(self, tracing, app_spans):
        class Home:
            @toolpath.tool
            def set_lights(self, room: str, *levels: int, **options: str) -> str:
                return room

        Home().set_lights("hall", 10, 20, mode="warm")
        args = json.loads(spans_by_name(app_spans)["execute_tool set_lights"].attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
        assert args == {"room": "hall", "levels": [10, 20], "mode": "warm"}

    def test_unserialisable_values_are_recorded_not_fatal(self, tracing, app_spans):
        @toolpath.tool
        def odd(obj: object) -> object:
            return {1, 2}

        assert odd(object()) == {1, 2}
        attrs = spans_by_name(app_spans)["execute_tool odd"].attributes
        assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_RESULT]) == [1, 2]
        assert "object object" in json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS])["obj"]

    def test_works_untraced_before_init(self, app_spans):
        toolpath.shutdown()
        assert get_weather("Rome")["city"] == "Rome"


@toolpath.agent(name="weather_bot")
def weather_bot(prompt: str) -> str:
    return f"It is {get_weather('Paris')['temp']} degrees."


@toolpath.agent
async def async_bot(question: str, session_id: str | None = None) -> dict:
    user = await find_user(1)
    return {"response": f"hello {user['name']} ({session_id})", "predicted_trajectory": []}


class TestAgent:
    def test_agent_span_with_prompt_response_and_child_tools(self, tracing, app_spans):
        assert weather_bot("Weather?", session_id="s-9") == "It is 21 degrees."
        spans = spans_by_name(app_spans)
        agent_span = spans["invoke_agent weather_bot"]
        attrs = agent_span.attributes
        assert attrs[sc.GEN_AI_OPERATION_NAME] == "invoke_agent"
        assert attrs[sc.GEN_AI_AGENT_NAME] == "weather_bot"
        assert attrs[sc.GEN_AI_CONVERSATION_ID] == "s-9"
        assert json.loads(attrs[sc.GEN_AI_INPUT_MESSAGES]) == [
            {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}
        ]
        output = json.loads(attrs[sc.GEN_AI_OUTPUT_MESSAGES])
        assert output[0]["role"] == "assistant" and output[0]["parts"][0]["content"] == "It is 21 degrees."
        assert spans["execute_tool get_weather"].parent.span_id == agent_span.context.span_id

    async def test_async_agent_gets_session_id_when_it_accepts_it(self, tracing, app_spans):
        result = await async_bot("hi", session_id="s-1")
        assert result["response"] == "hello Ada (s-1)"
        span = spans_by_name(app_spans)["invoke_agent async_bot"]
        assert span.attributes[sc.GEN_AI_CONVERSATION_ID] == "s-1"
        assert "hello Ada" in span.attributes[sc.GEN_AI_OUTPUT_MESSAGES]

    def test_agent_exception_propagates(self, tracing, app_spans):
        @toolpath.agent(name="broken")
        def broken(prompt: str) -> str:
            raise KeyError(prompt)

        with pytest.raises(KeyError):
            broken("x")
        span = spans_by_name(app_spans)["invoke_agent broken"]
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes[sc.ERROR_TYPE] == "KeyError"
