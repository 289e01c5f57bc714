"""OTLP trace payloads (``ExportTraceServiceRequest``, protobuf or JSON) -> :class:`SpanRecord` lists.

The OTLP/JSON encoding writes trace and span ids as hex strings, where protobuf's own JSON mapping (which some
tools use to dump OTLP) writes them as base64; both are accepted.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from toolpath.collector.otlp_ids import ZERO_SPAN_ID, id_problem, in_cycles
from toolpath.collector.otlp_json import flatten_deep, parse_span_by_span
from toolpath.collector.otlp_values import FlatRequest, Undecodable, attributes, raw_attributes, worth_trying
from toolpath.errors import InternalSignal
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

_HEX_ID = re.compile(r"^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{16})$")
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


class OtlpDecodeError(InternalSignal, ValueError):
    """The body is not an ExportTraceServiceRequest; the message says why."""


def decode(body: bytes, content_type: str, rejected: list[str] | None = None) -> list[SpanRecord]:
    """Span records of an OTLP/HTTP body (``application/x-protobuf`` or ``application/json``); see :func:`records`
    for ``rejected``."""
    kind = content_type.split(";", 1)[0].strip().lower()
    request = ExportTraceServiceRequest()
    if kind in ("application/x-protobuf", "application/protobuf"):
        fast = _fast_records(body, rejected) if worth_trying() else None
        if fast is not None:
            return fast
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            # one span protobuf cannot read (a string that is not UTF-8, values nested past its depth) is left out
            # alone, when the caller takes ``rejected``; the request's own framing must hold
            if rejected is None or not _spans_one_by_one(body, request, rejected):
                raise OtlpDecodeError(f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from None
    elif kind == "application/json":
        data = _json_object(body, deep_ok=rejected is not None)
        try:
            json_format.ParseDict(_hex_ids_to_base64(data), request, ignore_unknown_fields=True)
        except (json_format.ParseError, TypeError, ValueError, RecursionError) as exc:
            # JSON can hold what protobuf cannot (a lone surrogate "\\ud800", values nested past protobuf's
            # depth): such values are repaired in their span, which says so, rather than its whole request refused
            repaired = _repair(data)
            request.Clear()
            try:
                if not repaired:
                    raise exc
                json_format.ParseDict(_hex_ids_to_base64(data), request, ignore_unknown_fields=True)
            except (json_format.ParseError, TypeError, ValueError, RecursionError) as again:
                if rejected is None:
                    raise OtlpDecodeError(_json_error(again)) from None
                # what no repair makes valid (a time past 2^64, an integer of 2^70) costs its own span only
                request.Clear()
                before = len(rejected)
                parse_span_by_span(data, request, rejected, _hex_ids_to_base64, _json_error)
                if len(rejected) == before:  # no span was the trouble: the request's own shape is
                    raise OtlpDecodeError(_json_error(again)) from None
    else:
        raise OtlpDecodeError(f"unsupported content type {content_type!r} (application/x-protobuf or application/json)")
    return records(request, rejected)


def records(request: ExportTraceServiceRequest, rejected: list[str] | None = None) -> list[SpanRecord]:
    """The request's spans as records. A span that cannot take its place in a trace (:mod:`.otlp_ids`: ids of the
    wrong length or all zeros, its own parent, parents that go round a circle) is an :class:`OtlpDecodeError`, or,
    when ``rejected`` is given, left out and said why there (the rest is kept)."""
    return _records(request, rejected, attributes)


def _fast_records(body: bytes, rejected: list[str] | None) -> list[SpanRecord] | None:
    """The records of a protobuf body by the fast path (:mod:`.otlp_values`), or ``None``: anything but a
    clean success (a body or span protobuf refuses, a span without valid ids) is left to the standard path, which
    says what is wrong exactly as it always has."""
    request: Any = FlatRequest()
    before = len(rejected) if rejected is not None else 0
    try:
        request.ParseFromString(body)
        spans = [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]
        decoded = iter(raw_attributes([list(span.attributes) for span in spans]))
        return _records(request, rejected, lambda _: next(decoded))  # in the same order, span by span
    except (DecodeError, Undecodable, OtlpDecodeError):
        if rejected is not None:
            del rejected[before:]
        return None


def _records(
    request: Any, rejected: list[str] | None, span_attributes: Callable[[Any], dict[str, Any]]
) -> list[SpanRecord]:
    out: list[SpanRecord] = []
    append = out.append
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                span_attrs = span_attributes(span.attributes)  # every span's, even one left out below
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                problem = id_problem(trace_id, span_id, parent)
                if problem is not None:
                    reason = f"span {span.name!r}: {problem}"  # (cut once redacted)
                    if rejected is None:
                        raise OtlpDecodeError(reason)
                    rejected.append(reason)
                    continue
                status, events = span.status, span.events
                append(
                    SpanRecord(
                        trace_id=trace_id.hex(),
                        span_id=span_id.hex(),
                        parent_span_id=parent.hex() if parent and parent != ZERO_SPAN_ID else None,
                        name=span.name,
                        kind=span.kind,
                        start_time=span.start_time_unix_nano,
                        end_time=span.end_time_unix_nano or None,
                        status_code=status.code,
                        status_message=status.message or None,
                        attributes=span_attrs,
                        events=[
                            {
                                "name": e.name,
                                "time_unix_nano": e.time_unix_nano,
                                "attributes": attributes(e.attributes),
                            }
                            for e in events
                        ]
                        if events
                        else [],
                        resource=resource,
                        scope=scope,
                    )
                )
    return _without_cycles(out, rejected)


def _without_cycles(records: list[SpanRecord], rejected: list[str] | None) -> list[SpanRecord]:
    """``records`` but the spans whose parents go round a circle (:func:`~.otlp_ids.in_cycles`), each said in
    ``rejected`` (an :class:`OtlpDecodeError` without it)."""
    cyclic = in_cycles(records)
    if not cyclic:
        return records
    if rejected is None:
        raise OtlpDecodeError(next(iter(cyclic.values())))
    rejected.extend(cyclic[r.trace_id, r.span_id] for r in records if (r.trace_id, r.span_id) in cyclic)
    return [r for r in records if (r.trace_id, r.span_id) not in cyclic]


def _spans_one_by_one(body: bytes, request: ExportTraceServiceRequest, rejected: list[str]) -> bool:
    """Fill ``request`` from ``body`` span by span, each span that does not decode said in ``rejected``; whether
    the body's framing held and some span was the trouble."""
    request.Clear()
    before = len(rejected)
    try:
        for resource_raw in _fields(body, 1):
            resource_spans = request.resource_spans.add()
            resource_spans.MergeFromString(_without(resource_raw, 2))
            for scope_raw in _fields(resource_raw, 2):
                scope_spans = resource_spans.scope_spans.add()
                scope_spans.MergeFromString(_without(scope_raw, 2))
                for span_raw in _fields(scope_raw, 2):
                    try:
                        scope_spans.spans.append(Span.FromString(span_raw))
                    except DecodeError as exc:
                        rejected.append(f"a span could not be decoded: {exc}")
    except (DecodeError, _WireError):
        request.Clear()
        del rejected[before:]
        return False
    return len(rejected) > before


