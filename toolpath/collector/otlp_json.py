"""OTLP/JSON bodies that hold a span the usual decoding cannot take, decoded span by span: a value nested past
what a JSON parser recurses into is replaced before parsing, and a span protobuf's JSON mapping refuses (a time of
2^64 + 10 or -5, an integer of 2^70) is left out alone, named in ``partial_success``, its neighbours stored."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

MAX_JSON_DEPTH = 200
"""Brackets kept inside one another before parsing; what lies deeper is replaced by :data:`TOO_DEEP`."""
TOO_DEEP = "toolpath: nested too deeply"
_SPECIAL = re.compile(r'[\[\]{}"\\]')


def flatten_deep(text: str, limit: int = MAX_JSON_DEPTH) -> str:
    """``text`` (JSON) with every array or object that opens deeper than ``limit`` replaced by the string
    :data:`TOO_DEEP`, in one pass: a body no parser would recurse through becomes one it can, and only the span
    holding the deep value is affected."""
    out: list[str] = []
    depth, done = 0, 0
    brackets = _brackets(text, 0)
    while (bracket := next(brackets, None)) is not None:
        c, j = bracket
        if c in "]}":
            depth -= 1
            continue
        depth += 1
        if depth > limit:
            end = _after_close(text, j)
            out += [text[done:j], f'"{TOO_DEEP}"']
            done, depth = end, depth - 1
            brackets = _brackets(text, end)  # on after the replaced value
    out.append(text[done:])
    return "".join(out)


def _after_close(text: str, opened: int) -> int:
    """The index just past the bracket that closes the one at ``opened`` (the end of ``text`` if none does)."""
    depth = 0
    for c, j in _brackets(text, opened):
        depth += 1 if c in "[{" else -1
        if depth == 0:
            return j + 1
    return len(text)


def _brackets(text: str, i: int) -> Iterator[tuple[str, int]]:
    """Each bracket of ``text`` from ``i`` on that is not inside a string, with its index."""
    in_string = False
    while (m := _SPECIAL.search(text, i)) is not None:
        c, j = m.group(), m.start()
        i = j + 1
        if in_string:
            if c == "\\":
                i = j + 2
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c != "\\":
            yield c, j


def parse_span_by_span(
    data: dict[str, Any],
    request: ExportTraceServiceRequest,
    rejected: list[str],
    prepare: Callable[[Any], Any],
    explain: Callable[[Exception], str],
) -> None:
    """Parse ``data`` (a decoded OTLP/JSON request) into ``request`` one span at a time, each in its own resource
    and scope: a span protobuf's JSON mapping refuses is named in ``rejected`` and left out, the rest parsed.
    ``prepare`` turns a request's JSON into what ``ParseDict`` takes (hex ids to base64)."""
    for resource_spans in _dicts(data.get("resourceSpans") or data.get("resource_spans")):
        resource = {k: v for k, v in resource_spans.items() if k not in ("scopeSpans", "scope_spans")}
        for scope_spans in _dicts(resource_spans.get("scopeSpans") or resource_spans.get("scope_spans")):
            scope = {k: v for k, v in scope_spans.items() if k != "spans"}
            spans = scope_spans.get("spans")
            for span in spans if isinstance(spans, list) else ():
                if not isinstance(span, dict):
                    rejected.append(f"a span is a JSON {_json_kind(span)}, not an object")
                    continue
                one = {"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [span]}]}]}
                part = ExportTraceServiceRequest()
                try:
                    json_format.ParseDict(prepare(one), part, ignore_unknown_fields=True)
                except (json_format.ParseError, TypeError, ValueError, RecursionError) as exc:
                    rejected.append(f"span {span.get('name')!r}: {explain(exc)}")
                    continue
                request.MergeFrom(part)


def _json_kind(value: Any) -> str:
    """What a JSON value that is not an object is: ``number``, ``string``…"""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else type(value).__name__


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
