"""A real Google ADK agent driven by a scripted model (no network), and an ADK eval set it passes.

- :class:`ScriptedModel`: a ``BaseLlm`` that plays back, for each user turn, the ``LlmResponse`` list scripted for
  that turn's user text (keyed on the text; the step is how many tool responses the turn has had so far).
- :func:`call`, :func:`calls`, :func:`answer`: the scripted responses (function calls in one model turn, text
  parts, or both).
- :func:`build_home_agent`: an ``LlmAgent`` with three tools and a sub-agent it transfers to; every tool call
  is logged in :data:`RECEIVED` (name, args, the id ADK gave the call, the session and state it saw).
- :func:`home_evalset`: an ADK ``*.evalset.json`` (as a dict) of conversations with that agent, one of them
  multi-turn with a ``session_input``.
- :func:`write_agent_package`: the agent as a user's agent folder (``home_agent/agent.py`` with ``root_agent``).
- :class:`StreamingAdkApp`: an Agent Engine ``AdkApp`` look-alike (``stream_query`` / ``async_stream_query``
  yielding event dumps, taking a text or a ``Content`` dict; ``create_session``) around a real ADK runner.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types

RECEIVED: list[dict[str, Any]] = []
"""Every call the home agent's tools received: ``{"name", "args", "id", "state", "session"}`` (the session as
``(app name, user id, session id)``), in call order."""


class ScriptedModel(BaseLlm):
    """Plays back ``turns[user text]``: the first response when the turn starts, the next one after each round
    of tool responses. A turn with no script answers with a text saying so (a test then fails visibly)."""

    model: str = "scripted-model"
    turns: dict[str, list[LlmResponse]]

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        key, step = None, 0
        for content in llm_request.contents:
            parts = content.parts or []
            text = "".join(p.text for p in parts if p.text)
            if content.role == "user" and text in self.turns:
                key, step = text, 0
            elif key is not None and any(p.function_response for p in parts):
                step += 1
        script = self.turns.get(key or "", [])
        if step < len(script):
            yield script[step]
        else:
            yield answer(f"(no scripted response for {key!r}, step {step})")


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def calls(*parts: types.Part | str) -> LlmResponse:
    """One model turn of ``parts``: function calls (:func:`call`), and plain strings as text parts."""
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=p) if isinstance(p, str) else p for p in parts])
    )


def answer(*texts: str) -> LlmResponse:
    """A final answer of one text part per string."""
    return calls(*texts)


# --- the home agent --------------------------------------------------------------------------------------

STATUS = "Is the hall light on, and how warm is the living room?"
WHICH_HOME = "Which home is this?"
DIM = "Dim the hall light to 30%."
DEVICES: dict[str, dict[str, Any]] = {
    "light-hall": {"type": "light", "on": True, "brightness": 80},
    "thermostat-living": {"type": "thermostat", "celsius": 20.5},
}


def _log(name: str, args: dict[str, Any], context: ToolContext) -> None:
    session = context.session
    RECEIVED.append(
        {
            "name": name,
            "args": args,
            "id": context.function_call_id,
            "state": context.state.to_dict(),
            "session": (session.app_name, session.user_id, session.id),
        }
    )


def get_device(device_id: str, tool_context: ToolContext) -> dict[str, Any]:
    """Read a device's state."""
    _log("get_device", {"device_id": device_id}, tool_context)
    return {"device_id": device_id, **DEVICES.get(device_id, {"error": "unknown device"})}


def get_home(tool_context: ToolContext) -> dict[str, Any]:
    """Which home the session is about (from the session state)."""
    _log("get_home", {}, tool_context)
    return {"home": tool_context.state.get("home"), "owner": tool_context.state.get("owner")}


def set_light(device_id: str, brightness: int, tool_context: ToolContext) -> dict[str, Any]:
    """Set a light's brightness (0-100)."""
    _log("set_light", {"device_id": device_id, "brightness": brightness}, tool_context)
    return {"device_id": device_id, "brightness": brightness}


def build_home_agent() -> LlmAgent:
    """``home`` (tools get_device, get_home; sub-agent ``lights`` with tool set_light), scripted for
    :data:`STATUS` (two calls in one model turn, an answer in two text parts), :data:`WHICH_HOME` (reads the
    session state) and :data:`DIM` (transfers to ``lights``)."""
    lights = LlmAgent(
        name="lights",
        description="Changes lights.",
        model=ScriptedModel(
            turns={
                DIM: [
                    calls(call("set_light", device_id="light-hall", brightness=30)),
                    answer("Dimmed the hall light to 30%."),
                ]
            }
        ),
        tools=[set_light],
    )
    return LlmAgent(
        name="home",
        description="Answers about the home.",
        instruction="Help with the smart home.",
        model=ScriptedModel(
            turns={
                STATUS: [
                    calls(
                        "Let me look.",
                        call("get_device", device_id="light-hall"),
                        call("get_device", device_id="thermostat-living"),
                    ),
                    answer("The hall light is on at 80%.", "The living room is at 20.5 °C."),
                ],
                WHICH_HOME: [calls(call("get_home")), answer("This is flat 7.")],
                DIM: [calls(call("transfer_to_agent", agent_name="lights"))],
            }
        ),
        tools=[get_device, get_home],
        sub_agents=[lights],
    )


