"""``@toolpath.tool`` on a generator function or an async generator function (a tool that streams its result).

Calling such a tool runs none of its code: its body runs as its caller iterates. So its ``execute_tool`` span
covers the iteration: it starts when the first item is asked for, is current whenever the tool's own code runs
(each step, not while the caller works between items), and ends when the generator finishes, raises or is closed.
The result recorded is the list of the items it yielded, as far as the value limit keeps them (cut with the
truncation marker, like any other value; with content capture off, none are kept); an error raised while it is
iterated is the call's error, as for any tool. A generator closed before its end (the caller stopped early) ends
its span then, with the items yielded so far. A generator never iterated ran none of the tool's code and makes no
span, so none is ever left open; one dropped half-way is closed by Python when it is collected, and its span ends
then. ``send`` and ``throw`` reach the tool's generator as they would without the decorator.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span

from toolpath.tracer import content, spans

__all__ = ["async_generator_tool", "generator_tool"]

Binder = Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]
OnError = Callable[[str], None]


class _Yielded:
    """The items a generator tool yielded, kept as far as its recorded result can show them: each item costs at least
    two characters of the recorded JSON, so more than half the value limit would be cut anyway."""

    __slots__ = ("items", "keep")

    def __init__(self, recorded: bool) -> None:
        policy = content.policy()
        self.keep = policy.max_value_length // 2 + 1 if recorded and policy.capture else 0
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        if len(self.items) < self.keep:
            self.items.append(item)


class _Traced:
    """One call's span, or nothing when tracing it failed (the tool then runs untraced)."""

    __slots__ = ("ctx", "on_error", "span", "yielded")

    def __init__(self, span_name: str, static: dict[str, Any], arguments: Callable[[], dict[str, Any]],
                 on_error: OnError, tool_name: str) -> None:  # fmt: skip
        self.on_error = on_error
        self.span: Span | None = None
        self.ctx: Context | None = None
        try:
            span, token = spans.start_tool_span(span_name, static, arguments())
            spans.restore(token)  # current only while the tool's own code runs (see current())
            self.span, self.ctx = span, spans.context_of(span)
        except Exception:
            on_error(f"tracing tool {tool_name!r}")
        self.yielded = _Yielded(self.span is not None)

    def current(self) -> contextlib.AbstractContextManager[Any]:
        """The tool's span current inside the block (one step of the tool's generator)."""
        return _Current(self.ctx) if self.ctx is not None else contextlib.nullcontext()

    def end(self) -> None:
        if self.span is not None:
            try:
                spans.end_child_tool_span(self.span, self.yielded.items)
            except Exception:
                self.on_error("ending a tool span")

    def fail(self, exc: BaseException) -> None:
        if self.span is not None:
            try:
                spans.record_failure(self.span, exc)
            except Exception:
                self.on_error("recording a tool error")
            finally:
                self.span.end()


class _Current:
    """A span's context current inside a ``with`` block (a class, not a generator: the block's own
    ``StopIteration`` passes through it untouched)."""

    __slots__ = ("ctx", "token")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def __enter__(self) -> None:
        self.token = spans.make_current(self.ctx)

    def __exit__(self, *exc: object) -> None:
        spans.restore(self.token)


def generator_tool(
    fn: Callable[..., Any], span_name: str, static: dict[str, Any], bind: Binder, on_error: OnError, tool_name: str
) -> Callable[..., Any]:
    """``fn`` (a generator function) traced over its iteration; the wrapper is a generator function too."""

    @functools.wraps(fn)
    def generator_wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        traced = _Traced(span_name, static, lambda: bind(args, kwargs), on_error, tool_name)
        try:
            inner = fn(*args, **kwargs)
            step: Callable[[Any], Any] = inner.send
            value: Any = None
            while True:
                with traced.current():
                    item = step(value)
                traced.yielded.add(item)
                try:
                    value = yield item
                    step = inner.send
                except GeneratorExit:  # the caller closed it (or dropped it): the tool's generator too, in its span
                    with traced.current():
                        inner.close()
                    raise
                except BaseException as exc:  # thrown in by the caller: the tool's generator decides
                    step, value = inner.throw, exc
        except StopIteration as stop:
            traced.end()
            return stop.value
        except GeneratorExit:
            traced.end()
            raise
        except BaseException as exc:
            traced.fail(exc)
            raise

    return generator_wrapper


def async_generator_tool(
    fn: Callable[..., Any], span_name: str, static: dict[str, Any], bind: Binder, on_error: OnError, tool_name: str
) -> Callable[..., Any]:
    """``fn`` (an async generator function) traced over its iteration; the wrapper is an async generator function
    too (frameworks tell streaming tools by it)."""

    @functools.wraps(fn)
    async def async_generator_wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        traced = _Traced(span_name, static, lambda: bind(args, kwargs), on_error, tool_name)
        try:
            inner = fn(*args, **kwargs)
            step: Callable[[Any], Any] = inner.asend
            value: Any = None
            while True:
                with traced.current():
                    item = await step(value)
                traced.yielded.add(item)
                try:
                    value = yield item
                    step = inner.asend
                except GeneratorExit:
                    with traced.current():
                        await inner.aclose()
                    raise
                except BaseException as exc:
                    step, value = inner.athrow, exc
        except StopAsyncIteration:
            traced.end()
        except GeneratorExit:
            traced.end()
            raise
        except BaseException as exc:
            traced.fail(exc)
            raise

    return async_generator_wrapper
