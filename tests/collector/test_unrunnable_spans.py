"""Spans that could never take their place in a trace (their own parent, parents that go round a circle, ids of
the wrong length or all zeros) are refused alone, in OTLP's ``partial_success`` with the reason, counted and
logged, while the rest of their export is stored; a request whose shape is not OTLP's is a 400; and what the
collector says it stored is what the store holds. Over HTTP on 127.0.0.1, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from tests.helpers.otlp_json_spans import AGENT, TRACE, body, good_run, post, span
from toolpath.collector.http import HttpServer
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import Limits
from toolpath.collector.service import summary
from toolpath.model import invocation_key
from toolpath.store.store import Store


@pytest.fixture
def collector(store) -> Iterator[tuple[HttpServer, Ingestor, Store]]:
    ingestor = Ingestor(store, limits=Limits(max_spans_per_trace=None))
    server = HttpServer(ingestor, "127.0.0.1", 0).start()
    deadline = time.monotonic() + 10
    while not server.server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield server, ingestor, store
    server.shutdown(timeout=15)


REFUSED = {
    "its own parent": ([span("d" * 16, "d" * 16, "loop", "execute_tool")], 1, "'loop': its parent_span_id is its "
                       "own span_id"),
    "parents in a circle": ([span("d" * 16, "e" * 16, "p1"), span("e" * 16, "f" * 16, "p2"),
                             span("f" * 16, "d" * 16, "p3", "invoke_agent")], 3,
                            "'p1': its parents go round a circle (span ids dddddddddddddddd → eeeeeeeeeeeeeeee → "
                            "ffffffffffffffff → dddddddddddddddd)"),
    "trace id of zeros": ([span("d" * 16, None, "zero", "invoke_agent", trace="0" * 32)], 1,
                          "'zero': trace_id is all zeros"),
    "span id of zeros": ([span("0" * 16, AGENT, "zero", "execute_tool")], 1, "'zero': span_id is all zeros"),
    "parent id of 12 bytes": ([span("d" * 16, "1" * 24, "odd", "execute_tool")], 1,
                              "'odd': parent_span_id must be 8 bytes, or empty for a root span"),
    "parent id of 4 bytes": ([span("d" * 16, "01020304", "odd", "execute_tool")], 1,
                             "'odd': parent_span_id must be 8 bytes"),
    "a span that is no object": ([5], 1, "a span is a JSON number, not an object"),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_a_span_that_cannot_join_its_trace_is_refused_alone_with_its_reason(collector, caplog, case):
    server, ingestor, store = collector
    bad, count, reason = REFUSED[case]
    with caplog.at_level(logging.WARNING, "toolpath.collector.ingestor"):
        status, reply = post(server.port, body([*good_run(), *bad]))
    assert status == 200
    assert reply["partialSuccess"]["rejectedSpans"] == str(count)
    assert reason in reply["partialSuccess"]["errorMessage"]
    assert ingestor.limits.hits["spans_rejected"] == count
    assert any(reason in record.getMessage() for record in caplog.records)  # and logged
    assert ingestor.spans_stored == store.counts()["spans"] == 3  # the good run, and nothing of the bad spans
    [invocation] = store.list_invocations()
    assert [c.name for c in invocation.tool_calls] == ["t1", "t2"]


def test_a_span_below_a_circle_is_kept_and_the_circle_refused(collector):
    """A run whose parent sits in a circle of parents: the circle is refused, the run is stored as a run of its
    own (its parent never arrives), as the store treats any span whose parent it does not hold."""
    server, ingestor, store = collector
    circle = [span("d" * 16, "e" * 16, "p1"), span("e" * 16, "d" * 16, "p2")]
    below = [span("9" * 16, "d" * 16, "sub", "invoke_agent"), span("8" * 16, "9" * 16, "t3", "execute_tool")]
    status, reply = post(server.port, body([*circle, *below]))
    assert (status, reply["partialSuccess"]["rejectedSpans"]) == (200, "2")
    assert [[c.name for c in i.tool_calls] for i in store.list_invocations()] == [["t3"]]
    assert ingestor.spans_stored == store.counts()["spans"] == 2


def test_a_parent_id_of_zeros_is_a_root_as_the_otel_collector_reads_it(collector):
    server, _, store = collector
    run = good_run()
    run[0]["parentSpanId"] = "0" * 16
    status, reply = post(server.port, body(run))
    assert (status, reply) == (200, {})
    invocation = store.get_invocation(invocation_key(TRACE, AGENT))
    assert invocation is not None and [c.name for c in invocation.tool_calls] == ["t1", "t2"]
    assert {s.span_id: s.parent_span_id for s in store.spans_of_trace(TRACE)}[AGENT] is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"resourceSpans": NaN}', "repeated field resourceSpans must be in []"),
        (b'{"resourceSpans": {"scopeSpans": []}}', "repeated field resourceSpans must be in []"),
        (b'{"resourceSpans": [{"scopeSpans": Infinity}]}', "repeated field scopeSpans must be in []"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]}', "repeated field spans must be in []"),
        (body([7, None]), "a span is a JSON number, not an object"),
    ],
)
def test_a_request_not_shaped_as_otlp_is_a_400_not_an_empty_success(collector, data, message):
    server, _, store = collector
    status, reply = post(server.port, data)
    assert status == 400 and message in reply["message"]
    assert store.counts()["spans"] == 0


def test_the_spans_said_stored_are_those_the_store_holds(store):
    """Over the trace limit and sent twice: neither the spans turned away nor a second copy count as stored, in
    the count, the stop summary and ``toolpath_spans_stored_total``."""
    ingestor = Ingestor(store, limits=Limits(max_spans_per_trace=2))
    data = body(good_run())
    headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
    for _ in range(2):
        reply = ingestor.handle_http("/v1/traces", headers, lambda _n: data)
        assert reply.status == 200
    held = store.counts()["spans"]
    assert held == 2
    assert ingestor.spans_stored == held
    assert summary(ingestor.spans_stored, ingestor.limits.hits).startswith("stopped; 2 span(s) stored; limits hit")
    assert ingestor.metrics.registry.get_sample_value("toolpath_spans_stored_total") == held
    unlimited = Ingestor(store, limits=Limits(max_spans_per_trace=None))  # no limit: the count still holds
    unlimited.handle_http("/v1/traces", headers, lambda _n: data)
    assert unlimited.spans_stored == store.counts()["spans"] - held == 1
