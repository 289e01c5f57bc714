"""One poisoned span never costs its batch: values no store column takes (NUL, NaN, times past 2**63, names over
their column, JSON nested a thousand deep, an operation name that is a list) mixed into real batches posted to the
collector on 127.0.0.1, on SQLite and PostgreSQL. Every good run is stored, every poisoned one is cleaned, stored
and marked, and the answer is 200; a span the store still refuses is quarantined alone; a store that is down is
still a 503."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from sqlalchemy import text

from tests.helpers.builders import length_delimited, otlp_json
from tests.helpers.collector import free_port
from toolpath.collector.grpc_server import TRACE_SERVICE, make_grpc_server
from toolpath.collector.http import HttpServer
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import Limits
from toolpath.model import invocation_key
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc

DEEP_ARRAY = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a":' * 1000 + "1" + "}" * 1000
GOOD_RUNS = 100


def trace_id(n: int) -> bytes:
    return n.to_bytes(16, "big")


def span_id(n: int, k: int) -> bytes:
    return (n * 16 + k).to_bytes(8, "big")


def put(span: Span, key: str, value: object) -> None:
    """Set attribute ``key`` (a Python value, or an AnyValue as is)."""
    kv = span.attributes.add(key=key)
    if isinstance(value, AnyValue):
        kv.value.CopyFrom(value)
    elif isinstance(value, str):
        kv.value.string_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    else:
        raise TypeError(value)


def agent_run(request: ExportTraceServiceRequest, n: int, *, tools: int = 2) -> tuple[Span, list[Span]]:
    """Agent run ``n`` (trace ``n``, session ``s-n``): an ``invoke_agent`` span and ``tools`` tool spans."""
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = "poison-test"
    agent = scope.spans.add(trace_id=trace_id(n), span_id=span_id(n, 0), name="invoke_agent bot", kind=1,
                            start_time_unix_nano=1_000 + n, end_time_unix_nano=90_000 + n)  # fmt: skip
    put(agent, sc.GEN_AI_OPERATION_NAME, "invoke_agent")
    put(agent, sc.GEN_AI_AGENT_NAME, "bot")
    put(agent, sc.GEN_AI_CONVERSATION_ID, f"s-{n}")
    calls = []
    for k in range(1, tools + 1):
        tool = scope.spans.add(trace_id=trace_id(n), span_id=span_id(n, k), parent_span_id=span_id(n, 0),
                               name=f"execute_tool t{k}", kind=1, start_time_unix_nano=2_000 + k,
                               end_time_unix_nano=3_000 + k)  # fmt: skip
        put(tool, sc.GEN_AI_OPERATION_NAME, "execute_tool")
        put(tool, sc.GEN_AI_TOOL_NAME, f"t{k}")
        put(tool, sc.GEN_AI_TOOL_CALL_ID, f"call-{n}-{k}")
        put(tool, sc.GEN_AI_TOOL_CALL_ARGUMENTS, json.dumps({"k": k}))
        put(tool, sc.GEN_AI_TOOL_CALL_RESULT, json.dumps({"ok": True}))
        calls.append(tool)
    return agent, calls


def array(*items: str) -> AnyValue:
    value = AnyValue()
    for item in items:
        value.array_value.values.add(string_value=item)
    return value


def kvlist(**items: str) -> AnyValue:
    value = AnyValue()
    for key, item in items.items():
        value.kvlist_value.values.add(key=key, value=AnyValue(string_value=item))
    return value


def _deep_json(agent: Span, tools: list[Span]) -> None:
    del tools[0].attributes[-1]  # the result
    put(tools[0], sc.GEN_AI_TOOL_CALL_RESULT, DEEP_ARRAY)
    del tools[1].attributes[-2]  # the arguments
    put(tools[1], sc.GEN_AI_TOOL_CALL_ARGUMENTS, DEEP_OBJECT)


def _operation_array(agent: Span, tools: list[Span]) -> None:
    tools[0].attributes[0].value.CopyFrom(array("execute_tool"))
    tools[1].attributes[0].value.CopyFrom(kvlist(name="execute_tool"))


def _huge_start_time(agent: Span, tools: list[Span]) -> None:
    agent.start_time_unix_nano = 2**64 - 1  # fixed64: valid OTLP
    agent.end_time_unix_nano = 2**63
    tools[0].start_time_unix_nano = 2**63


def _nul_characters(agent: Span, tools: list[Span]) -> None:
    agent.name = "invoke_agent b\x00t"
    put(
        agent,
        sc.GEN_AI_INPUT_MESSAGES,
        json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi\x00"}]}]),
    )
    tools[0].attributes[-1].value.string_value = "ok\x00done"  # a NUL character in a string
    tools[1].attributes[-1].value.string_value = '{"note": "a\\u0000b", "k\\u0000": 1}'  # and in JSON


def _nan_and_infinity(agent: Span, tools: list[Span]) -> None:
    put(agent, "app.score", float("nan"))
    put(tools[0], "app.ratio", float("inf"))
    tools[1].attributes[-2].value.string_value = '{"x": NaN, "y": -Infinity}'
    tools[1].attributes[-1].value.string_value = "[Infinity]"


def _too_long(agent: Span, tools: list[Span]) -> None:
    agent.name = "invoke_agent " + "n" * 5000
    agent.attributes[2].value.string_value = "s" * 1000  # the session id
    agent.attributes[1].value.string_value = "a" * 1000  # the agent name
    tools[0].attributes[1].value.string_value = "t" * 1000  # the tool name
    tools[0].attributes[2].value.string_value = "c" * 1000  # the call id


POISONS: dict[str, Callable[[Span, list[Span]], None]] = {
    "json nested 1000 deep": _deep_json,
    "operation name as array and kvlist": _operation_array,
    "start time past 2**63": _huge_start_time,
    "NUL characters in strings and JSON": _nul_characters,
    "NaN and infinity": _nan_and_infinity,
    "names and ids over their column": _too_long,
}


@pytest.fixture
def collector(store) -> Iterator[tuple[HttpServer, Ingestor, Store]]:
    ingestor = Ingestor(store, limits=Limits())
    server = HttpServer(ingestor, "127.0.0.1", 0).start()
    deadline = time.monotonic() + 10
    while not server.server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield server, ingestor, store
    server.shutdown(timeout=15)


def post(port: int, body: bytes, content_type: str = "application/x-protobuf") -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=body, method="POST")
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code


def partial_success(port: int, body: bytes):
    """Post a protobuf body; the reply's ``partial_success`` (the answer must be 200)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/traces", data=body, headers={"Content-Type": "application/x-protobuf"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        assert reply.status == 200
        return ExportTraceServiceResponse.FromString(reply.read()).partial_success


