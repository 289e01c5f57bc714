"""Test data built the same way in every module that needs it."""

from __future__ import annotations

import json

from tests.helpers import SPANS
from toolpath.collector.otlp import decode
from toolpath.model import Invocation, ToolCall


def otlp_json(trace: str, tool_calls: int, big: str = "", session: str | None = None) -> bytes:
    """An OTLP/JSON export of one GenAI agent run (trace id ``trace``, in ``session`` if given) with
    ``tool_calls`` tool spans whose arguments carry ``big``."""

    def attr(key: str, value: str) -> dict:
        return {"key": key, "value": {"stringValue": value}}

    agent = {
        "traceId": trace, "spanId": "a" + trace[-15:], "name": "invoke_agent bot", "kind": 1,
        "startTimeUnixNano": "1000", "endTimeUnixNano": "9000000",
        "attributes": [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "bot"),
                       attr("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"do {trace}"}]}])),
                       attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]))],
    }  # fmt: skip
    if session is not None:
        agent["attributes"].append(attr("gen_ai.conversation.id", session))
    tools = [
        {
            "traceId": trace,
            "spanId": f"f{i + 1:015x}",
            "parentSpanId": "a" + trace[-15:],
            "name": "execute_tool t",
            "kind": 1,
            "startTimeUnixNano": str(2000 + i),
            "endTimeUnixNano": str(3000 + i),
            "attributes": [
                attr("gen_ai.operation.name", "execute_tool"),
                attr("gen_ai.tool.name", "t"),
                attr("gen_ai.tool.call.arguments", json.dumps({"i": i, "blob": big})),
            ],
        }
        for i in range(tool_calls)
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [agent, *tools]}]}]}).encode()


def invocation(i: int, agent: str = "bot", failure: int = 0) -> Invocation:
    """Invocation number ``i`` of ``agent``: one ``get_weather`` call; ids, session and trace derived from ``i``."""
    return Invocation(
        invocation_id=f"{i:016x}",
        session_id=f"s-{i}",
        agent_name=agent,
        prompt=f"request {i}",
        response="ok",
        tool_calls=[ToolCall(name="get_weather", args={"city": "Paris"})],
        failure=failure,
        trace_id=f"{i:032x}",
    )


def load_spans(source: str, kind: str = "pb") -> list:
    """The span records of fixture export ``source`` (``tests/fixtures/spans``), decoded from protobuf or JSON."""
    body = (SPANS / f"{source}.shared.otlp.{kind}").read_bytes()
    return decode(body, "application/x-protobuf" if kind == "pb" else "application/json")


def spans_by_name(exporter) -> dict:
    """The finished spans an in-memory exporter holds, by name."""
    return {s.name: s for s in exporter.get_finished_spans()}


def split_export(body: bytes, parts: list[list[int]]) -> list[bytes]:
    """An OTLP protobuf export cut into several: request ``k`` holds the spans numbered ``parts[k]`` (in the
    export's own order), under their own resource and scope."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    flat = [(rs, ss, span) for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    bodies = []
    for chosen in parts:
        part = ExportTraceServiceRequest()
        for index in chosen:
            rs, ss, span = flat[index]
            out_rs = part.resource_spans.add()
            out_rs.resource.CopyFrom(rs.resource)
            out_ss = out_rs.scope_spans.add()
            out_ss.scope.CopyFrom(ss.scope)
            out_ss.spans.append(span)
        bodies.append(part.SerializeToString())
    return bodies


def span_count(body: bytes) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def run_key(n: int) -> str:
    """The invocation id of :func:`agent_run` number ``n``."""
    from toolpath.model import invocation_key

    return invocation_key(f"{n:032x}", f"a{n:015x}")


def agent_run(n: int, start_ns: int, session: str, tool_calls: int = 2, late_child_ns: int | None = None) -> list:
    """Span records of GenAI agent run number ``n`` (trace ``n``, agent span ``a…n``) in ``session``, started at
    ``start_ns``, with ``tool_calls`` tool spans a millisecond apart; ``late_child_ns``: one more tool span
    starting then (a trace that goes on past a retention cutoff)."""
    from toolpath.store.spanrecord import SpanRecord

    trace, root = f"{n:032x}", f"a{n:015x}"
    attrs = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot", "gen_ai.conversation.id": session,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"run {n}"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
    }  # fmt: skip
    starts = [start_ns + (i + 1) * 1_000_000 for i in range(tool_calls)]
    if late_child_ns is not None:
        starts.append(late_child_ns)
    end = max([start_ns, *starts]) + 1_000_000
    spans = [SpanRecord(trace, root, None, "invoke_agent bot", 1, start_ns, end, attributes=attrs)]
    for i, start in enumerate(starts):
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i}",
                "gen_ai.tool.call.arguments": json.dumps({"i": i})}  # fmt: skip
        spans.append(
            SpanRecord(trace, f"{n:08x}{i + 1:08x}", root, f"execute_tool t{i}", 1, start, start + 500, attributes=tool)
        )
    return spans


def length_delimited(number: int, payload: bytes) -> bytes:
    """One protobuf field ``number`` holding ``payload`` (wire type 2), for bodies protobuf's classes will not
    write (bytes that are not UTF-8, nesting past its limit)."""
    size, out = len(payload), bytearray([number << 3 | 2])
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + payload
