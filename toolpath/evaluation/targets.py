"""Turn whatever the user calls an agent into a callable ``(prompt, session_id=None) -> result``.

Accepted: an ``@toolpath.agent`` function or any callable taking the prompt (returning text or the Vertex
custom-function dict); an object with ``.query(input=...)`` (Vertex ``Queryable``, Agent Engine templates);
a LangChain ``Runnable`` (chat models, chains, ``AgentExecutor``, LangGraph graphs), whose input shape is read
from its input schema and whose output is reduced to the final text.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from toolpath.adapters.function import AgentSpec
from toolpath.errors import ConfigError


def agent_spec_for(target: Any) -> AgentSpec:
    """An :class:`AgentSpec` (how to call and trace) for any accepted kind of agent."""
    spec = getattr(target, "__toolpath_agent__", None)
    if isinstance(spec, AgentSpec):
        return spec
    name = getattr(target, "name", None) if not inspect.isroutine(target) else None
    name = name if isinstance(name, str) and name else _name_of(target)
    if _is_runnable(target):
        return AgentSpec.of(_runnable_caller(target), name)
    if callable(getattr(target, "query", None)) and not inspect.isroutine(target):
        return AgentSpec.of(_query_caller(target), name)
    if callable(target):
        return AgentSpec.of(target, name)
    raise ConfigError(f"cannot run {type(target).__name__} as an agent: give a function, .query() or a Runnable")


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
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    return f"{module}:{name}" if module else str(name)