def good_and_poisoned() -> tuple[ExportTraceServiceRequest, dict[str, int]]:
    """One request: the good runs, and one run per poison, mixed in."""
    request = ExportTraceServiceRequest()
    poisoned = {}
    for n in range(1, GOOD_RUNS + 1):
        agent_run(request, n)
        if n % 15 == 0 and len(poisoned) < len(POISONS):
            name = list(POISONS)[len(poisoned)]
            poisoned[name] = 1000 + n
            POISONS[name](*agent_run(request, 1000 + n))
    return request, poisoned


def spans_of(store: Store, n: int) -> dict[int, object]:
    """The stored spans of trace ``n``, by number (0: the agent span)."""
    numbers = {span_id(n, k).hex(): k for k in range(16)}
    return {numbers[s.span_id]: s for s in store.spans_of_trace(trace_id(n).hex())}


def assert_good_runs_stored(store: Store) -> None:
    for n in range(1, GOOD_RUNS + 1):
        inv = store.get_invocation(invocation_key(trace_id(n).hex(), span_id(n, 0).hex()))
        assert inv is not None, n
        assert (inv.session_id, [c.name for c in inv.tool_calls]) == (f"s-{n}", ["t1", "t2"])
        assert [c.result for c in inv.tool_calls] == [{"ok": True}, {"ok": True}]


