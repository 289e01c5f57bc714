"""The LangChain handler with real LangChain tools and a real LangGraph agent driven by fake chat models."""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode, create_react_agent
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import toolpath
from toolpath.adapters import langchain as tp_langchain
from toolpath.store.store import Store


class ScriptedModel(GenericFakeChatModel):
    """Replays scripted messages; binding tools returns the model itself."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


class RoomModel(BaseChatModel):
    """Deterministic: a user message ``... <room>`` asks for get_temp(room); a tool result gets a final answer."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        if last.type == "human":
            room = str(last.content).split()[-1]
            message = AIMessage(
                content="", tool_calls=[{"name": "get_temp", "args": {"room": room}, "id": f"call_{room}"}]
            )
        else:
            message = AIMessage(content=f"It is {last.content} degrees.")
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "room-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RoomModel:
        return self


@tool
def get_temp(room: str) -> float:
    """Read a room's thermostat."""
    with trace.get_tracer("inside.tool").start_as_current_span("thermostat.read"):
        return 20.0 + len(room) / 10


@tool
def set_temp(room: str, temperature: float) -> str:
    """Set a room's thermostat."""
    if room == "garage":
        raise ValueError("garage has no thermostat")
    return f"{room} set to {temperature}"


@tool
async def async_lookup(city: str) -> dict:
    """Look up the weather (async)."""
    await asyncio.sleep(0)
    return {"city": city, "sky": "clear"}


def scripted_agent(name: str = "home") -> Any:
    script = [
        AIMessage(
            content="",
            tool_calls=[{"name": "get_temp", "args": {"room": "living"}, "id": "call_1"}],
            usage_metadata={"input_tokens": 180, "output_tokens": 22, "total_tokens": 202},
        ),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "set_temp", "args": {"room": "living", "temperature": 21.5}, "id": "call_2"},
                {"name": "set_temp", "args": {"room": "garage", "temperature": 16.5}, "id": "call_3"},
            ],
        ),
        AIMessage(content="The living room is at 21.5; the garage has no thermostat."),
    ]
    tools = ToolNode([get_temp, set_temp, async_lookup], handle_tool_errors=True)
    return create_react_agent(
        ScriptedModel(messages=iter(script)), tools=tools, checkpointer=InMemorySaver(), name=name
    )


@pytest.fixture
def instrumented(tracing):
    tp_langchain.instrument()
    yield tracing
    tp_langchain.uninstrument()


def by_name(exporter) -> dict[str, list]:
    found: dict[str, list] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


