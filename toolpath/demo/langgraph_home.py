"""The smart-home agent again, as a LangGraph ReAct agent and as an Agent Engine-style app (needs langgraph).

The chat model is scripted, not an LLM: at each step it replays the conversation so far through the same
rule-based planner as the plain-function agent (each earlier tool call answered from its ``ToolMessage``) and
asks for the next tool call, or answers when the planner has finished. LangGraph runs the loop and the tools
for real, so the traces come from LangChain's callbacks, not from ``@toolpath.tool``. No network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolNode, create_react_agent

from toolpath.adapters.agent_engine import instrument_app
from toolpath.demo import smart_home

LANGGRAPH_AGENT_NAME = "smart_home_langgraph"
APP_NAME = "smart_home_app"


class _NextCall(Exception):
    """Raised inside the replayed planner when it asks for a tool call that has not happened yet."""

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        super().__init__(name)
        self.name = name
        self.arguments = arguments


class ScriptedHomeModel(BaseChatModel):
    """A chat model whose every reply is what the rule-based planner would do next in this conversation."""

    @property
    def _llm_type(self) -> str:
        return "scripted-smart-home"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedHomeModel:
        return self  # it knows the home's tools already

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt, results = _turn(messages)
        if not results:
            smart_home.reset_home()  # a new request starts from the same house, as with the plain agent
        answered = iter(results)

        def replay(name: str, **arguments: Any) -> Any:
            result = next(answered, None)
            if result is None:
                raise _NextCall(name, arguments)
            if result.status == "error":
                raise smart_home.DeviceError(_error_text(result.content))
            return _content(result.content)

        try:
            message = AIMessage(content=smart_home.plan(prompt, replay))
        except _NextCall as step:
            call_id = f"call_{len(results) + 1}"
            message = AIMessage(content="", tool_calls=[{"name": step.name, "args": step.arguments, "id": call_id}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def _turn(messages: list[BaseMessage]) -> tuple[str, list[ToolMessage]]:
    """The last user request and the tool results that followed it."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            later = messages[index + 1 :]
            return str(messages[index].content), [m for m in later if isinstance(m, ToolMessage)]
    raise ValueError("no user message in the conversation")


def _content(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _error_text(content: Any) -> str:
    # LangGraph's ToolNode reports a failing tool as "Error: DeviceError('...')\n Please fix your mistakes."
    text = str(content).split("\n", 1)[0].removeprefix("Error: ")
    if "('" in text and text.endswith("')"):
        text = text.split("('", 1)[1][:-2]
    return text


def home_tools() -> list[BaseTool]:
    """The home's tools as LangChain tools, wrapping the undecorated functions (LangChain's callbacks trace them)."""
    tools: list[BaseTool] = []
    for name, fn in smart_home.TOOLS.items():
        plain = getattr(fn, "__wrapped__", fn)
        tools.append(
            StructuredTool.from_function(plain, name=name, description=(plain.__doc__ or name).strip().split("\n")[0])
        )
    return tools


def build_graph() -> Any:
    """A compiled LangGraph ReAct agent: the scripted model and the home's tools (failures become tool messages)."""
    tools = home_tools()
    return create_react_agent(ScriptedHomeModel(), ToolNode(tools, handle_tool_errors=True), name=LANGGRAPH_AGENT_NAME)


class SmartHomeApp:
    """An Agent Engine-style app (the LangChain template's shape): ``set_up()``, then ``query`` / ``stream_query``."""

    name = APP_NAME

    def __init__(self) -> None:
        self.graph: Any = None

    def set_up(self) -> None:
        self.graph = build_graph()

    def query(self, *, input: str, config: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        result = self.graph.invoke({"messages": [("user", input)]}, config=config)
        return {"input": input, "output": result["messages"][-1].content}

    def stream_query(
        self,
        *,
        input: str,
        config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Iterator[dict[str, Any]]:
        yield from self.graph.stream({"messages": [("user", input)]}, config=config, stream_mode="updates")


def build_app() -> SmartHomeApp:
    """The app, set up and instrumented as a deployment would do it."""
    app = instrument_app(SmartHomeApp())
    app.set_up()
    return app