def test_poisoned_spans_mixed_into_a_batch_are_cleaned_and_stored_with_every_good_run(collector):
    server, ingestor, store = collector
    request, poisoned = good_and_poisoned()
    assert post(server.port, request.SerializeToString()) == 200
    assert_good_runs_stored(store)
    assert ingestor.spans_stored == GOOD_RUNS * 3 + len(POISONS) * 3
    assert ingestor.limits.hits["spans_quarantined"] == 0
    runs = {name: store.get_invocation(invocation_key(trace_id(n).hex(), span_id(n, 0).hex()))
            for name, n in poisoned.items()}  # fmt: skip
    for name, n in poisoned.items():
        assert len(store.spans_of_trace(trace_id(n).hex())) == 3, name  # every span of it is stored

    deep = runs["json nested 1000 deep"]
    assert [c.result for c in deep.tool_calls] == [DEEP_ARRAY, {"ok": True}]  # kept as the text it is
    assert deep.tool_calls[1].args == {"input": DEEP_OBJECT}

    listed = runs["operation name as array and kvlist"]
    # an operation name that is not a string names no operation; the spans are tools by their name (ADK 1.x's rule)
    assert [c.name for c in listed.tool_calls] == ["t1", "t2"]
    tool = spans_of(store, poisoned["operation name as array and kvlist"])[1]
    assert tool.attributes[sc.GEN_AI_OPERATION_NAME] == ["execute_tool"]

    late = runs["start time past 2**63"]
    assert late.started_at.year == 2255 and late.latency_seconds is None
    root = spans_of(store, poisoned["start time past 2**63"])[0]
    assert root.start_time == 9 * 10**18 and root.attributes[sc.TOOLPATH_CLEANED] == ["start_time", "end_time"]

    nul = runs["NUL characters in strings and JSON"]
    assert nul.prompt == "hi\ufffd"
    assert [c.result for c in nul.tool_calls] == ["ok\ufffddone", {"note": "a\ufffdb", "k\ufffd": 1}]
    assert "tool_calls" in nul.attributes[sc.TOOLPATH_CLEANED]
    root = spans_of(store, poisoned["NUL characters in strings and JSON"])[0]
    assert root.name == "invoke_agent b\ufffdt" and "name" in root.attributes[sc.TOOLPATH_CLEANED]

    nan = runs["NaN and infinity"]
    assert nan.tool_calls[1].args == {"x": "NaN", "y": "-Infinity"} and nan.tool_calls[1].result == ["Infinity"]
    assert spans_of(store, poisoned["NaN and infinity"])[0].attributes["app.score"] == "NaN"

    long = runs["names and ids over their column"]
    assert len(long.session_id) == 256 and long.session_id.startswith("s" * 200)
    assert len(long.agent_name) == 256 and long.tool_calls[0].name.startswith("t" * 200)
    assert len(long.tool_calls[0].call_id) == 256
    assert {"session_id", "agent_name", "tool_calls"} <= set(long.attributes[sc.TOOLPATH_CLEANED])
    assert [c.name for c in long.tool_calls] == [long.tool_calls[0].name, "t2"]
    assert ingestor.limits.hits["spans_cleaned"] >= 7


def test_a_poisoned_span_stored_alone_never_blocks_its_trace(collector):
    """The tool spans (JSON nested 1000 deep, NUL, NaN) come first, their agent span later: the run is rebuilt."""
    server, _, store = collector
    request = ExportTraceServiceRequest()
    agent, tools = agent_run(request, 7)
    _deep_json(agent, tools)
    tools[0].attributes[3].value.string_value = '{"k": NaN, "z": "\\u0000"}'
    first, second = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    for target, spans in ((first, tools), (second, [agent])):
        scope = target.resource_spans.add().scope_spans.add()
        scope.spans.extend(spans)
    assert post(server.port, first.SerializeToString()) == 200
    assert store.list_invocations() == []
    assert post(server.port, second.SerializeToString()) == 200
    [inv] = store.list_invocations()
    assert [c.args for c in inv.tool_calls] == [{"k": "NaN", "z": "\ufffd"}, {"input": DEEP_OBJECT}]


