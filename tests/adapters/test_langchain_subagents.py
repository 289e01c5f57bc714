"""A LangGraph supervisor and its two sub-agents (``create_react_agent(..., name=...)``), traced by toolpath's own
LangChain handler: each sub-agent's run is an ``invoke_agent`` span, so every stored call names the sub-agent
that made it, and the turn who answered it — called as tools or added as nodes, with scripted models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent

import toolpath
from tests.helpers.cli import run_cli
from toolpath.adapters import langchain as tp_langchain


class ScriptedModel(GenericFakeChatModel):
    """Replays scripted messages; binding tools returns the model itself."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


def calling(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


@tool
def lookup_order(order: int) -> str:
    """Find an order."""
    return f"order {order}: a kettle, paid"


@tool
def refund(order: int) -> str:
    """Refund an order."""
    return f"order {order} refunded"


@tool
def track(order: int) -> str:
    """Track an order's parcel."""
    return f"order {order} is in Lyon"


def billing_agent() -> Any:
    script = [calling("refund", {"order": 7}, "call_refund"), AIMessage(content="Order 7 is refunded.")]
    return create_react_agent(ScriptedModel(messages=iter(script)), tools=[refund], name="billing_agent")


def shipping_agent() -> Any:
    script = [calling("track", {"order": 7}, "call_track"), AIMessage(content="Order 7 is in Lyon.")]
    return create_react_agent(ScriptedModel(messages=iter(script)), tools=[track], name="shipping_agent")


def supervisor_calling_sub_agents_as_tools() -> Any:
    billing, shipping = billing_agent(), shipping_agent()

    @tool
    def ask_billing(request: str) -> str:
        """Ask the billing agent."""
        return billing.invoke({"messages": [("user", request)]})["messages"][-1].content

    @tool
    def ask_shipping(request: str) -> str:
        """Ask the shipping agent."""
        return shipping.invoke({"messages": [("user", request)]})["messages"][-1].content

    script = [
        calling("lookup_order", {"order": 7}, "call_lookup"),
        calling("ask_billing", {"request": "Refund order 7"}, "call_billing"),
        calling("ask_shipping", {"request": "Where is order 7?"}, "call_shipping"),
        AIMessage(content="Refunded; the parcel is in Lyon."),
    ]
    tools = [lookup_order, ask_billing, ask_shipping]
    return create_react_agent(ScriptedModel(messages=iter(script)), tools=tools, name="supervisor")


def supervisor_with_sub_agents_as_nodes() -> Any:
    """A router that looks the order up, then the two sub-agents in turn; the last answers."""
    router = create_react_agent(
        ScriptedModel(messages=iter([calling("lookup_order", {"order": 7}, "call_lookup"), AIMessage(content="")])),
        tools=[lookup_order],
        name="router",
    )
    graph = StateGraph(MessagesState)
    for node in (router, billing_agent(), shipping_agent()):
        graph.add_node(node)
    graph.add_edge(START, "router")
    graph.add_edge("router", "billing_agent")
    graph.add_edge("billing_agent", "shipping_agent")
    graph.add_edge("shipping_agent", END)
    return graph.compile(name="supervisor")


@pytest.fixture
def instrumented(tracing):
    tp_langchain.instrument()
    yield tracing
    tp_langchain.uninstrument()


def shown_turn(tmp_path, store_url: str, session: str) -> dict[str, Any]:
    toolpath.flush()
    shown = run_cli(tmp_path, "sessions", "show", session, "--json", "--store", store_url)
    (turn,) = json.loads(shown.stdout)["invocations"]
    return turn


def test_sub_agents_called_as_tools_make_their_own_calls(instrumented, app_spans, store_url, tmp_path):
    supervisor_calling_sub_agents_as_tools().invoke(
        {"messages": [("user", "Refund order 7 and tell me where it is")]},
        config={"configurable": {"thread_id": "orders-1"}},
    )
    agents = {
        s.attributes["gen_ai.agent.name"]: s
        for s in app_spans.get_finished_spans()
        if s.name.startswith("invoke_agent")
    }
    assert set(agents) == {"supervisor", "billing_agent", "shipping_agent"}
    tools = {
        s.attributes["gen_ai.tool.name"]: s for s in app_spans.get_finished_spans() if s.name.startswith("execute_tool")
    }
    # the sub-agent's run sits under the tool that called it, and encloses its own calls
    assert agents["billing_agent"].parent.span_id == tools["ask_billing"].context.span_id
    assert tools["refund"].parent.span_id == agents["billing_agent"].context.span_id
    assert agents["billing_agent"].start_time <= tools["refund"].start_time
    assert json.loads(agents["billing_agent"].attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == (
        "Order 7 is refunded."
    )

    turn = shown_turn(tmp_path, store_url, "orders-1")
    assert (turn["agent_name"], turn["answered_by"]) == ("supervisor", "supervisor")
    assert [(c["name"], c["agent_name"]) for c in turn["tool_calls"]] == [
        ("lookup_order", "supervisor"),
        ("ask_billing", "supervisor"),
        ("refund", "billing_agent"),
        ("ask_shipping", "supervisor"),
        ("track", "shipping_agent"),
    ]


def test_sub_agents_added_as_nodes_make_their_own_calls_and_answer(instrumented, store_url, tmp_path):
    supervisor_with_sub_agents_as_nodes().invoke(
        {"messages": [("user", "Refund order 7 and tell me where it is")]},
        config={"configurable": {"thread_id": "orders-2"}},
    )
    turn = shown_turn(tmp_path, store_url, "orders-2")
    assert turn["agent_name"] == "supervisor"
    assert turn["answered_by"] == "shipping_agent"
    assert turn["response"] == "Order 7 is in Lyon."
    assert [(c["name"], c["agent_name"]) for c in turn["tool_calls"]] == [
        ("lookup_order", "router"),
        ("refund", "billing_agent"),
        ("track", "shipping_agent"),
    ]


def test_an_unnamed_graph_inside_a_run_is_no_sub_agent(instrumented, store_url, tmp_path, app_spans):
    inner = StateGraph(MessagesState)
    inner.add_node("tools", lambda state: {"messages": []})
    inner.add_edge(START, "tools")
    graph = StateGraph(MessagesState)
    graph.add_node("inner", inner.compile())
    graph.add_edge(START, "inner")
    graph.compile(name="outer").invoke({"messages": [("user", "hi")]})
    names = [s.name for s in app_spans.get_finished_spans()]
    assert names == ["invoke_agent outer"]
