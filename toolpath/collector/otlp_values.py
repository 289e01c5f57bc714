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
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


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


class Undecodable(Exception):
    """Something the fast path does not vouch for: decode the body the standard way."""


def raw_attributes(chunks: Iterable[bytes]) -> dict[str, Any]:
    """The attributes of a span of :data:`FlatRequest` (each a serialised ``KeyValue``), as :func:`attributes`
    gives them from the standard messages."""
    out = {}
    known = _known.get
    for raw in chunks:
        pair = known(raw)
        if pair is None:
            pair = _pair(raw)
        out[pair[0]] = pair[1]
    return out


def _pair(raw: bytes) -> tuple[str, Any]:
    try:
        kv = KeyValue.FromString(raw)  # checks what parsing the whole request would (UTF-8, wire format)
    except DecodeError:
        raise Undecodable from None
    pair = kv.key, value(kv.value)
    if pair[1].__class__ in _SCALARS:
        if len(raw) <= MAX_KNOWN_BYTES:
            if len(_known) >= MAX_KNOWN:
                _known.clear()
            _known[raw] = pair  # immutable: every span that has these bytes may share it
    elif _deeper_than(pair[1], _MAX_NESTING):
        # protobuf limits message depth from the request down; read alone, a KeyValue starts deeper allowance
        raise Undecodable
    return pair


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
