"""OTLP attribute values -> Python values, and the fast path of protobuf decoding.

Most of the cost of decoding a span is Python's per-attribute work, and most attribute pairs repeat from span to
span (operation, tool, agent, model and service names). The fast path reads a request as a copy of the OTLP
messages whose spans keep each attribute as the raw bytes of its ``KeyValue`` (:data:`FlatRequest`); each
distinct ``KeyValue`` is decoded once (protobuf's own parser, so the same checks) and its pair remembered when
the value is a scalar. Whatever that path does not vouch for raises :class:`Undecodable`, and the body is decoded
the standard way instead (:func:`toolpath.collector.otlp.decode`), so both ways give the same records, or errors.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as FieldProto
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from toolpath.errors import InternalSignal


def attributes(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in pairs}


def value(any_value: AnyValue) -> Any:
    if text := any_value.string_value:  # the usual value, without asking which one is set
        return text
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(any_value.bytes_value).decode()
    return getattr(any_value, kind)


class Undecodable(InternalSignal):
    """Something the fast path does not vouch for: decode the body the standard way."""


def raw_attributes(spans: list[list[bytes]]) -> list[dict[str, Any]]:
    """The attributes of each span of a :data:`FlatRequest` (a list of serialised ``KeyValue``), as
    :func:`attributes` gives them from the standard messages. The pairs not seen before are read in one parse
    of the whole body's (protobuf's own parser: the same checks as reading the request)."""
    get = _known.get
    found: list[Any] = [[get(raw) for raw in chunks] for chunks in spans]  # pairs, None where not seen before
    missing = [
        raw
        for chunks, pairs in zip(spans, found, strict=True)
        if None in pairs
        for raw, pair in zip(chunks, pairs, strict=True)
        if pair is None
    ]
    _count(sum(map(len, spans)), len(missing))
    if not missing:
        return [dict(pairs) for pairs in found]  # a key twice: its first place, its last value, as a dict display
    read = _pairs(missing)
    new = iter(read)
    out = [dict(pairs if None not in pairs else [pair or next(new) for pair in pairs]) for pairs in found]
    for raw, pair in zip(missing, read, strict=True):
        if pair[1].__class__ in _SCALARS and len(raw) <= MAX_KNOWN_BYTES:
            if len(_known) >= MAX_KNOWN:
                _known.clear()
            _known[raw] = pair  # immutable: every span that has these bytes may share it
    return out


def worth_trying() -> bool:
    """Whether to read the next body the fast way: while most of its pairs were seen before (a pair not seen
    before costs more than the standard way), and for one body in :data:`PROBE_EVERY` otherwise, to see whether
    that changed (a heuristic: either way gives the same records)."""
    global _skipped
    if _hit_rate >= MIN_HIT_RATE:
        return True
    _skipped += 1
    if _skipped >= PROBE_EVERY:
        _skipped = 0
        return True
    return False


MIN_HIT_RATE = 0.6
"""Share of a body's attribute pairs already seen, over the last bodies read the fast way, below which bodies
are read the standard way."""
PROBE_EVERY = 16
_hit_rate = 1.0
_skipped = 0


def _count(pairs: int, missing: int) -> None:
    global _hit_rate
    if pairs:
        _hit_rate = _hit_rate / 4 + (pairs - missing) / pairs * 3 / 4  # the last bodies, the latest most


def _pairs(chunks: list[bytes]) -> list[tuple[str, Any]]:
    """Each serialised ``KeyValue`` of ``chunks`` read (one ``KeyValueList`` of them all, framed here)."""
    framed = []
    for raw in chunks:
        size = len(raw)
        framed.append(_FRAMES[size] if size < 0x80 else _frame(size))
        framed.append(raw)
    try:
        pairs = KeyValueList.FromString(b"".join(framed)).values
    except DecodeError:
        raise Undecodable from None
    read = [(kv.key, value(kv.value)) for kv in pairs]
    for _, item in read:
        # protobuf limits message depth from the request down; read here, a value starts with more allowance
        if item.__class__ not in _SCALARS and _deeper_than(item, _MAX_NESTING):
            raise Undecodable
    return read


def _frame(size: int) -> bytes:
    """Field 1 (``KeyValueList.values``) of ``size`` bytes: its tag and length."""
    out = bytearray(b"\n")
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out)


_FRAMES = [_frame(size) for size in range(0x80)]


MAX_KNOWN = 8192
"""Distinct attribute pairs remembered (all are forgotten when full)."""
MAX_KNOWN_BYTES = 1024
"""Longest serialised pair remembered."""
_known: dict[bytes, tuple[str, Any]] = {}
_SCALARS = frozenset({str, int, float, bool, type(None)})
_MAX_NESTING = 30
"""Arrays and lists inside one another that the fast path takes (each is two messages deep in protobuf: far from
the 100 levels its parser allows)."""


def _deeper_than(item: Any, levels: int) -> bool:
    if levels <= 0:
        return True
    if isinstance(item, dict):
        return any(_deeper_than(v, levels - 1) for v in item.values())
    if isinstance(item, list):
        return any(_deeper_than(v, levels - 1) for v in item)
    return False


def _flat_request() -> type[Message]:
    """``ExportTraceServiceRequest`` with each span's ``attributes`` read as ``repeated bytes`` (the same wire
    format: every element of a repeated field is its own length-delimited record)."""
    pool = descriptor_pool.DescriptorPool()
    for module in (common_pb2, resource_pb2, trace_pb2):
        file = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(file)
        pool.Add(file)
    package = "toolpath.flat"
    flat = descriptor_pb2.FileDescriptorProto(
        name="toolpath/flat.proto",
        package=package,
        syntax="proto3",
        dependency=[module.DESCRIPTOR.name for module in (common_pb2, resource_pb2, trace_pb2)],
    )
    renamed: dict[str, str] = {}
    for message in (trace_pb2.Span, trace_pb2.ScopeSpans, trace_pb2.ResourceSpans):
        proto = flat.message_type.add()
        message.DESCRIPTOR.CopyToProto(proto)
        del proto.nested_type[:], proto.enum_type[:]  # Span's Event, Link and SpanKind: the originals are used
        for field in proto.field:  # ScopeSpans' spans and ResourceSpans' scope_spans: the flat ones
            if field.type_name in renamed:
                field.type_name = renamed[field.type_name]
        renamed[f".{message.DESCRIPTOR.full_name}"] = f".{package}.{proto.name}"
    span = flat.message_type[0]
    attributes_field = next(field for field in span.field if field.name == "attributes")
    attributes_field.type = FieldProto.TYPE_BYTES
    attributes_field.ClearField("type_name")
    request = flat.message_type.add(name="ExportTraceServiceRequest")
    resource_spans = renamed[f".{trace_pb2.ResourceSpans.DESCRIPTOR.full_name}"]
    request.field.add(name="resource_spans", number=1, type=FieldProto.TYPE_MESSAGE,
                      label=FieldProto.LABEL_REPEATED, type_name=resource_spans)  # fmt: skip
    pool.Add(flat)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.ExportTraceServiceRequest"))


FlatRequest = _flat_request()
