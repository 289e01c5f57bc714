"""An error raised deep in traced calls fails every span on the way up; each ``exception`` event keeps the innermost
frames of its stack (bounded, saying how many it left out), so the cost per span does not grow with the depth, and
a tool that recurses until Python stops it still raises its RecursionError to its caller."""

from __future__ import annotations

import logging

import pytest

import toolpath
from toolpath.tracer.spans import STACK_FRAMES


def exception_events(app_spans) -> list[dict]:
    return [dict(event.attributes) for span in app_spans.get_finished_spans() for event in span.events
            if event.name == "exception"]  # fmt: skip


def test_each_failed_span_keeps_the_innermost_frames(tracing, app_spans):
    @toolpath.tool
    def dig(depth: int) -> int:
        if depth == 0:
            raise ValueError("rock bottom")
        return dig(depth - 1)

    with pytest.raises(ValueError, match="rock bottom"):
        dig(200)
    events = exception_events(app_spans)
    assert len(events) == 201
    outermost = events[-1]
    assert outermost["exception.type"] == "ValueError" and outermost["exception.message"] == "rock bottom"
    stack = outermost["exception.stacktrace"]
    assert stack.count('File "') == STACK_FRAMES  # of the ~400 frames between this span and the raise
    assert "outer frames left out" in stack and 'raise ValueError("rock bottom")' in stack
    innermost = events[0]["exception.stacktrace"]
    assert "left out" not in innermost and innermost.count('File "') < STACK_FRAMES


def test_a_tool_recursing_to_the_limit_raises_its_recursion_error(tracing, app_spans, caplog):
    @toolpath.tool
    def forever(n: int) -> int:
        return forever(n + 1)

    with caplog.at_level(logging.WARNING, logger="toolpath"), pytest.raises(RecursionError):
        forever(0)
    assert all("Traceback" not in record.getMessage() and record.exc_info is None for record in caplog.records)
    stacks = [e["exception.stacktrace"] for e in exception_events(app_spans)]
    assert stacks and all(s.count('File "') <= STACK_FRAMES for s in stacks)
    assert all("During handling" not in s for s in stacks)  # the chain of failures at the limit: left out
