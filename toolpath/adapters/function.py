"""Trace plain Python functions: ``@toolpath.tool`` for tools, ``@toolpath.agent`` for agent functions.

    @toolpath.tool
    def get_weather(city: str) -> dict: ...

    @toolpath.agent(name="weather_bot")
    def answer(prompt: str) -> str: ...

    answer("Weather in Paris?", session_id="s-1")

Signature introspection happens once, at decoration time; the per-call path only binds arguments, starts a
span and ends it. A failure inside toolpath never reaches the decorated function's caller: it is logged and
the function runs untraced. The function's own exceptions propagate unchanged.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from contextvars import Token
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, overload

from opentelemetry.context import Context

from toolpath.adapters.generator_tools import async_generator_tool, generator_tool
from toolpath.tracer import semconv, spans, untraced

__all__ = ["AgentSpec", "agent", "tool"]

P = ParamSpec("P")
R = TypeVar("R")
logger = logging.getLogger("toolpath.adapters.function")

_BOUND_SELF = ("self", "cls")
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _internal_error(what: str) -> None:
    untraced.log_and_count(logger, "toolpath: %s failed; the call runs untraced", what)


# --- argument binding ------------------------------------------------------------------------------------


def _make_binder(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """Return ``bind(args, kwargs) -> {param: value}`` for ``fn``: the arguments as the tool received them
    (defaults not filled in), without a leading ``self``/``cls``."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    offset = 1 if params and params[0].name in _BOUND_SELF and params[0].kind in _POSITIONAL else 0
    params = params[offset:]
    if all(p.kind in (*_POSITIONAL, inspect.Parameter.KEYWORD_ONLY) for p in params):
        names = tuple(p.name for p in params if p.kind in _POSITIONAL)

        def bind_simple(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            bound = dict(zip(names, args[offset:] if offset else args, strict=False))
            if kwargs:
                bound.update(kwargs)
            return bound

        return bind_simple

    def bind_general(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            arguments = signature.bind(*args, **kwargs).arguments
        except TypeError:  # the call itself is about to fail with the same error
            return {"args": list(args[offset:]), **kwargs}
        bound: dict[str, Any] = {}
        for index, (key, value) in enumerate(arguments.items()):
            if index < offset:
                continue
            kind = signature.parameters[key].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                bound.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                bound[key] = list(value)
            else:
                bound[key] = value
        return bound

    return bind_general


def _summary(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    return doc.strip().split("\n\n", 1)[0].replace("\n", " ") if doc else None


# --- @tool -----------------------------------------------------------------------------------------------


@overload
def tool(fn: Callable[P, R], /, *, name: str | None = None, description: str | None = None) -> Callable[P, R]: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(fn: Callable[P, R] | None = None, /, *, name: str | None = None, description: str | None = None) -> Any:
    """Trace every call of a tool function (sync or async) as an ``execute_tool`` span. A generator or async
    generator function is traced over its iteration (:mod:`toolpath.adapters.generator_tools`): its span ends when
    the generator does, with the items it yielded as the result, or the error it raised.

    Args:
        name: the tool's name as the agent knows it; the function's name by default.
        description: defaults to the first paragraph of the docstring.
    """
    if fn is None:
        return lambda f: tool(f, name=name, description=description)
    tool_name = name or fn.__name__
    static = spans.tool_static_attributes(tool_name, description if description is not None else _summary(fn))
    span_name = semconv.tool_span_name(tool_name)
    bind = _make_binder(fn)

    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        traced = async_generator_tool if inspect.isasyncgenfunction(fn) else generator_tool
        wrapper: Any = traced(fn, span_name, static, bind, _internal_error, tool_name)
    elif inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                span, token = spans.start_tool_span(span_name, static, bind(args, kwargs))
            except Exception:
                _internal_error(f"tracing tool {tool_name!r}")
                return await fn(*args, **kwargs)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                _end_failed(span, token, exc)
                raise
            _end(span, token, result)
            return result

        wrapper = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                span, token = spans.start_tool_span(span_name, static, bind(args, kwargs))
            except Exception:
                _internal_error(f"tracing tool {tool_name!r}")
                return fn(*args, **kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _end_failed(span, token, exc)
                raise
            _end(span, token, result)
            return result

        wrapper = sync_wrapper
    wrapper.__toolpath_tool__ = tool_name
    return wrapper


def _end(span: Any, token: Token[Context], result: Any) -> None:
    try:
        spans.end_tool_span(span, token, result)
    except Exception:
        _internal_error("ending a tool span")


def _end_failed(span: Any, token: Token[Context], exc: BaseException) -> None:
    try:
        spans.fail_span(span, token, exc)
    except Exception:
        _internal_error("recording a tool error")


# --- @agent ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """What ``@agent`` learned about a function at decoration time; the runner uses it too."""

    fn: Callable[..., Any]
    name: str
    prompt_param: str | None
    offset: int
    takes_session_id: bool

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str | None = None) -> AgentSpec:
        params = list(inspect.signature(fn).parameters.values())
        offset = 1 if params and params[0].name in _BOUND_SELF and params[0].kind in _POSITIONAL else 0
        rest = params[offset:]
        takes_session = any(p.name == "session_id" or p.kind is inspect.Parameter.VAR_KEYWORD for p in rest)
        return cls(fn, name or fn.__name__, rest[0].name if rest else None, offset, takes_session)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def _start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> spans.AgentRun | None:
        # session_id reaches the function only if it accepts it
        session_id = kwargs.get("session_id") if self.takes_session_id else kwargs.pop("session_id", None)
        try:
            prompt = args[self.offset] if len(args) > self.offset else kwargs.get(self.prompt_param or "")
            return spans.AgentRun(self.name, prompt, session_id)
        except Exception:
            _internal_error(f"tracing agent {self.name!r}")
            return None

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any], started: list[Any] | None = None) -> Any:
        """Run the agent function under an ``invoke_agent`` span; ``started`` receives the run."""
        run = self._start(args, kwargs)
        if started is not None:
            started.append(run)
        if run is None:
            return self.fn(*args, **kwargs)
        try:
            result = self.fn(*args, **kwargs)
        except BaseException as exc:
            _finish_failed(run, exc)
            raise
        _finish(run, result)
        return result

    async def acall(self, args: tuple[Any, ...], kwargs: dict[str, Any], started: list[Any] | None = None) -> Any:
        run = self._start(args, kwargs)
        if started is not None:
            started.append(run)
        if run is None:
            return await self.fn(*args, **kwargs)
        try:
            result = await self.fn(*args, **kwargs)
        except BaseException as exc:
            _finish_failed(run, exc)
            raise
        _finish(run, result)
        return result


def _finish(run: spans.AgentRun, result: Any) -> None:
    try:
        run.finish(result)
    except Exception:
        _internal_error("ending an agent span")


def _finish_failed(run: spans.AgentRun, exc: BaseException) -> None:
    try:
        run.fail(exc)
    except Exception:
        _internal_error("recording an agent error")


@overload
def agent(fn: Callable[P, R], /, *, name: str | None = None) -> Callable[P, R]: ...
@overload
def agent(*, name: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def agent(fn: Callable[P, R] | None = None, /, *, name: str | None = None) -> Any:
    """Trace each call of an agent function (sync or async) as an ``invoke_agent`` span.

    The first argument is the prompt. The function returns its final text, or the Vertex custom-function
    shape ``{"response": str, "predicted_trajectory": [{"tool_name", "tool_input"}, ...]}``. Pass
    ``session_id=`` to group turns into one session (it reaches the function only if it accepts it).
    """
    if fn is None:
        return lambda f: agent(f, name=name)
    spec = AgentSpec.of(fn, name)

    if spec.is_async:

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            return await spec.acall(args, kwargs)

        wrapper: Any = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            return spec.call(args, kwargs)

        wrapper = sync_wrapper
    wrapper.__toolpath_agent__ = spec
    return wrapper