class TestLangGraphAgent:
    def test_span_tree_and_stored_invocation(self, instrumented, app_spans, store_url):
        result = scripted_agent().invoke(
            {"messages": [("user", "Warm the living room and the garage")]},
            config={"configurable": {"thread_id": "home-1"}},
        )
        assert result["messages"][-1].content.startswith("The living room is at 21.5")
        spans = by_name(app_spans)
        [agent] = spans["invoke_agent home"]
        attrs = agent.attributes
        assert attrs["gen_ai.conversation.id"] == "home-1"
        assert (
            json.loads(attrs["gen_ai.input.messages"])[0]["parts"][0]["content"]
            == "Warm the living room and the garage"
        )
        tools = spans["execute_tool get_temp"] + spans["execute_tool set_temp"]
        assert {t.parent.span_id for t in tools} == {agent.context.span_id}
        failing = next(t for t in tools if t.attributes["gen_ai.tool.call.id"] == "call_3")
        assert failing.status.status_code is StatusCode.ERROR
        assert failing.attributes["error.type"] == "ValueError"
        [first_chat, *_] = spans["chat ScriptedModel"]
        assert first_chat.kind is trace.SpanKind.CLIENT
        assert (
            first_chat.attributes["gen_ai.usage.input_tokens"],
            first_chat.attributes["gen_ai.usage.output_tokens"],
        ) == (180, 22)
        # spans made inside a tool nest under its span
        [inner] = spans["thermostat.read"]
        assert inner.parent.span_id == spans["execute_tool get_temp"][0].context.span_id

        toolpath.flush()
        [inv] = Store(store_url).get_session("home-1").invocations
        assert inv.agent_name == "home"
        assert inv.response == "The living room is at 21.5; the garage has no thermostat."
        assert [(c.name, c.args, c.call_id) for c in inv.tool_calls] == [
            ("get_temp", {"room": "living"}, "call_1"),
            ("set_temp", {"room": "living", "temperature": 21.5}, "call_2"),
            ("set_temp", {"room": "garage", "temperature": 16.5}, "call_3"),
        ]
        assert inv.tool_calls[0].result == pytest.approx(20.6)
        assert inv.tool_calls[2].error == "ValueError: garage has no thermostat"
        assert inv.failure == 0

    def test_streaming_is_traced_until_exhausted(self, instrumented, app_spans):
        chunks = list(
            scripted_agent("streamer").stream(
                {"messages": [("user", "go")]}, config={"configurable": {"thread_id": "st"}}
            )
        )
        assert chunks
        spans = by_name(app_spans)
        assert len(spans["invoke_agent streamer"]) == 1
        assert len(spans["execute_tool set_temp"]) == 2

    async def test_async_agent_and_async_tool(self, instrumented, app_spans):
        model = ScriptedModel(
            messages=iter(
                [
                    AIMessage(
                        content="", tool_calls=[{"name": "async_lookup", "args": {"city": "Oslo"}, "id": "call_a"}]
                    ),
                    AIMessage(content="Clear in Oslo."),
                ]
            )
        )
        agent = create_react_agent(model, tools=[async_lookup], name="weather")
        result = await agent.ainvoke({"messages": [("user", "Weather in Oslo?")]})
        assert result["messages"][-1].content == "Clear in Oslo."
        spans = by_name(app_spans)
        [tool_span] = spans["execute_tool async_lookup"]
        assert json.loads(tool_span.attributes["gen_ai.tool.call.result"]) == {"city": "Oslo", "sky": "clear"}
        assert tool_span.parent.span_id == spans["invoke_agent weather"][0].context.span_id


class TestInstrumentation:
    def test_uninstrument_really_removes_it(self, tracing, app_spans):
        tp_langchain.instrument()
        assert tp_langchain.is_instrumented()
        tp_langchain.uninstrument()
        get_temp.invoke({"room": "x"})
        assert not any(s.name.startswith("execute_tool") for s in app_spans.get_finished_spans())
        tp_langchain.instrument()
        get_temp.invoke({"room": "x"})
        tp_langchain.uninstrument()
        assert len(by_name(app_spans)["execute_tool get_temp"]) == 1

    def test_handler_in_config_without_instrument(self, tracing, app_spans):
        handler = tp_langchain.ToolpathCallbackHandler()
        set_temp.invoke({"room": "hall", "temperature": 19}, config={"callbacks": [handler]})
        [span] = by_name(app_spans)["execute_tool set_temp"]
        assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {"room": "hall", "temperature": 19}

    def test_no_duplicate_spans_when_instrumented_and_passed(self, instrumented, app_spans):
        get_temp.invoke({"room": "x"}, config={"callbacks": [tp_langchain.ToolpathCallbackHandler()]})
        assert len(by_name(app_spans)["execute_tool get_temp"]) == 1

    def test_plain_tool_error_propagates_with_error_span(self, instrumented, app_spans):
        with pytest.raises(ValueError, match="garage"):
            set_temp.invoke({"room": "garage", "temperature": 1})
        [span] = by_name(app_spans)["execute_tool set_temp"]
        assert span.status.status_code is StatusCode.ERROR


@tool
def sign_in(user: str, password: str, note: str) -> dict:
    """Sign a user in."""
    return {"user": user, "token": "t0k3n-secret-value", "echo": note}


