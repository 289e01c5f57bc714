"""Helpers every convention's reader shares."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc


def parse_json(value: Any) -> Any:
    """A JSON attribute's value; text that is not JSON (e.g. truncated, or nested too deeply to read) is kept as
    the string itself."""
    if not isinstance(value, str):
        return value
    try:  # json.loads' own scanner, without the layers around it: text that is one JSON value, nothing around it
        parsed, end = _scan(value, 0)
        if end == len(value):
            return parsed
    except (StopIteration, json.JSONDecodeError):
        pass  # json.loads says what it makes of it (leading space, a byte order mark, nothing but space)
    except RecursionError:
        return value
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value


_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def first(attrs: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) is not None:
            return attrs[key]
    return None


def str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def error_text(span: SpanRecord) -> str:
    for event in span.events:
        if event.get("name") == "exception":
            ev = event.get("attributes") or {}
            kind, message = ev.get("exception.type"), ev.get("exception.message")
            if kind or message:
                return f"{kind}: {message}" if kind and message else str(kind or message)
    kind, message = span.attributes.get(sc.ERROR_TYPE), span.status_message
    if kind and message and not str(message).startswith(str(kind)):
        return f"{kind}: {message}"
    return str(message or kind or "error")


order_key: Callable[[SpanRecord], tuple[int, str]] = attrgetter("start_time", "span_id")
"""Start order (a span's start time, then its id)."""
