"""Helpers every convention's reader shares."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc


def parse_json(value: Any) -> Any:
    """A JSON attribute's value; text that is not JSON (e.g. truncated, or nested too deeply to read) is kept as
    the string itself."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value


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


def order_key(span: SpanRecord) -> tuple[int, str]:
    return span.start_time, span.span_id
