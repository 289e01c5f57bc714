"""A LangGraph agent for the MCP tests: a scripted chat model that asks for get_forecast(Oslo) and
to_fahrenheit(4.5) in one turn, then get_forecast(Mars) (a station that does not exist), then answers."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.prebuilt import ToolNode, create_react_agent


class ScriptedChat(BaseChatModel):
    """Asks for get_forecast(Oslo) and to_fahrenheit(4.5) in one turn, then get_forecast(Mars), then answers."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        rounds = sum(1 for m in messages if isinstance(m, AIMessage))
        script = [
            AIMessage(content="", tool_calls=[
                {"name": "get_forecast", "args": {"city": "Oslo"}, "id": "call_a"},
                {"name": "to_fahrenheit", "args": {"celsius": 4.5}, "id": "call_b"},
            ]),
            AIMessage(content="", tool_calls=[{"name": "get_forecast", "args": {"city": "Mars"}, "id": "call_c"}]),
            AIMessage(content="Oslo is 40.1F; Mars has no station."),
        ]  # fmt: skip
        return ChatResult(generations=[ChatGeneration(message=script[min(rounds, 2)])])

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


async def run_langgraph(tools: list[Any], thread: str) -> None:
    graph = create_react_agent(ScriptedChat(), ToolNode(tools, handle_tool_errors=True), name="weather_graph")
    await graph.ainvoke({"messages": [("user", "Weather in Oslo and Mars?")]}, {"configurable": {"thread_id": thread}})