def test_tool_values_and_messages_are_redacted_and_bounded(store_url, app_spans):
    """The handler's short paths (a few plain fields, a one-string prompt) keep redaction and the value bound: a
    password key and an e-mail address are replaced, a value past ``max_value_length`` is cut with a marker and
    named in ``toolpath.truncated``, in the arguments, the result and the agent's prompt alike."""
    toolpath.init(store=store_url, max_value_length=200)
    long_note = "n" * 500
    outer = RunnableLambda(lambda _: sign_in.invoke({"user": "bob@example.com", "password": "hunter2", "note": "hi"}))
    handler = tp_langchain.ToolpathCallbackHandler()
    outer.invoke("sign me in, I am bob@example.com", config={"callbacks": [handler]})
    sign_in.invoke({"user": "ann", "password": "pw", "note": long_note}, config={"callbacks": [handler]})
    first, second = by_name(app_spans)["execute_tool sign_in"]
    assert json.loads(first.attributes["gen_ai.tool.call.arguments"]) == {
        "user": "[REDACTED]",
        "password": "[REDACTED]",
        "note": "hi",
    }
    assert json.loads(first.attributes["gen_ai.tool.call.result"])["token"] == "[REDACTED]"
    assert "toolpath.truncated" not in first.attributes
    [agent] = by_name(app_spans)["invoke_agent RunnableLambda"]
    prompt = json.loads(agent.attributes["gen_ai.input.messages"])
    assert prompt[0]["parts"][0]["content"] == "sign me in, I am [REDACTED]"
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
        text = second.attributes[key]
        assert "pw" not in text and long_note not in text and "truncated" in text[200:]
        assert len(text) < 260
    assert set(second.attributes["toolpath.truncated"]) == {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}


class TestConcurrency:
    N = 50

    def check(self, app_spans, store_url, prefix: str) -> None:
        spans = app_spans.get_finished_spans()
        agents = [s for s in spans if s.name == "invoke_agent concurrent"]
        assert len(agents) == self.N
        assert len({a.context.trace_id for a in agents}) == self.N
        agent_ids = {a.context.span_id for a in agents}
        tools = [s for s in spans if s.name == "execute_tool get_temp"]
        assert len(tools) == self.N and all(t.parent.span_id in agent_ids for t in tools)
        toolpath.flush()
        store = Store(store_url)
        for i in range(self.N):
            [inv] = store.get_session(f"{prefix}-{i}").invocations
            assert [(c.name, c.args, c.call_id) for c in inv.tool_calls] == [
                ("get_temp", {"room": f"{prefix}{i}"}, f"call_{prefix}{i}")
            ]

    def test_fifty_runs_in_eight_threads(self, instrumented, app_spans, store_url, caplog):
        agent = create_react_agent(RoomModel(), tools=[get_temp], name="concurrent")

        def one(i: int) -> str:
            config = {"configurable": {"thread_id": f"t-{i}"}}
            return agent.invoke({"messages": [("user", f"temperature in t{i}")]}, config=config)["messages"][-1].content

        with caplog.at_level(logging.ERROR), ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(one, range(self.N)))
        assert all(a.startswith("It is") for a in answers)
        self.check(app_spans, store_url, "t")
        assert "different Context" not in caplog.text and "Failed to detach" not in caplog.text

    async def test_fifty_runs_in_asyncio(self, instrumented, app_spans, store_url, caplog):
        agent = create_react_agent(RoomModel(), tools=[get_temp], name="concurrent")

        async def one(i: int) -> Any:
            config = {"configurable": {"thread_id": f"a-{i}"}}
            return await agent.ainvoke({"messages": [("user", f"temperature in a{i}")]}, config=config)

        with caplog.at_level(logging.ERROR):
            await asyncio.gather(*(one(i) for i in range(self.N)))
        self.check(app_spans, store_url, "a")
        assert "different Context" not in caplog.text and "Failed to detach" not in caplog.text


class ParallelModel(BaseChatModel):
    """A user message ``... <key>`` asks, in one message, for four readings in a fixed, per-run order; the tool
    results get a final answer."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        if last.type == "human":
            key = str(last.content).split()[-1]
            calls = [
                {"name": name, "args": {"room": f"{key}-{room}"}, "id": f"call_{key}_{n}"}
                for n, (name, room) in enumerate(parallel_plan(key))
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "parallel-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ParallelModel:
        return self


def parallel_plan(key: str) -> list[tuple[str, str]]:
    """Four calls in an order that depends on the run: the model's order is not alphabetical, nor the same twice."""
    plan = [("get_temp", "kitchen"), ("get_humidity", "attic"), ("get_temp", "attic"), ("get_humidity", "hall")]
    shift = sum(map(ord, key)) % 4
    return plan[shift:] + plan[:shift]


