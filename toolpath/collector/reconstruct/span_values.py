"""Helpers every convention's reader shares."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from toolpath.collector.clean import MAX_DEPTH, is_clean_text
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


def parse_clean_json(value: Any) -> tuple[Any, bool]:
    """:func:`parse_json` of an attribute's ``value``, and whether the text alone proves that the cleaning
    (:func:`toolpath.collector.clean.clean_value`) leaves what it gives as it is, even wrapped in one more object:
    no ``\\u0000`` or ``\\ud8..``-``\\udf..`` escape (NUL and surrogates), no NUL or lone surrogate in the text,
    fewer brackets than the cleaning's ``MAX_DEPTH`` allows, and no number or constant that reads as NaN or
    infinite (``NaN``, ``Infinity``, ``1e999``: the scanner refuses them). ``True`` only when certain; then
    :func:`toolpath.collector.clean.mark_clean` spares the cleaning a walk through the value."""
    if (
        value.__class__ is str
        and (value.isascii() or is_clean_text(value))  # in JSON that is read whole, a raw NUL cannot be
        and ("\\u" not in value or not _BAD_ESCAPE.search(value))
        and (len(value) < _DEPTH or value.count("[") + value.count("{") < _DEPTH)
    ):
        try:
            parsed, end = _scan_finite(value, 0)
            if end == len(value):
                return parsed, True
        except (StopIteration, ValueError):  # not JSON alone, or a number that is not finite: parse_json decides
            pass
    return parse_json(value), False


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def _refuse(text: str) -> float:
    raise ValueError(text)


_scan_finite: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(  # type: ignore[attr-defined]
    parse_float=_finite, parse_constant=_refuse
).scan_once
_BAD_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_DEPTH = MAX_DEPTH - 1
"""Fewer brackets than this: nothing nested as deep as the cleaning cuts, even inside one more object."""


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
