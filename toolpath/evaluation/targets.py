"""Turn whatever the user calls an agent into a :class:`Target`: a callable ``(prompt, session_id=None) -> result``
to trace, and the sessions it keeps.

Accepted: an ``@toolpath.agent`` function or any callable taking the prompt (returning text or the Vertex
custom-function dict); an object with ``.query(input=...)`` (Vertex ``Queryable``, Agent Engine templates);
a LangChain ``Runnable`` (chat models, chains, ``AgentExecutor``, LangGraph graphs), whose input shape is read
from its input schema and whose output is reduced to the final text; a Google ADK agent (``BaseAgent``: an
``LlmAgent``, a workflow agent, agents with sub-agents; or a workflow ``BaseNode``) or ``App``, run as ADK's own
evaluation runs it (:mod:`toolpath.evaluation.evalsets.inference`); a module or package exposing ``root_agent`` (or
``agent.root_agent``, or an ADK ``App`` as ``app``), as ``adk eval`` takes an agent folder; and an Agent Engine
``AdkApp``-style object (``async_stream_query`` / ``stream_query`` yielding ADK events).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from toolpath.adapters.function import AgentSpec
from toolpath.errors import ConfigError
from toolpath.evaluation.evalsets.inference import AdkAgentRunner, AdkAppRunner, SessionInput

ACCEPTED = (
    "a function taking the prompt, an object with .query(), a LangChain Runnable, a Google ADK agent or App, "
    "a module or package exposing root_agent, or an AdkApp with stream_query / async_stream_query"
)


class Target:
    """What the runners run: the traced call (``spec``), and for agents that keep sessions (ADK) the object that
    opens them. Use it as a context manager, or :meth:`close` it, to release what the agent holds."""

    def __init__(self, spec: AgentSpec, host: AdkAgentRunner | AdkAppRunner | None = None) -> None:
        self.spec, self.host = spec, host
        self.description: str | None = spec.name
        """What the target was made of, for run records (``describe_target``)."""

    def start_session(
        self,
        session_id: str,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        """The next turn in ``session_id`` starts a session with this app name, user id and initial state (an ADK
        eval case's ``session_input``); agents without sessions of their own ignore it."""
        if self.host is not None:
            self.host.start_session(session_id, SessionInput(app_name, user_id, dict(state or {})))

    @property
    def takes_message(self) -> bool:
        """Whether the agent is sent a user's message as ADK's ``Content`` (``message=``), not only its text."""
        return self.host is not None

    def close(self) -> None:
        if self.host is not None:
            self.host.close()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_target(target: Any) -> Target:
    """The :class:`Target` of any accepted kind of agent; a :class:`~toolpath.errors.ConfigError` naming what is
    accepted for anything else."""
    if isinstance(target, Target):
        return target
    resolved = _resolve(target)
    resolved.description = describe_target(target)
    return resolved


def _resolve(target: Any) -> Target:
    spec = getattr(target, "__toolpath_agent__", None)
    if isinstance(spec, AgentSpec):
        return Target(spec)
    reset = None
    if isinstance(target, types.ModuleType):
        target, reset = _module_root(target)
    if _is_adk(target):
        app = target if _is_adk_app(target) else None
        runner = AdkAgentRunner(app.root_agent if app is not None else target, app, reset)
        return Target(AgentSpec.of(runner.__call__, runner.name), runner)
    if _is_adk_app_stream(target):
        app_runner = AdkAppRunner(target)
        return Target(AgentSpec.of(app_runner.__call__, app_runner.name), app_runner)
    name = getattr(target, "name", None) if not inspect.isroutine(target) else None
    name = name if isinstance(name, str) and name else _name_of(target)
    if _is_runnable(target):
        return Target(AgentSpec.of(_runnable_caller(target), name))
    if callable(getattr(target, "query", None)) and not inspect.isroutine(target):
        return Target(AgentSpec.of(_query_caller(target), name))
    if callable(target) and not isinstance(target, type):
        try:
            return Target(AgentSpec.of(target, name))
        except (TypeError, ValueError):  # a builtin without a readable signature
            pass
    raise ConfigError(f"cannot run {_kind(target)} as an agent: give {ACCEPTED}")


def _kind(target: Any) -> str:
    if isinstance(target, type):
        return f"the class {target.__qualname__}"
    name = type(target).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _adk_types() -> tuple[type, ...] | None:
    """ADK's agent, node and app classes, when google-adk is loaded (an ADK object cannot exist otherwise)."""
    if "google.adk" not in sys.modules:
        return None
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps.app import App
    from google.adk.workflow import BaseNode

    return BaseAgent, BaseNode, App


def _is_adk(target: Any) -> bool:
    kinds = _adk_types()
    return kinds is not None and isinstance(target, kinds)


def _is_adk_app(target: Any) -> bool:
    kinds = _adk_types()
    return kinds is not None and isinstance(target, kinds[2])


def _is_adk_app_stream(target: Any) -> bool:
    """An Agent Engine ``AdkApp``: streams ADK events, and has no ``query`` (the LangChain templates have both)."""
    if inspect.isroutine(target) or isinstance(target, type) or callable(getattr(target, "query", None)):
        return False
    return any(callable(getattr(target, m, None)) for m in ("async_stream_query", "stream_query"))


def _module_root(module: types.ModuleType) -> tuple[Any, Callable[[], object] | None]:
    """What ``adk eval`` runs of an agent module or package: ``app`` (an ADK ``App``) or ``root_agent`` of its
    ``agent`` submodule, else of the module itself; with that module's ``reset_data`` (called before each eval
    case, as ADK does), if any."""
    candidates = [module]
    sub = getattr(module, "agent", None)
    if not isinstance(sub, types.ModuleType) and hasattr(module, "__path__"):
        try:
            sub = importlib.import_module(f"{module.__name__}.agent")
        except ModuleNotFoundError as exc:
            if exc.name != f"{module.__name__}.agent":
                raise ConfigError(f"cannot import {module.__name__}.agent ({exc})") from None
            sub = None
    if isinstance(sub, types.ModuleType):
        candidates.insert(0, sub)
    for candidate in candidates:
        app = getattr(candidate, "app", None)
        root = app if _is_adk_app(app) else getattr(candidate, "root_agent", None)
        if root is None:
            continue
        reset = getattr(candidate, "reset_data", None)
        if reset is not None and not callable(reset):
            raise ConfigError(f"{candidate.__name__}.reset_data must be callable")
        return root, reset
    raise ConfigError(
        f"module {module.__name__} exposes no root_agent (nor agent.root_agent, nor an ADK App as app): "
        "give module:attribute"
    )


def _name_of(target: Any) -> str:
    return getattr(target, "__name__", None) or type(target).__name__


def _is_runnable(target: Any) -> bool:
    try:
        from langchain_core.runnables import Runnable
    except ImportError:  # pragma: no cover - langchain-core is a dependency
        return False
    return isinstance(target, Runnable)


def _query_caller(target: Any) -> Callable[..., Any]:
    params = inspect.signature(target.query).parameters
    takes_config = "config" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

    def query(prompt: str, session_id: str | None = None) -> Any:
        kwargs: dict[str, Any] = {"input": prompt}
        if takes_config and session_id is not None:
            kwargs["config"] = {"configurable": {"thread_id": session_id, "session_id": session_id}}
        return final_text(target.query(**kwargs))

    return query


def _runnable_caller(runnable: Any) -> Callable[..., Any]:
    from toolpath.adapters.langchain import ToolpathCallbackHandler

    shape = _input_shape(runnable)
    handler = ToolpathCallbackHandler()  # tool and model runs get spans even without instrument()

    def invoke(prompt: str, session_id: str | None = None) -> Any:
        if shape == "messages":
            payload: Any = {"messages": [("user", prompt)]}
        elif shape == "input":
            payload = {"input": prompt}
        else:
            payload = prompt
        config: dict[str, Any] = {"callbacks": [handler]}
        if session_id:
            config["configurable"] = {"thread_id": session_id, "session_id": session_id}
        return final_text(runnable.invoke(payload, config=config))

    return invoke


def _input_shape(runnable: Any) -> str:
    try:
        schema = runnable.get_input_jsonschema()
    except Exception:  # a runnable whose schema cannot be built still takes a string
        return "text"
    properties = schema.get("properties") or {}
    if "messages" in properties:
        return "messages"
    if "input" in properties:
        return "input"
    return "text"


def final_text(result: Any) -> Any:
    """Reduce a framework's result to the final text (or leave a Vertex dict / string as it is)."""
    content = getattr(result, "content", None)
    if content is not None and not isinstance(result, Mapping):  # a LangChain message
        return _content_text(content)
    if isinstance(result, Mapping):
        if "response" in result or "predicted_trajectory" in result:
            return result
        messages = result.get("messages")
        if isinstance(messages, list) and messages:
            return final_text(messages[-1])
        if "output" in result:
            return final_text(result["output"])
    return result


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "".join(
            block.get("text", "") if isinstance(block, Mapping) else str(block)
            for block in content
            if not isinstance(block, Mapping) or block.get("type", "text") == "text"
        )
    return str(content)


def describe_target(target: Any) -> str | None:
    """A readable name for an agent or dataset argument."""
    if target is None:
        return None
    if isinstance(target, str):
        return target
    if isinstance(target, Target):
        return target.description
    if isinstance(target, types.ModuleType):
        return target.__name__
    if _is_adk(target):
        return f"{type(target).__name__} {target.name}"
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    return f"{module}:{name}" if module else str(name)