def test_a_json_body_with_poisoned_values_is_stored(collector):
    server, _, store = collector
    body = {
        "resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "invoke_agent x\u0000", "kind": 1,
             "startTimeUnixNano": str(2**64 - 1), "endTimeUnixNano": "1",
             "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                            {"key": "bad\u0000key", "value": {"doubleValue": "NaN"}},
                            {"key": "broken", "value": {"stringValue": "\ud800 alone"}},
                            {"key": "deep", "value": "DEEP"}]},
            {"traceId": "ab" * 16, "spanId": "ce" * 8, "parentSpanId": "cd" * 8, "name": "execute_tool t",
             "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                            {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}}]},
        ]}]}]
    }  # fmt: skip
    # a key-value list nested 200 deep: JSON reads it, protobuf cannot nest messages that deep
    deep = '{"kvlistValue": {"values": [{"key": "k", "value": ' * 200 + '{"stringValue": "x"}' + "}]}}" * 200
    text = json.dumps(body).replace('"DEEP"', deep)
    assert post(server.port, text.encode(), "application/json") == 200
    spans = {s.span_id: s for s in store.spans_of_trace("ab" * 16)}
    root = spans["cd" * 8]
    assert root.attributes["bad\ufffdkey"] == "NaN" and root.attributes["broken"] == "\ufffd alone"
    value, depth = root.attributes["deep"], 0
    while isinstance(value, dict):
        value, depth = value["k"], depth + 1
    assert (depth, value) == (16, sc.NESTING_MARKER)
    assert {"broken", "deep"} <= set(root.attributes[sc.TOOLPATH_CLEANED])
    [inv] = store.list_invocations()
    assert [c.name for c in inv.tool_calls] == ["t"]


@pytest.fixture
def refusing_store(store) -> Store:
    """The store, with a trigger that makes the database itself refuse any span named ``refuse me``."""
    with store.engine.begin() as conn:
        if store.dialect == "sqlite":
            conn.execute(text("CREATE TRIGGER refuse BEFORE INSERT ON spans WHEN NEW.name = 'refuse me' "
                              "BEGIN SELECT RAISE(ABORT, 'refused'); END"))  # fmt: skip
        else:
            conn.execute(text("CREATE OR REPLACE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                              "IF NEW.name = 'refuse me' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$ "
                              "LANGUAGE plpgsql"))  # fmt: skip
            conn.execute(text("CREATE TRIGGER refuse BEFORE INSERT ON spans FOR EACH ROW EXECUTE FUNCTION refuse()"))
    yield store
    with store.engine.begin() as conn:
        conn.execute(text("DROP TRIGGER refuse" + ("" if store.dialect == "sqlite" else " ON spans")))


def test_a_span_the_store_still_refuses_is_quarantined_alone(refusing_store):
    ingestor = Ingestor(refusing_store)
    request = ExportTraceServiceRequest()
    for n in range(1, 21):
        _, tools = agent_run(request, n)
        if n == 11:
            tools[1].name = "refuse me"
    body = request.SerializeToString()
    headers = {"Content-Type": "application/x-protobuf", "Content-Length": str(len(body))}
    reply = ingestor.handle_http("/v1/traces", headers, lambda _n: body)
    assert reply.status == 200
    outcome = ExportTraceServiceResponse.FromString(reply.body).partial_success
    assert outcome.rejected_spans == 1 and "quarantined" in outcome.error_message  # OTLP's partial success
    assert ingestor.limits.hits["spans_quarantined"] == 1
    assert ingestor.spans_stored == 20 * 3 - 1
    invocations = {inv.trace_id: inv for inv in refusing_store.list_invocations()}
    assert len(invocations) == 20
    assert [c.name for c in invocations[trace_id(11).hex()].tool_calls] == ["t1"]  # its other spans are stored