def _text(text: str, role: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _turn(prompt: str, response: str, tool_uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": _text(prompt, "user"),
        "final_response": _text(response, "model"),
        "intermediate_data": {"tool_uses": tool_uses, "tool_responses": [], "intermediate_responses": []},
    }


def home_evalset() -> dict[str, Any]:
    """Two cases the home agent passes: ``status`` (one turn, two calls) and ``home_then_dim`` (two turns in one
    session whose state names the home; the second transfers to ``lights``)."""
    return {
        "eval_set_id": "home",
        "eval_cases": [
            {
                "eval_id": "status",
                "conversation": [
                    _turn(
                        STATUS,
                        "The hall light is on at 80%.\nThe living room is at 20.5 °C.",
                        [
                            {"name": "get_device", "args": {"device_id": "light-hall"}},
                            {"name": "get_device", "args": {"device_id": "thermostat-living"}},
                        ],
                    )
                ],
            },
            {
                "eval_id": "home_then_dim",
                "session_input": {
                    "app_name": "home_app",
                    "user_id": "ana",
                    "state": {"home": "flat 7", "owner": "ana"},
                },
                "conversation": [
                    _turn(WHICH_HOME, "This is flat 7.", [{"name": "get_home", "args": {}}]),
                    _turn(
                        DIM,
                        "Dimmed the hall light to 30%.",
                        [
                            {"name": "transfer_to_agent", "args": {"agent_name": "lights"}},
                            {"name": "set_light", "args": {"device_id": "light-hall", "brightness": 30}},
                        ],
                    ),
                ],
            },
        ],
    }


def write_agent_package(folder: Path, name: str = "home_agent") -> Path:
    """A user's ADK agent folder ``folder/name`` (``__init__.py`` importing ``agent``, ``agent.py`` defining
    ``root_agent``), and ``home.evalset.json`` beside it. Returns the package folder."""
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("from . import agent\n")
    (package / "agent.py").write_text(
        "from tests.helpers.adk_agent import build_home_agent\n\nroot_agent = build_home_agent()\n"
    )
    (folder / "home.evalset.json").write_text(json.dumps(home_evalset(), indent=1))
    return package


# --- an Agent Engine AdkApp look-alike ---------------------------------------------------------------------


class StreamingAdkApp:
    """What ``vertexai.agent_engines.AdkApp`` offers (without Vertex): sessions, and queries that stream each ADK
    event as ``json.loads(event.model_dump_json(exclude_none=True))``. ``sync_only`` hides the async methods."""

    def __init__(self, agent: LlmAgent, *, sync_only: bool = False) -> None:
        self.name = agent.name
        self._sessions = InMemorySessionService()
        self._runner = Runner(app_name="home_app", agent=agent, session_service=self._sessions)
        if sync_only:
            self.async_stream_query = None
            self.async_create_session = None

    async def _create(self, user_id: str, state: dict[str, Any] | None) -> dict[str, Any]:
        session = await self._sessions.create_session(app_name="home_app", user_id=user_id, state=state)
        return json.loads(session.model_dump_json())

    async def async_create_session(self, *, user_id: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._create(user_id, state)

    def create_session(self, *, user_id: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
        """On a thread of its own, as AdkApp does (the caller may be inside an event loop)."""
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self._create(user_id, state)).result()

    async def async_stream_query(
        self, *, message: str | dict[str, Any], user_id: str, session_id: str
    ) -> AsyncIterator[dict]:
        content = _content(message)
        async for event in self._runner.run_async(user_id=user_id, session_id=session_id, new_message=content):
            yield json.loads(event.model_dump_json(exclude_none=True))

    def stream_query(self, *, message: str | dict[str, Any], user_id: str, session_id: str) -> Iterator[dict]:
        content = _content(message)
        for event in self._runner.run(user_id=user_id, session_id=session_id, new_message=content):
            yield json.loads(event.model_dump_json(exclude_none=True))


def _content(message: str | dict[str, Any]) -> types.Content:
    """What ``AdkApp`` makes of a message: a ``Content`` given as a dict taken as it is, a text as one part."""
    if isinstance(message, dict):
        return types.Content.model_validate(message)
    return types.Content(role="user", parts=[types.Part(text=message)])


def counting_model(agent: str, tokens: tuple[int, int], turns: dict[str, list[Any]]) -> ScriptedModel:
    """A :class:`ScriptedModel` named for ``agent`` whose every response reports ``tokens`` (prompt, answer) of
    usage, so ADK counts each as a model call with those tokens."""
    prompt, output = tokens
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=output, total_token_count=prompt + output
    )
    scripted = {key: [r.model_copy(update={"usage_metadata": usage}) for r in rs] for key, rs in turns.items()}
    return ScriptedModel(model=f"scripted-{agent}", turns=scripted)
