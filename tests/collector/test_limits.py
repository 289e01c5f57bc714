"""Limits at ingestion: a long attribute is cut and marked, spans past a trace's limit are not stored, an
invocation's tool calls past the limit are dropped and the invocation says how many — each hit counted."""

from __future__ import annotations

from tests.helpers.builders import otlp_json
from tests.helpers.collector import Collector
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import TOOL_CALLS_DROPPED, Limits
from toolpath.store.store import Store


def post(ingestor: Ingestor, body: bytes) -> int:
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    return ingestor.handle_http("/v1/traces", headers, lambda n: body[:n]).status


def test_limits_cut_drop_and_mark(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'l.db'}")
    limits = Limits(max_attribute_length=100, max_spans_per_trace=8, max_tool_calls=5)
    ingestor = Ingestor(store, limits=limits)
    assert post(ingestor, otlp_json("1" * 32, tool_calls=3, big="x" * 500)) == 200
    [span] = [s for s in store.spans_of_trace("1" * 32) if s.span_id == f"f{1:015x}"]
    arguments = span.attributes["gen_ai.tool.call.arguments"]
    assert len(arguments) < 150 and arguments.endswith("chars]")
    assert span.attributes["toolpath.truncated"] == ["gen_ai.tool.call.arguments"]

    assert post(ingestor, otlp_json("2" * 32, tool_calls=12)) == 200
    assert len(store.spans_of_trace("2" * 32)) == 8  # the agent span and 7 tool spans
    [inv] = [i for i in store.list_invocations() if i.trace_id == "2" * 32]
    assert len(inv.tool_calls) == 5 and inv.attributes[TOOL_CALLS_DROPPED] == 2
    assert limits.hits == {"attribute_values_cut": 3, "spans_over_trace_limit": 5, "tool_calls_dropped": 2}


def test_collect_reports_limits_hit(tmp_path):
    collector = Collector(tmp_path, None, "--max-tool-calls", "2").start()
    try:
        assert collector.post(otlp_json("3" * 32, tool_calls=4), "application/json")[0] == 200
        [inv] = collector.store().list_invocations()
        assert [c.args["i"] for c in inv.tool_calls] == [0, 1] and inv.attributes[TOOL_CALLS_DROPPED] == 2
    finally:
        collector.stop()
    assert "limits hit (tool calls dropped: 2)" in collector.process.stdout.read()
