"""The fast path of protobuf decoding gives exactly the records the standard messages give, and leaves to them
every body it does not vouch for (what protobuf refuses, values nested deep, spans without valid ids)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.helpers.builders import length_delimited
from toolpath.collector import otlp, otlp_values
from toolpath.collector.otlp import decode


def exact(value: Any) -> Any:
    """``value`` with the order of every dict and the type of every leaf made part of equality (``==`` of dicts
    ignores order, and ``True == 1``; NaN is compared as its text)."""
    if isinstance(value, dict):
        return [(key, exact(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [exact(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def rows(records: list[Any]) -> Any:
    return exact([record.to_row() for record in records])


def standard(body: bytes) -> list[Any]:
    """The records of ``body`` read through the standard OTLP messages."""
    return otlp.records(ExportTraceServiceRequest.FromString(body))


def any_value(**kind: Any) -> AnyValue:
    return AnyValue(**kind)


def body_with(spans: list[list[KeyValue | bytes]], *, ids: bool = True) -> bytes:
    """A request of one resource (``service.name``) and one span per list of attributes, framed by hand (protobuf
    would refuse to copy values nested as deep as some tests need)."""
    resource = length_delimited(1, KeyValue(key="service.name", value=AnyValue(string_value="svc")).SerializeToString())
    scope_spans = b""
    for n, attributes in enumerate(spans, 1):
        span = Span(
            trace_id=n.to_bytes(16, "big") if ids else b"short",
            span_id=n.to_bytes(8, "big"),
            name=f"span {n}",
            start_time_unix_nano=n,
        ).SerializeToString()
        pairs = [pair if isinstance(pair, bytes) else pair.SerializeToString() for pair in attributes]
        scope_spans += length_delimited(2, span + b"".join(length_delimited(9, pair) for pair in pairs))
    return length_delimited(1, length_delimited(1, resource) + length_delimited(2, scope_spans))


def every_kind() -> list[KeyValue]:
    nested = AnyValue()
    nested.kvlist_value.values.add(key="inner", value=AnyValue(int_value=-3))
    nested.kvlist_value.values.add(key="list", value=AnyValue())
    array = AnyValue()
    array.array_value.values.extend([AnyValue(bool_value=True), AnyValue(string_value="x"), AnyValue(), nested])
    return [
        KeyValue(key="text", value=AnyValue(string_value="plain")),
        KeyValue(key="empty", value=AnyValue(string_value="")),
        KeyValue(key="unset", value=AnyValue()),
        KeyValue(key="absent"),
        KeyValue(key="long", value=AnyValue(string_value="é" * 10_000)),  # lengths of two and three bytes
        KeyValue(key="int", value=AnyValue(int_value=-(2**63))),
        KeyValue(key="zero", value=AnyValue(int_value=0)),
        KeyValue(key="true", value=AnyValue(bool_value=True)),
        KeyValue(key="false", value=AnyValue(bool_value=False)),
        KeyValue(key="double", value=AnyValue(double_value=1.5)),
        KeyValue(key="nan", value=AnyValue(double_value=math.nan)),
        KeyValue(key="bytes", value=AnyValue(bytes_value=b"\x00\xff")),
        KeyValue(key="array", value=array),
        KeyValue(key="kvlist", value=nested),
        KeyValue(key="text", value=AnyValue(int_value=7)),  # a repeated key: its first place, its last value
        KeyValue(key="", value=AnyValue(string_value="no key")),
    ]


def test_every_kind_of_value_decodes_as_the_standard_messages_read_it():
    body = body_with([every_kind(), every_kind()[::-1], every_kind()])
    for _ in range(2):  # the second time, every scalar pair is one already seen
        fast = otlp._fast_records(body, [])
        assert fast is not None
        assert rows(fast) == rows(standard(body))
        assert rows(decode(body, "application/x-protobuf")) == rows(fast)
    assert list(fast[0].attributes)[:2] == ["text", "empty"] and fast[0].attributes["text"] == 7


def test_values_that_are_containers_are_never_shared_between_records():
    body = body_with([every_kind(), every_kind()])
    first, second = decode(body, "application/x-protobuf")
    first.attributes["array"].append("changed")
    first.attributes["kvlist"]["inner"] = "changed"
    again = decode(body, "application/x-protobuf")
    for record in (second, *again):
        assert record.attributes["array"][:2] == [True, "x"] and len(record.attributes["array"]) == 4
        assert record.attributes["kvlist"]["inner"] == -3


def not_utf8(body: bytes) -> bytes:
    """``body`` with its string ``BAD!`` made bytes that are not UTF-8 (the same length: the framing holds)."""
    assert body.count(b"BAD!") == 1
    return body.replace(b"BAD!", b"B\xff\xfe!")


GOOD = [KeyValue(key="k", value=AnyValue(string_value="v"))]
BAD = [KeyValue(key="k", value=AnyValue(string_value="BAD!"))]


def test_a_value_protobuf_refuses_is_left_to_the_standard_way():
    """Read as bytes, a string that is not UTF-8 would pass: the span is refused alone, as protobuf refuses it."""
    body = not_utf8(body_with([GOOD, BAD, GOOD]))
    with pytest.raises(Exception, match="Error parsing"):
        ExportTraceServiceRequest.FromString(body)
    assert otlp._fast_records(body, []) is None
    for _ in range(2):  # "k": "v" is a pair already seen the second time
        rejected: list[str] = []
        records = decode(body, "application/x-protobuf", rejected)
        assert [r.name for r in records] == ["span 1", "span 3"]
        assert len(rejected) == 1 and "could not be decoded" in rejected[0]
    with pytest.raises(otlp.OtlpDecodeError, match="not an OTLP protobuf"):
        decode(body, "application/x-protobuf")


def test_a_span_without_ids_is_reported_once_when_the_fast_path_gives_up_after_it():
    request = ExportTraceServiceRequest.FromString(body_with([GOOD], ids=False))
    request.MergeFromString(body_with([GOOD, BAD]))
    body = not_utf8(request.SerializeToString())
    assert otlp._fast_records(body, []) is None
    rejected: list[str] = []
    assert [r.name for r in decode(body, "application/x-protobuf", rejected)] == ["span 1"]
    assert len(rejected) == 2 and sum("trace_id must be 16 bytes" in reason for reason in rejected) == 1


def nested_array(depth: int) -> bytes:
    """A serialised ``KeyValue`` ``deep`` whose value is a string in ``depth`` arrays."""
    value = AnyValue(string_value="bottom").SerializeToString()
    for _ in range(depth):
        value = length_delimited(5, length_delimited(1, value))  # AnyValue{array_value{values[value]}}
    return length_delimited(1, b"deep") + length_delimited(2, value)


def outcome(body: bytes, monkeypatch: pytest.MonkeyPatch | None = None) -> Any:
    """What :func:`decode` makes of ``body`` (taking rejected spans, and not): records, rejections or errors;
    with ``monkeypatch``, the standard way alone."""
    if monkeypatch is not None:
        monkeypatch.setattr(otlp, "_fast_records", lambda body, rejected: None)
    found = []
    for rejected in ([], None):
        try:
            found.append((rows(decode(body, "application/x-protobuf", rejected)), rejected))
        except otlp.OtlpDecodeError as exc:
            found.append(str(exc))
    if monkeypatch is not None:
        monkeypatch.undo()
    return found


@pytest.mark.parametrize("depth", [5, 29, 30, 31, 40, 45, 46, 47, 48, 49, 50, 60])
def test_deep_values_decode_as_the_standard_messages_read_them(depth, monkeypatch):
    body = body_with([[nested_array(depth), *GOOD], GOOD])
    assert outcome(body) == outcome(body, monkeypatch)
    assert (otlp._fast_records(body, []) is not None) == (depth < 30)  # deeper ones are left to the standard way


def test_remembered_pairs_are_bounded(monkeypatch):
    monkeypatch.setattr(otlp_values, "MAX_KNOWN", 4)
    monkeypatch.setattr(otlp_values, "_known", {})
    pairs = [KeyValue(key=f"k{i}", value=AnyValue(string_value=f"v{i}")) for i in range(10)]
    body = body_with([pairs, pairs[::-1]])
    fast = otlp._fast_records(body, [])
    assert fast is not None and rows(fast) == rows(standard(body))
    assert 0 < len(otlp_values._known) <= 4
    big = [KeyValue(key="big", value=AnyValue(string_value="x" * (otlp_values.MAX_KNOWN_BYTES + 1)))]
    monkeypatch.setattr(otlp_values, "_known", {})
    assert otlp._fast_records(body_with([big]), []) is not None
    assert otlp_values._known == {}


def test_bodies_of_pairs_never_seen_are_read_the_standard_way_but_for_a_probe_now_and_then(monkeypatch):
    monkeypatch.setattr(otlp_values, "_known", {})
    monkeypatch.setattr(otlp_values, "_hit_rate", 1.0)
    monkeypatch.setattr(otlp_values, "_skipped", 0)
    fast_ones: list[bytes] = []
    fast_records = otlp._fast_records

    def spy(body: bytes, rejected: list[str] | None) -> Any:
        fast_ones.append(body)
        return fast_records(body, rejected)

    monkeypatch.setattr(otlp, "_fast_records", spy)
    fresh = [
        body_with([[KeyValue(key="k", value=AnyValue(string_value=f"{n}-{i}")) for i in range(5)]])
        for n in range(2 * otlp_values.PROBE_EVERY + 2)
    ]
    for body in fresh:
        assert rows(decode(body, "application/x-protobuf")) == rows(standard(body))
    assert fast_ones == [fresh[0], fresh[otlp_values.PROBE_EVERY], fresh[2 * otlp_values.PROBE_EVERY]]
    probed = fresh[2 * otlp_values.PROBE_EVERY]
    monkeypatch.setattr(otlp_values, "_skipped", otlp_values.PROBE_EVERY - 1)
    for _ in range(3):  # the next probe finds every pair seen before: the fast way again, body after body
        decode(probed, "application/x-protobuf")
    assert fast_ones[-3:] == [probed] * 3
