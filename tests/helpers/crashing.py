"""Agents of every kind toolpath runs whose first turn raises: the agent calls ``crash_tool(level=3)`` on
:data:`CRASH` and the tool raises, so the turn does; on :data:`HELLO_AGAIN` it answers :data:`ANSWER` without a call.

:func:`crash_evalset` is a 2-turn case (:data:`CRASH`, then :data:`HELLO_AGAIN`) expecting that call and
those answers, judged with thresholds of 0.5: scored on what is left after the crash (the second turn), it
would pass. :func:`build` makes the agent of one kind (:data:`KINDS`); :data:`SENT` lists the prompts each run
sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.prebuilt import ToolNode, create_react_agent

import toolpath
from tests.helpers.adk_agent import ScriptedModel, StreamingAdkApp, answer, call, calls
from toolpath.adapters.agent_engine import instrument_app

CRASH = "Run the check at level 3."
HELLO_AGAIN = "Hello again?"
ANSWER = "Hello!"
ERROR = "ValueError: level 3 is too high"
CRITERIA = {"tool_trajectory_avg_score": 0.5, "response_match_score": 0.5}
KINDS = ["function", "langgraph", "agent_engine", "adk", "adk_app"]

SENT: list[str] = []
"""Every prompt a crashing agent received, in order."""


def _crash(level: int) -> str:
    """Check the system at a level."""
    raise ValueError(f"level {level} is too high")


crash_tool = toolpath.tool(name="crash_tool")(_crash)


def crashing_agent(prompt: str) -> str:
    """A plain function agent."""
    SENT.append(prompt)
    if prompt == CRASH:
        crash_tool(level=3)
    return ANSWER


class _CrashModel(BaseChatModel):
    """Asks for ``crash_tool(level=3)`` on :data:`CRASH`, answers :data:`ANSWER` otherwise."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        if last.type == "human":
            SENT.append(str(last.content))
        if last.type == "human" and last.content == CRASH:
            message = AIMessage(content="", tool_calls=[{"name": "crash_tool", "args": {"level": 3}, "id": "call_1"}])
        else:
            message = AIMessage(content=ANSWER)
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "crash-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> _CrashModel:
        return self


def crashing_graph() -> Any:
    """A LangGraph ReAct agent whose tool errors are raised, not turned into tool messages."""
    tool = StructuredTool.from_function(_crash, name="crash_tool")
    return create_react_agent(_CrashModel(), ToolNode([tool], handle_tool_errors=False), name="crasher")


class CrashingApp:
    """An Agent Engine-style app (``query(input=..., config=...)``) around :func:`crashing_graph`."""

    name = "crash_app"

    def __init__(self) -> None:
        self.graph = crashing_graph()

    def query(self, *, input: str, config: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        result = self.graph.invoke({"messages": [("user", input)]}, config=config)
        return {"input": input, "output": result["messages"][-1].content}


def _adk_crash(level: int) -> dict[str, Any]:
    """Check the system at a level."""
    raise ValueError(f"level {level} is too high")


_adk_crash.__name__ = "crash_tool"  # ADK names a function tool by its function's name


def crashing_adk_agent() -> LlmAgent:
    """An ADK agent on a scripted model; its tool raises (ADK lets the exception end the run)."""
    model = ScriptedModel(turns={CRASH: [calls(call("crash_tool", level=3))], HELLO_AGAIN: [answer(ANSWER)]})
    return LlmAgent(name="crasher", model=model, tools=[_adk_crash])


def build(kind: str) -> Any:
    """The crashing agent of ``kind`` (one of :data:`KINDS`)."""
    SENT.clear()
    if kind == "function":
        return crashing_agent
    if kind == "langgraph":
        return crashing_graph()
    if kind == "agent_engine":
        return instrument_app(CrashingApp())
    if kind == "adk":
        return crashing_adk_agent()
    if kind == "adk_app":
        return StreamingAdkApp(crashing_adk_agent())
    raise ValueError(kind)


def _turn(prompt: str, response: str, tool_uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": tool_uses, "tool_responses": [], "intermediate_responses": []},
    }


def crash_evalset(folder: Path) -> Path:
    """``folder/crash.evalset.json`` (one case, ``crash_then_hello``) and its ``test_config.json`` (thresholds
    0.5). Returns the eval set's path."""
    conversation = [
        _turn(CRASH, "Checked.", [{"name": "crash_tool", "args": {"level": 3}}]),
        _turn(HELLO_AGAIN, ANSWER, []),
    ]
    path = folder / "crash.evalset.json"
    cases = [{"eval_id": "crash_then_hello", "conversation": conversation}]
    path.write_text(json.dumps({"eval_set_id": "crash", "eval_cases": cases}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": CRITERIA}))
    return path