@tool
def get_humidity(room: str) -> float:
    """Read a room's humidity."""
    return 40.0 + len(room)


def test_fifty_concurrent_langgraph_runs_keep_the_models_order_of_parallel_calls(instrumented, store_url):
    """LangGraph's ToolNode runs the calls of one model message concurrently, so they start in thread order; the
    stored trajectory is the model's order every time."""
    agent = create_react_agent(ParallelModel(), tools=[get_temp, get_humidity], name="parallel")

    def one(i: int) -> Any:
        config = {"configurable": {"thread_id": f"p-{i}"}}
        return agent.invoke({"messages": [("user", f"readings for p{i}")]}, config=config)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(50)))
    toolpath.flush()
    store = Store(store_url)
    started_out_of_order = 0
    for i in range(50):
        [inv] = store.get_session(f"p-{i}").invocations
        want = [
            (name, {"room": f"p{i}-{room}"}, f"call_p{i}_{n}") for n, (name, room) in enumerate(parallel_plan(f"p{i}"))
        ]
        assert [(c.name, c.args, c.call_id) for c in inv.tool_calls] == want
        by_start = sorted(inv.tool_calls, key=lambda c: c.start_time or 0)
        started_out_of_order += [c.call_id for c in by_start] != [c for *_, c in want]
    assert started_out_of_order > 0  # the runs really did start their calls out of the model's order


class TestRunner:
    def test_evaluate_a_langgraph_agent_traces_its_tools(self, tracing, store_url):
        agent = create_react_agent(RoomModel(), tools=[get_temp], name="rooms")
        rows = [
            {
                "prompt": "temperature in kitchen",
                "reference_trajectory": [{"tool_name": "get_temp", "tool_input": {"room": "kitchen"}}],
            },
            {
                "prompt": "temperature in hall",
                "reference_trajectory": [{"tool_name": "get_temp", "tool_input": {"room": "attic"}}],
            },
        ]
        result = toolpath.evaluate(rows, ["trajectory_exact_match"], runnable=agent)
        assert [r["trajectory_exact_match/score"] for r in result.metrics_table] == [1.0, 0.0]
        assert result.metrics_table[0]["response"] == "It is 20.7 degrees."
        # the calls as the agent made them: with their result, id and the agent that made them
        assert result.metrics_table[0]["predicted_trajectory"] == [
            {"tool_name": "get_temp", "tool_input": {"room": "kitchen"}, "tool_output": 20.7, "id": "call_kitchen",
             "agent_name": "rooms"}
        ]  # fmt: skip


def test_the_chat_span_records_the_requested_calls_and_without_content_only_their_ids(store_url, app_spans):
    agent = create_react_agent(ParallelModel(), tools=[get_temp, get_humidity], name="parallel")
    for capture in (True, False):
        toolpath.shutdown()
        app_spans.clear()
        toolpath.init(store=store_url, capture_content=capture)
        tp_langchain.instrument()
        try:
            agent.invoke({"messages": [("user", "readings for q")]}, config={"configurable": {"thread_id": "q"}})
        finally:
            tp_langchain.uninstrument()
        chat = next(
            s
            for s in app_spans.get_finished_spans()
            if s.name.startswith("chat ") and s.attributes.get("gen_ai.output.messages")
        )
        [message] = json.loads(chat.attributes["gen_ai.output.messages"])
        want = [
            {"type": "tool_call", "id": f"call_q_{n}", "name": name} for n, (name, _) in enumerate(parallel_plan("q"))
        ]
        if capture:
            want = [
                {**part, "arguments": {"room": f"q-{room}"}}
                for part, (_, room) in zip(want, parallel_plan("q"), strict=True)
            ]
        assert message["parts"] == want
