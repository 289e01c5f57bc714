"""Vertex AI Agent Engine-style apps: objects with ``set_up()`` and ``query`` / ``stream_query`` /
``async_query`` / ``async_stream_query``.

    app = toolpath.adapters.agent_engine.instrument_app(MyApp(...))
    app.set_up()
    app.query(input="Dim the hallway light")

Each call is an ``invoke_agent`` span; ``set_up()`` and ``register_operations()`` are untouched, and the wrapped
methods keep their names, signatures and return values. Where a method takes ``config`` (the LangChain
templates), toolpath's LangChain handler is added to ``config["callbacks"]``, so tool and model runs become
spans. When the app's tools are not traced, the trajectory is taken from what the app returns: the
``intermediate_steps`` of LangChain agents (``(AgentAction, observation)`` pairs, plain or in
``langchain_core.load.dumpd`` form). An ADK-style event stream (``AdkApp.stream_query``) is read as ADK's own
evaluation reads it (:mod:`toolpath.adapters.adk_events`): its calls with their arguments and ids are the trajectory,
whatever ADK's own spans recorded, and the final response is its text parts joined as ADK joins them. A stream's
span ends when the stream is exhausted or closed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from toolpath.adapters import adk_events
from toolpath.tracer import spans

__all__ = ["instrument_app"]

logger = logging.getLogger("toolpath.adapters.agent_engine")
METHODS = ("query", "stream_query", "async_query", "async_stream_query")


def instrument_app(app: Any, *, name: str | None = None) -> Any:
    """Trace ``app``'s query methods in place (idempotent); returns ``app``."""
    if getattr(app, "__toolpath_instrumented__", False):
        return app
    agent_name = name or getattr(app, "name", None) or type(app).__name__
    found = False
    for method_name in METHODS:
        method = getattr(app, method_name, None)
        if callable(method):
            setattr(app, method_name, _wrap(method, str(agent_name), method_name))
            found = True
    if not found:
        raise TypeError(f"{type(app).__name__} has none of {', '.join(METHODS)}")
    app.__toolpath_instrumented__ = True
    return app