def test_a_span_without_valid_ids_is_rejected_alone(collector):
    """OTLP's partial success: the spans that can be read are stored, the others counted in the reply."""
    server, ingestor, store = collector
    request = ExportTraceServiceRequest()
    for n in (1, 2):
        agent_run(request, n)
    request.resource_spans[0].scope_spans[0].spans[1].trace_id = b"\x01" * 8  # a tool span of run 1
    request.resource_spans[1].scope_spans[0].spans[0].span_id = b""  # the agent span of run 2
    outcome = partial_success(server.port, request.SerializeToString())
    assert outcome.rejected_spans == 2 and "trace_id must be 16 bytes" in outcome.error_message
    assert ingestor.limits.hits["spans_rejected"] == 2
    assert [len(i.tool_calls) for i in store.list_invocations()] == [1]
    assert len(store.spans_of_trace(trace_id(2).hex())) == 2


def undecodable_body() -> bytes:
    """Two good runs, then a span whose name is not UTF-8 and one with a value nested past protobuf's depth."""
    request = ExportTraceServiceRequest()
    for n in (1, 2):
        agent_run(request, n)
    not_utf8 = Span(trace_id=trace_id(3), span_id=span_id(3, 0), name="NAME").SerializeToString()
    not_utf8 = not_utf8.replace(b"NAME", b"N\xff\xfeM")
    deep = AnyValue(string_value="x").SerializeToString()
    for _ in range(60):  # AnyValue{kvlist_value{values[KeyValue{key, value}]}}, 60 deep
        deep = length_delimited(6, length_delimited(1, length_delimited(1, b"k") + length_delimited(2, deep)))
    too_deep = Span(trace_id=trace_id(4), span_id=span_id(4, 0), name="deep").SerializeToString()
    too_deep += length_delimited(9, length_delimited(1, b"deep") + length_delimited(2, deep))
    return request.SerializeToString() + length_delimited(
        1, length_delimited(2, length_delimited(2, not_utf8) + length_delimited(2, too_deep))
    )


def test_spans_protobuf_cannot_decode_are_rejected_alone(collector):
    """Such a span makes the whole body fail to parse; it is left out alone (OTLP's partial success) and the rest
    of the request is stored."""
    server, ingestor, store = collector
    body = undecodable_body()
    with pytest.raises(Exception, match="Error parsing"):
        ExportTraceServiceRequest.FromString(body)  # as a whole, protobuf refuses it
    outcome = partial_success(server.port, body)
    assert outcome.rejected_spans == 2 and "could not be decoded" in outcome.error_message
    assert sorted(len(i.tool_calls) for i in store.list_invocations()) == [2, 2]
    assert ingestor.limits.hits["spans_rejected"] == 2


def test_over_grpc_too(tmp_path):
    import grpc

    store = Store(f"sqlite:///{tmp_path / 'grpc.db'}")
    ingestor = Ingestor(store)
    port = free_port()
    server = make_grpc_server(ingestor, "127.0.0.1", port)
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = channel.unary_unary(f"/{TRACE_SERVICE}/Export", request_serializer=None,
                                         response_deserializer=ExportTraceServiceResponse.FromString)  # fmt: skip
            outcome = export(undecodable_body(), timeout=30).partial_success
            with pytest.raises(grpc.RpcError) as refused:
                export(b"\xff\xff\xff", timeout=30)
    finally:
        server.stop(0)
    assert outcome.rejected_spans == 2
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert sorted(len(i.tool_calls) for i in store.list_invocations()) == [2, 2]
    store.close()


