"""@toolpath.tool on generator and async generator functions: the span covers the iteration, the items yielded are
the result (cut like any value), an error raised while iterating is the call's error, and no span is left open."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import toolpath
from tests.helpers.builders import spans_by_name
from toolpath.tracer import semconv as sc


class Jammed(RuntimeError):
    pass


@toolpath.tool
def count_to(n: int):
    """Count, one number at a time."""
    for i in range(1, n + 1):
        yield {"n": i}


@toolpath.tool
def jams_at(n: int):
    for i in range(1, n + 1):
        if i == n:
            raise Jammed(f"jammed at {i}")
        yield i


@toolpath.tool
async def stream_words(text: str):
    for word in text.split():
        await asyncio.sleep(0)
        yield word


@toolpath.tool
async def stream_then_fail(text: str):
    yield text
    await asyncio.sleep(0)
    raise Jammed("the stream broke")


def tool_span(app_spans, name: str):
    found = [s for s in app_spans.get_finished_spans() if s.name == f"execute_tool {name}"]
    assert len(found) == 1, [s.name for s in app_spans.get_finished_spans()]
    return found[0]


def test_the_items_a_generator_yields_are_its_result(tracing, app_spans):
    assert inspect.isgeneratorfunction(count_to) and count_to.__name__ == "count_to"
    assert list(count_to(3)) == [{"n": 1}, {"n": 2}, {"n": 3}]
    attrs = tool_span(app_spans, "count_to").attributes
    assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"n": 3}
    assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_RESULT]) == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert attrs[sc.GEN_AI_TOOL_DESCRIPTION] == "Count, one number at a time."


def test_an_error_raised_while_iterating_is_the_calls_error(tracing, app_spans):
    seen = []
    with pytest.raises(Jammed, match="jammed at 3") as info:
        for item in jams_at(3):
            seen.append(item)
    assert type(info.value) is Jammed and seen == [1, 2]
    span = tool_span(app_spans, "jams_at")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[sc.ERROR_TYPE] == "Jammed"
    assert [e.attributes["exception.message"] for e in span.events if e.name == "exception"] == ["jammed at 3"]
    assert "generator object" not in span.attributes.get(sc.GEN_AI_TOOL_CALL_RESULT, "")


def test_the_span_is_current_while_the_tool_runs_not_while_its_caller_does(tracing, app_spans):
    user = trace.get_tracer("user.code")

    @toolpath.tool
    def pages(n: int):
        for i in range(n):
            with user.start_as_current_span(f"fetch {i}"):
                pass
            yield i

    with user.start_as_current_span("caller"):
        for i in pages(2):
            with user.start_as_current_span(f"use {i}"):
                pass
    spans = spans_by_name(app_spans)
    tool = spans["execute_tool pages"]
    assert tool.parent.span_id == spans["caller"].context.span_id
    assert spans["fetch 0"].parent.span_id == spans["fetch 1"].parent.span_id == tool.context.span_id
    assert spans["use 0"].parent.span_id == spans["use 1"].parent.span_id == spans["caller"].context.span_id
    assert tool.end_time >= spans["fetch 1"].end_time  # it ends when the iteration does


def test_a_generator_never_iterated_leaves_no_span_open(tracing, app_spans):
    @toolpath.agent(name="lazy")
    def lazy(prompt: str) -> str:
        count_to(5)  # made, never iterated: none of the tool's code ran
        return "done"

    assert lazy("go") == "done"
    assert toolpath.flush(timeout=10)
    assert [s.name for s in app_spans.get_finished_spans()] == ["invoke_agent lazy"]
    assert trace.get_current_span() is trace.INVALID_SPAN  # no context left attached


def test_a_generator_closed_early_ends_with_what_it_yielded(tracing, app_spans):
    closed = []

    @toolpath.tool
    def endless():
        try:
            n = 0
            while True:
                n += 1
                yield n
        finally:
            closed.append(trace.get_current_span().get_span_context().span_id)

    for item in endless():
        if item == 2:
            break
    span = tool_span(app_spans, "endless")
    assert json.loads(span.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == [1, 2]
    assert span.status.status_code is StatusCode.UNSET
    assert closed == [span.context.span_id]  # its clean-up ran in its span


def test_a_generator_dropped_half_way_ends_its_span_when_collected(tracing, app_spans):
    gen = count_to(5)
    assert next(gen) == {"n": 1}
    assert app_spans.get_finished_spans() == ()  # still being iterated
    del gen
    gc.collect()
    assert json.loads(tool_span(app_spans, "count_to").attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == [{"n": 1}]


def test_send_throw_and_the_return_value_reach_through(tracing, app_spans):
    @toolpath.tool
    def echo():
        got = yield "ready"
        try:
            yield f"got {got}"
        except KeyError:
            yield "caught"
        return "finished"

    gen = echo()
    assert next(gen) == "ready"
    assert gen.send("x") == "got x"
    assert gen.throw(KeyError("k")) == "caught"
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "finished"
    assert json.loads(tool_span(app_spans, "echo").attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == ["ready", "got x",
                                                                                                "caught"]  # fmt: skip


async def test_an_async_generator_is_traced_over_its_iteration(tracing, app_spans):
    assert inspect.isasyncgenfunction(stream_words)
    assert [word async for word in stream_words("a b c")] == ["a", "b", "c"]
    assert json.loads(tool_span(app_spans, "stream_words").attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == ["a", "b", "c"]
    seen = []
    with pytest.raises(Jammed, match="the stream broke"):
        async for item in stream_then_fail("x"):
            seen.append(item)
    assert seen == ["x"]
    span = tool_span(app_spans, "stream_then_fail")
    assert span.status.status_code is StatusCode.ERROR and span.attributes[sc.ERROR_TYPE] == "Jammed"


async def test_an_async_generator_closed_early_ends_its_span(tracing, app_spans):
    gen = stream_words("one two three")
    assert await gen.__anext__() == "one"
    await gen.aclose()
    span = tool_span(app_spans, "stream_words")
    assert json.loads(span.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == ["one"]


def test_the_items_are_cut_like_any_value(store_url, app_spans):
    toolpath.shutdown()
    toolpath.init(store=store_url, max_value_length=200)
    assert sum(1 for _ in count_to(500)) == 500
    attrs = tool_span(app_spans, "count_to").attributes
    assert attrs[sc.GEN_AI_TOOL_CALL_RESULT].startswith('[{"n":1},{"n":2}')
    assert "…[truncated" in attrs[sc.GEN_AI_TOOL_CALL_RESULT]
    assert sc.GEN_AI_TOOL_CALL_RESULT in attrs[sc.TOOLPATH_TRUNCATED]


def test_the_stored_call_has_the_items_and_the_error(tracing):
    @toolpath.agent(name="streamer")
    def streamer(prompt: str) -> str:
        words = list(count_to(2))
        with contextlib.suppress(Jammed):
            list(jams_at(2))
        return f"{len(words)} items"

    streamer("go", session_id="s-gen")
    assert toolpath.flush(timeout=10)
    [invocation] = tracing.store.list_invocations()
    counted, jammed = invocation.tool_calls
    assert (counted.name, counted.result, counted.error) == ("count_to", [{"n": 1}, {"n": 2}], None)
    assert jammed.name == "jams_at" and jammed.error.endswith("Jammed: jammed at 2")