def _wrap(method: Any, agent_name: str, method_name: str) -> Any:
    takes_config = "config" in inspect.signature(method).parameters
    streaming = "stream" in method_name

    def prepare(kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        if takes_config:
            kwargs = {**kwargs, "config": _with_handler(kwargs.get("config"))}
        prompt = kwargs.get("input", kwargs.get("message"))
        span = spans.start_agent_span(agent_name, _prompt_text(prompt), _session(kwargs), None)
        return span, kwargs

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def async_call(*args: Any, **kwargs: Any) -> Any:
            span, kwargs = prepare(kwargs)
            try:
                with _current(spans.context_of(span)):
                    result = await method(*args, **kwargs)
            except BaseException as exc:
                _fail(span, exc)
                raise
            _finish(span, result)
            return result

        return async_call

    if inspect.isasyncgenfunction(method) or (streaming and method_name.startswith("async")):

        @functools.wraps(method)
        async def async_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            span, kwargs = prepare(kwargs)
            ctx = spans.context_of(span)
            collected = _StreamState()
            iterator = method(*args, **kwargs).__aiter__()
            try:
                while True:
                    try:
                        with _current(ctx):  # current while the app works, not while the caller does
                            event = await iterator.__anext__()
                    except StopAsyncIteration:
                        break
                    collected.add(event)
                    yield event
            except GeneratorExit:  # the consumer closed the stream early
                await _aclose(iterator, ctx)
                collected.finish(span)
                raise
            except BaseException as exc:
                _fail(span, exc)
                raise
            collected.finish(span)

        return async_stream

    if streaming:

        @functools.wraps(method)
        def stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
            span, kwargs = prepare(kwargs)
            ctx = spans.context_of(span)
            collected = _StreamState()
            iterator = iter(method(*args, **kwargs))
            try:
                while True:
                    try:
                        with _current(ctx):  # current while the app works, not while the caller does
                            event = next(iterator)
                    except StopIteration:
                        break
                    collected.add(event)
                    yield event
            except GeneratorExit:  # the consumer closed the stream early
                _close(iterator, ctx)
                collected.finish(span)
                raise
            except BaseException as exc:
                _fail(span, exc)
                raise
            collected.finish(span)

        return stream

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        span, kwargs = prepare(kwargs)
        try:
            with _current(spans.context_of(span)):
                result = method(*args, **kwargs)
        except BaseException as exc:
            _fail(span, exc)
            raise
        _finish(span, result)
        return result

    return call


@contextlib.contextmanager
def _current(ctx: Any) -> Iterator[None]:
    """The agent span (in ``ctx``) is current inside the block, so the app's own spans nest under it."""
    token = spans.make_current(ctx)
    try:
        yield
    finally:
        spans.restore(token)


def _close(iterator: Any, ctx: Any) -> None:
    """Close the app's own generator now, in the agent span's context, so its clean-up is traced there."""
    close = getattr(iterator, "close", None)
    if close is not None:
        with _current(ctx):
            close()


async def _aclose(iterator: Any, ctx: Any) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        with _current(ctx):
            await close()


def _with_handler(config: Any) -> dict[str, Any]:
    from toolpath.adapters.langchain import ToolpathCallbackHandler  # LangChain only when an app wants it

    config = dict(config or {})
    callbacks = config.get("callbacks")
    if isinstance(callbacks, list | tuple):
        if not any(isinstance(c, ToolpathCallbackHandler) for c in callbacks):
            config["callbacks"] = [*callbacks, ToolpathCallbackHandler()]
    elif callbacks is None:
        config["callbacks"] = [ToolpathCallbackHandler()]
    return config


def _finish(span: Any, result: Any) -> None:
    try:
        if isinstance(result, Mapping):
            spans.set_returned_trajectory(span, trajectory_from_steps(result.get("intermediate_steps")))
        spans.end_agent_span(span, _response_text(result))
    except Exception:
        logger.warning("toolpath: recording an Agent Engine result failed", exc_info=True)
        span.end()


def _fail(span: Any, exc: BaseException) -> None:
    try:
        spans.record_failure(span, exc)
    finally:
        span.end()


class _StreamState:
    """What a stream said: ADK-style events (read as ADK's evaluation reads them, :mod:`.adk`), or LangGraph
    updates (the last AI text; their tool calls are traced by the LangChain handler)."""

    def __init__(self) -> None:
        self.events = adk_events.EventReader()
        self.text: str | None = None

    def add(self, event: Any) -> None:
        try:
            event = event.model_dump() if hasattr(event, "model_dump") and not hasattr(event, "author") else event
            if isinstance(event, Mapping) and self._add_graph_update(event):
                return
            self.events.add(event)
        except Exception:
            logger.debug("toolpath: unreadable stream event", exc_info=True)

    def _add_graph_update(self, event: Mapping[str, Any]) -> bool:
        """LangGraph stream chunks (``{"messages": [...]}`` values, or ``{node: {"messages": [...]}}`` updates): the
        last AI message with text is the answer so far."""
        if "content" in event or "author" in event:
            return False
        updates = [event] if "messages" in event else [v for v in event.values() if isinstance(v, Mapping)]
        found = False
        for update in updates:
            messages = update.get("messages")
            if not isinstance(messages, list):
                continue
            found = True
            for message in messages:
                text = getattr(message, "content", None)
                if getattr(message, "type", None) == "ai" and isinstance(text, str) and text:
                    self.text = text
        return found

    def finish(self, span: Any) -> None:
        turn = self.events.turn()
        if turn.events:  # ADK events: the complete trajectory, kept over ADK's own (possibly content-less) spans
            adk_events.record_turn(span, turn)
            spans.end_agent_span(span, turn.response)
        else:
            spans.end_agent_span(span, self.text)


def trajectory_from_steps(steps: Any) -> list[dict[str, Any]]:
    """``{"tool_name", "tool_input"}`` items from LangChain ``intermediate_steps``: ``(AgentAction,
    observation)`` pairs, plain objects or their ``dumpd`` form."""
    items: list[dict[str, Any]] = []
    for step in steps or []:
        action = step[0] if isinstance(step, list | tuple) and step else step
        if isinstance(action, Mapping):  # dumpd: {"lc": 1, "type": "constructor", "kwargs": {...}}
            fields = action.get("kwargs", action)
            tool, tool_input = fields.get("tool"), fields.get("tool_input")
        else:
            tool, tool_input = getattr(action, "tool", None), getattr(action, "tool_input", None)
        if not tool:
            continue
        if not isinstance(tool_input, Mapping):
            tool_input = {"input": tool_input} if tool_input is not None else {}
        items.append({"tool_name": str(tool), "tool_input": dict(tool_input)})
    return items


def _response_text(result: Any) -> Any:
    """The app's final text; a value without text (bytes) as it is, which the agent span records as no response,
    with the reason; ``None`` when the result holds no response."""
    if isinstance(result, Mapping):
        for key in ("output", "response", "final_response"):
            value = result.get(key)
            if value is not None:
                if isinstance(value, str) or (not isinstance(value, Mapping) and spans.response_not_text(value)):
                    return value
                return getattr(value, "content", None) or str(value)
        return None
    return result if isinstance(result, str) or spans.response_not_text(result) is not None else None


def _prompt_text(prompt: Any) -> str | None:
    if prompt is None or isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Mapping):
        for key in ("input", "text", "message"):
            if isinstance(prompt.get(key), str):
                return prompt[key]
        parts = prompt.get("parts")
        if isinstance(parts, list):
            return "".join(p.get("text", "") for p in parts if isinstance(p, Mapping))
    return str(prompt)


def _session(kwargs: Mapping[str, Any]) -> str | None:
    for key in ("session_id", "thread_id"):
        if kwargs.get(key):
            return str(kwargs[key])
    config = kwargs.get("config")
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    if isinstance(configurable, Mapping):
        for key in ("thread_id", "session_id"):
            if configurable.get(key):
                return str(configurable[key])
    return None