def test_a_store_that_is_down_still_gets_503(tmp_path):
    down = Store(f"postgresql+psycopg://toolpath@127.0.0.1:{free_port()}/toolpath", create=False)
    ingestor = Ingestor(down)
    request = ExportTraceServiceRequest()
    agent_run(request, 1)
    body = request.SerializeToString()
    headers = {"Content-Type": "application/x-protobuf", "Content-Length": str(len(body))}
    reply = ingestor.handle_http("/v1/traces", headers, lambda _n: body)
    assert reply.status == 503 and reply.headers["Retry-After"] == "1"
    assert ingestor.limits.hits["spans_quarantined"] == 0


def test_a_rejected_spans_reason_is_redacted_then_cut_before_it_goes_back(store):
    """A span refused for its ids has its name told back in the partial success, redacted first and only then
    cut: a token at the cut, or an e-mail address, never reaches the sender's logs."""
    from toolpath.redact import Redactor

    token = "ghp_" + "Z" * 36
    ingestor = Ingestor(store, limits=Limits(), redactor=Redactor())
    server = HttpServer(ingestor, "127.0.0.1", 0).start()
    try:
        deadline = time.monotonic() + 10
        while not server.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        request = ExportTraceServiceRequest()
        agent_run(request, 1)
        bad = request.resource_spans[0].scope_spans[0].spans[1]
        bad.trace_id = b"\x01" * 8
        bad.name = "x" * 190 + token + " for ops@example.com"  # the old 200-character cut fell inside the token
        outcome = partial_success(server.port, request.SerializeToString())
    finally:
        server.shutdown(timeout=15)
    assert outcome.rejected_spans == 1 and "trace_id must be 16 bytes" in outcome.error_message
    assert "ghp_" not in outcome.error_message and "ZZZZZZ" not in outcome.error_message
    assert "ops@example.com" not in outcome.error_message


POISONED_JSON = {  # a value no OTLP/JSON decoding takes as it is, in an attribute or field of one span
    "kvlist 300 deep": (
        "attr",
        '{"kvlistValue": {"values": [{"key": "k", "value": ' * 300 + '{"stringValue": "x"}' + "}]}}" * 300,
    ),
    "array 1000 deep": ("attr", '{"arrayValue": {"values": [' * 1000 + '{"stringValue": "x"}' + "]}}" * 1000),
    "time past 2^64": ("field", ("startTimeUnixNano", str(2**64 + 10))),
    "negative time": ("field", ("endTimeUnixNano", "-5")),
    "integer of 2^70": ("attr", '{"intValue": "' + str(2**70) + '"}'),
}


@pytest.mark.parametrize("kind", sorted(POISONED_JSON))
def test_one_poisoned_json_span_costs_only_itself(collector, kind):
    """A span holding one poisoned value, between good runs of the same request: every good run is stored, the
    poisoned span is repaired or named in the partial success, never the whole request refused."""
    server, _, store = collector
    good = [json.loads(otlp_json(f"{n:032x}", 2)) for n in (1, 2, 3)]
    bad = json.loads(otlp_json("ee" * 16, 1))
    span = bad["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    where, value = POISONED_JSON[kind]
    if where == "attr":
        span["attributes"].append({"key": "poison", "value": "POISON"})
        text = json.dumps(
            {
                "resourceSpans": [
                    *good[0]["resourceSpans"],
                    *bad["resourceSpans"],
                    *good[1]["resourceSpans"],
                    *good[2]["resourceSpans"],
                ]
            }
        )
        text = text.replace('"POISON"', value)
    else:
        field, raw = value
        span[field] = "POISON"
        text = json.dumps(
            {
                "resourceSpans": [
                    *good[0]["resourceSpans"],
                    *bad["resourceSpans"],
                    *good[1]["resourceSpans"],
                    *good[2]["resourceSpans"],
                ]
            }
        )
        text = text.replace('"POISON"', raw if raw.startswith("-") else f'"{raw}"')
    assert post(server.port, text.encode(), "application/json") == 200
    for n in (1, 2, 3):
        [inv] = [i for i in store.list_invocations() if i.trace_id == f"{n:032x}"]
        assert len(inv.tool_calls) == 2
    assert len(store.spans_of_trace("ee" * 16)) >= 1  # the poisoned span's agent run is stored too
