"""What one export cannot show: a circle of parents whose spans come in different exports is stored (each export
was accepted) but said — a warning in the closing export's ``partial_success``, a count in the limit hits (the
stop summary, ``toolpath_limit_hits_total``) and a log line; and spans the trace limit turns away are told back
as rejected, naming the limit, over OTLP/HTTP and gRPC, with the stop summary counting only what the store holds.
On a real collector on 127.0.0.1, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.helpers.collector import free_port
from tests.helpers.otlp_json_spans import TRACE, body, good_run, post, span
from toolpath.collector.grpc_server import TRACE_SERVICE, make_grpc_server
from toolpath.collector.http import HttpServer
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import Limits
from toolpath.collector.service import summary
from toolpath.store.store import Store

D, E, F = "d" * 16, "e" * 16, "f" * 16


def start(store: Store, limits: Limits) -> tuple[HttpServer, Ingestor]:
    ingestor = Ingestor(store, limits=limits)
    ingestor.metrics.watch(limits=lambda: ingestor.limits.hits)
    server = HttpServer(ingestor, "127.0.0.1", 0).start()
    deadline = time.monotonic() + 10
    while not server.server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    return server, ingestor


@pytest.fixture
def collector(store) -> Iterator[tuple[HttpServer, Ingestor, Store]]:
    server, ingestor = start(store, Limits(max_spans_per_trace=None))
    yield server, ingestor, store
    server.shutdown(timeout=15)


def limit_hits(ingestor: Ingestor, kind: str) -> float | None:
    return ingestor.metrics.registry.get_sample_value("toolpath_limit_hits_total", {"limit": kind})


SPLIT = {
    "two spans, one per export": ([span(D, E, "p1", "invoke_agent")], [span(E, D, "p2")], f"{E} → {D} → {E}"),
    "three spans over two exports": (
        [span(D, E, "p1"), span(E, F, "p2", "invoke_agent")],
        [span(F, D, "p3")],
        f"{F} → {D} → {E} → {F}",
    ),
}


@pytest.mark.parametrize("case", SPLIT)
def test_a_circle_of_parents_split_across_exports_is_said(collector, caplog, case):
    server, ingestor, store = collector
    first, second, circle = SPLIT[case]
    status, reply = post(server.port, body([*good_run(), *first]))
    assert (status, reply) == (200, {})  # nothing wrong yet: the parent may still come
    with caplog.at_level(logging.WARNING, "toolpath.collector.ingestor"):
        status, reply = post(server.port, body(second))
    assert status == 200
    said = reply["partialSuccess"]
    assert "rejectedSpans" not in said  # stored: OTLP's form of a warning, a message and nothing rejected
    assert f"trace {TRACE}: spans whose parents go round a circle (span ids {circle})" in said["errorMessage"]
    assert "can never be a run" in said["errorMessage"]
    cyclic = len(first) + len(second)
    assert ingestor.limits.hits["spans_in_parent_cycles"] == cyclic
    assert limit_hits(ingestor, "spans_in_parent_cycles") == cyclic
    assert f"spans in parent cycles: {cyclic}" in summary(ingestor.spans_stored, ingestor.limits.hits)
    assert any(circle in r.getMessage() and "can never be a run" in r.getMessage() for r in caplog.records)
    assert ingestor.spans_stored == store.counts()["spans"] == 3 + cyclic
    [invocation] = store.list_invocations()  # the good run alone
    assert [c.name for c in invocation.tool_calls] == ["t1", "t2"]


def test_a_circle_is_said_once_not_again_for_each_span_below_it(collector):
    server, ingestor, _ = collector
    post(server.port, body([span(D, E, "p1")]))
    post(server.port, body([span(E, D, "p2")]))
    status, reply = post(server.port, body([span(F, D, "below", "invoke_agent")]))
    assert (status, reply) == (200, {})
    assert ingestor.limits.hits["spans_in_parent_cycles"] == 2


def test_a_span_whose_parent_arrives_later_is_no_circle(collector):
    server, ingestor, store = collector
    tools, agent = good_run()[1:], good_run()[:1]
    assert post(server.port, body(tools)) == (200, {})
    assert post(server.port, body(agent)) == (200, {})
    assert "spans_in_parent_cycles" not in ingestor.limits.hits
    [invocation] = store.list_invocations()
    assert [c.name for c in invocation.tool_calls] == ["t1", "t2"]


def test_spans_over_the_trace_limit_are_rejected_naming_the_limit_over_http(store):
    server, ingestor = start(store, Limits(max_spans_per_trace=2))
    try:
        status, reply = post(server.port, body(good_run()))
        assert status == 200
        assert reply["partialSuccess"] == {
            "rejectedSpans": "1",
            "errorMessage": "1 span(s) over the limit of 2 spans per trace (max_spans_per_trace) were not stored",
        }
        more = [span("9" * 16, "a" * 16, "t3", "execute_tool")]
        assert post(server.port, body(more))[1]["partialSuccess"]["rejectedSpans"] == "1"  # the trace is full
    finally:
        server.shutdown(timeout=15)
    held = store.counts()["spans"]
    assert held == ingestor.spans_stored == 2
    assert summary(ingestor.spans_stored, ingestor.limits.hits).startswith(
        "stopped; 2 span(s) stored; limits hit (spans over trace limit: 2)"
    )


def test_spans_over_the_trace_limit_are_rejected_naming_the_limit_over_grpc(tmp_path):
    import grpc

    store = Store(f"sqlite:///{tmp_path / 'grpc.db'}")
    ingestor = Ingestor(store, limits=Limits(max_spans_per_trace=2))
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for n in range(5):
        spans.append(Span(trace_id=b"\x07" * 16, span_id=bytes([n + 1]) * 8, name=f"s{n}", start_time_unix_nano=1,
                          end_time_unix_nano=2))  # fmt: skip
    port = free_port()
    server = make_grpc_server(ingestor, "127.0.0.1", port)
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = channel.unary_unary(f"/{TRACE_SERVICE}/Export", request_serializer=None,
                                         response_deserializer=ExportTraceServiceResponse.FromString)  # fmt: skip
            outcome = export(request.SerializeToString(), timeout=30).partial_success
    finally:
        server.stop(0)
    assert outcome.rejected_spans == 3
    assert (
        outcome.error_message == "3 span(s) over the limit of 2 spans per trace (max_spans_per_trace) were not stored"
    )
    assert store.counts()["spans"] == ingestor.spans_stored == 2
    store.close()