class _WireError(ValueError):
    pass


def _fields(data: bytes, number: int) -> list[bytes]:
    """The values of length-delimited field ``number`` of the protobuf message ``data``."""
    return [data[start:end] for field, _, start, end in _wire(data) if field == number and start >= 0]


def _without(data: bytes, number: int) -> bytes:
    """``data`` with every occurrence of field ``number`` taken out."""
    kept, at = [], 0
    for field, tag, _, end in _wire(data):
        if field == number:
            kept.append(data[at:tag])
            at = end
    kept.append(data[at:])
    return b"".join(kept)


def _wire(data: bytes) -> list[tuple[int, int, int, int]]:
    """(field number, tag start, value start, value end) of each field of ``data``; value start -1 for a field
    that is not length-delimited."""
    out = []
    pos = 0
    while pos < len(data):
        tag = pos
        key, pos = _varint(data, pos)
        wire = key & 7
        start = -1
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, start = _varint(data, pos)
            pos = start + size
        else:
            raise _WireError(f"wire type {wire}")
        if pos > len(data):
            raise _WireError("truncated")
        out.append((key >> 3, tag, start, pos))
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(10):
        if pos >= len(data):
            raise _WireError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise _WireError("varint too long")


def _json_object(body: bytes, *, deep_ok: bool) -> dict[str, Any]:
    """The JSON object of an OTLP/JSON body; with ``deep_ok``, values nested past what the parser recurses into
    are replaced first (:func:`~toolpath.collector.otlp_json.flatten_deep`) rather than the body refused."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OtlpDecodeError(f"not valid JSON: {exc}") from None
    except RecursionError:
        if not deep_ok:
            raise OtlpDecodeError("JSON nested too deeply") from None
        try:
            data = json.loads(flatten_deep(body.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise OtlpDecodeError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise OtlpDecodeError(f"an ExportTraceServiceRequest is a JSON object, not {type(data).__name__}")
    return data


def _json_error(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    return f"not an OTLP JSON ExportTraceServiceRequest: {exc}"


MAX_VALUE_DEPTH = 16
"""Arrays and key-value lists kept inside one another in an OTLP/JSON attribute value (protobuf nests messages
only so deep: deeper values are cut, with a marker, rather than their request refused)."""


def _repair(data: dict[str, Any]) -> bool:
    """Make a decoded OTLP/JSON request one protobuf takes (in place): lone surrogates become U+FFFD, attribute
    values nested deeper than :data:`MAX_VALUE_DEPTH` are cut with a marker; each span so repaired lists the
    attribute keys or fields in ``toolpath.cleaned``. Whether anything changed."""
    changed = False
    for resource_spans in _dicts(data.get("resourceSpans") or data.get("resource_spans")):
        changed |= _repair_holder(resource_spans, "resource")
        for scope_spans in _dicts(resource_spans.get("scopeSpans") or resource_spans.get("scope_spans")):
            changed |= _repair_holder(scope_spans, "scope")
            for span in _dicts(scope_spans.get("spans")):
                repaired = _repair_pairs(span.get("attributes"))
                for key in ("events", "links"):
                    if any([_repair_pairs(item.get("attributes")) for item in _dicts(span.get(key))]):
                        repaired.append(key)
                for key, value in list(span.items()):
                    if key != "attributes":
                        span[key], fixed = _repaired(value)
                        if fixed and key not in repaired:
                            repaired.append(key)
                if repaired:
                    marker = {"arrayValue": {"values": [{"stringValue": key} for key in repaired]}}
                    span.setdefault("attributes", []).append({"key": sc.TOOLPATH_CLEANED, "value": marker})
                    changed = True
    return changed


def _repair_holder(holder: dict[str, Any], name: str) -> bool:
    """Repair a ``ResourceSpans`` / ``ScopeSpans``' own ``resource`` / ``scope`` (``name``) and schema URL."""
    child = holder.get(name)
    changed = bool(_repair_pairs(child.get("attributes"))) if isinstance(child, dict) else False
    for key in (name, "schemaUrl", "schema_url"):
        if key in holder:
            holder[key], fixed = _repaired(holder[key])
            changed |= fixed
    return changed


def _repair_pairs(pairs: Any) -> list[str]:
    """Repair each ``KeyValue`` of an OTLP/JSON attribute list (in place); the keys repaired."""
    keys = []
    for pair in _dicts(pairs):
        value, cut = _cut(pair.get("value"), 0)
        if cut:
            pair["value"] = value
        new, fixed = _repaired(pair)
        if fixed:
            pair.update(new)
        if cut or fixed:
            keys.append(str(pair.get("key")))
    return keys


def _cut(value: Any, depth: int) -> tuple[Any, bool]:
    """An OTLP/JSON ``AnyValue`` with arrays and key-value lists past :data:`MAX_VALUE_DEPTH` cut, and whether."""
    if not isinstance(value, dict):
        return value, False
    for key in ("kvlistValue", "kvlist_value", "arrayValue", "array_value"):
        inner = value.get(key)
        if not (isinstance(inner, dict) and isinstance(inner.get("values"), list)):
            continue
        if depth >= MAX_VALUE_DEPTH:
            return {"stringValue": sc.NESTING_MARKER}, True
        values, changed = [], False
        for item in inner["values"]:
            if key.startswith("kvlist") and isinstance(item, dict):
                new, cut = _cut(item.get("value"), depth + 1)
                item = {**item, "value": new} if cut else item
            else:
                item, cut = _cut(item, depth + 1)
            values.append(item)
            changed |= cut
        return ({**value, key: {**inner, "values": values}}, True) if changed else (value, False)
    return value, False


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _repaired(value: Any) -> tuple[Any, bool]:
    """``value`` with lone surrogates replaced, and whether there were any (through JSON text: any depth)."""
    try:
        text = json.dumps(value)  # ASCII: every surrogate is a \udxxx escape, a character outside the BMP a pair
    except (RecursionError, ValueError):
        return value, False
    if "\\ud" not in text and "\\uD" not in text:
        return value, False
    fixed = _ESCAPES.sub(_keep_pairs, text)
    return (json.loads(fixed), True) if fixed != text else (value, False)


_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
"""An escaped backslash (consumed first, so what follows it is text), a surrogate pair, a lone surrogate."""


def _keep_pairs(match: re.Match[str]) -> str:
    """An escaped backslash or a surrogate pair stays; a lone surrogate becomes U+FFFD."""
    return match.group(0) if len(match.group(0)) in (2, 12) else "\\ufffd"


def _hex_ids_to_base64(data: Any) -> Any:
    if isinstance(data, dict):
        return {
            key: _id_to_base64(item) if key in _ID_KEYS and isinstance(item, str) else _hex_ids_to_base64(item)
            for key, item in data.items()
        }
    if isinstance(data, list):
        return [_hex_ids_to_base64(item) for item in data]
    return data


def _id_to_base64(value: str) -> str:
    if not value or not _HEX_ID.match(value):
        return value  # already base64 (protobuf's JSON mapping), or empty
    try:
        return base64.b64encode(binascii.unhexlify(value)).decode()
    except binascii.Error:
        return value
