"""Spans and invocations made storable, whatever a sender put in them: what a database column cannot take is
changed, never refused, and the record says what was changed (``toolpath.cleaned``, as ``toolpath.truncated``
says what :mod:`.limits` cut), so one bad value never costs its neighbours.

- NUL characters and lone surrogates (PostgreSQL's text and JSON refuse them; no UTF-8 encoder takes a
  surrogate) become U+FFFD;
- NaN and infinite numbers (not JSON) become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``;
- values nested deeper than :data:`MAX_DEPTH` are cut there, with a marker;
- times past what a signed 64-bit column holds (OTLP's are unsigned) are clamped to :data:`MAX_TIME`;
- names and ids longer than their column are shortened to fit, keeping a hash of the whole, so two long ids
  that share a beginning stay two ids; a parent span id that is not 8 bytes is dropped (the span is a root).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from toolpath.model import Invocation, ToolCall
from toolpath.store import schema as t
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

MAX_DEPTH = 64
"""Levels of nesting kept in an attribute, argument or result value."""
MAX_TIME = 9_000_000_000_000_000_000
"""Latest time stored, in ns since the epoch (year 2255; below 2**63 with room for rounding to microseconds)."""
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def _length(column: Any) -> int:
    length = getattr(column.type, "length", None)
    assert isinstance(length, int), column
    return length


_SPAN_NAME, _SCOPE = _length(t.spans.c.name), _length(t.spans.c.scope)
_SESSION_ID, _AGENT_NAME = _length(t.invocations.c.session_id), _length(t.invocations.c.agent_name)
_TOOL_NAME, _CALL_ID = _length(t.tool_calls.c.name), _length(t.tool_calls.c.call_id)
_CALL_AGENT, _ANSWERED_BY = _length(t.tool_calls.c.agent_name), _length(t.invocations.c.answered_by)


def is_clean_text(text: str) -> bool:
    """Whether :func:`clean_value` leaves ``text`` as it is (no NUL, no lone surrogate)."""
    return "\x00" not in text and (text.isascii() or not _BAD_CHARS.search(text))


def is_span_id(text: str) -> bool:
    """Whether ``text`` is a span id as stored: 16 lowercase hex digits."""
    return _SPAN_ID.fullmatch(text) is not None


def span_text_fits(record: SpanRecord) -> bool:
    """Whether the span's name, status message and scope are text that fits its column (their cleanliness is
    the caller's to test)."""
    name, message, scope = record.name, record.status_message, record.scope
    return (
        name.__class__ is str
        and len(name) <= _SPAN_NAME
        and (message is None or message.__class__ is str)
        and (scope is None or (scope.__class__ is str and len(scope) <= _SCOPE))
    )


def _is_clean(value: Any, depth: int) -> bool:
    """Whether :func:`clean_value` would leave ``value`` as it is: a cheap walk that makes nothing (most values
    are clean); ``False`` for anything it does not know (``clean_value`` decides those)."""
    kind = value.__class__
    if kind is str:
        return "\x00" not in value and (value.isascii() or not _BAD_CHARS.search(value))
    if kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():  # strings and numbers here, without a call each (most leaves are)
            if key.__class__ is str:
                if "\x00" in key or not (key.isascii() or not _BAD_CHARS.search(key)):
                    return False
            elif not _is_clean(key, depth + 1):
                return False
            leaf = item.__class__
            if leaf is str:
                if "\x00" in item or not (item.isascii() or not _BAD_CHARS.search(item)):
                    return False
            elif not (leaf is int or leaf is bool or item is None) and not _is_clean(item, depth + 1):
                return False
        return True
    if kind is list:
        return all(_is_clean(item, depth + 1) for item in value)
    return False


def clean_value(value: Any, depth: int = 0) -> tuple[Any, bool]:
    """``value`` as something every store takes, and whether that changed it (total: never raises)."""
    if _is_clean(value, depth):
        return value, False
    if isinstance(value, str):
        if ("\x00" not in value and value.isascii()) or not _BAD_CHARS.search(value):
            return value, False
        return _BAD_CHARS.sub("\ufffd", value), True
    if isinstance(value, float):
        if math.isfinite(value):
            return value, False
        return ("NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"), True
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            return sc.NESTING_MARKER, True
        if isinstance(value, dict):
            pairs = [(clean_value(k, depth + 1), clean_value(v, depth + 1)) for k, v in value.items()]
            if not any(k[1] or v[1] for k, v in pairs):
                return value, False
            return {str(k[0]): v[0] for k, v in pairs}, True
        items = [clean_value(item, depth + 1) for item in value]
        changed = any(c for _, c in items)
        return ([v for v, _ in items] if changed or isinstance(value, tuple) else value), changed
    return value, False


def clean_span(record: SpanRecord, *, shorten: bool = True) -> bool:
    """Make ``record`` storable (in place); whether anything had to change (listed in ``toolpath.cleaned``).
    ``shorten=False`` leaves names and scope their length: a span about to be redacted is shortened after it
    (:func:`fit_names`), since a secret cut in two is no longer found."""
    cleaned: list[str] = []
    if not all(_is_clean(k, 0) and _is_clean(v, 1) for k, v in record.attributes.items()):
        attributes: dict[str, Any] = {}
        for key, value in record.attributes.items():
            new_key, key_changed = clean_value(key)
            new_value, value_changed = clean_value(value, 1)
            attributes[new_key] = new_value
            if key_changed or value_changed:
                cleaned.append(new_key)
        if cleaned:
            record.attributes = attributes
    for name, limit in (("name", _SPAN_NAME), ("status_message", None), ("scope", _SCOPE)):
        value = getattr(record, name)
        if value is not None and (new := _text(value, limit if shorten else None)) != value:
            setattr(record, name, new)
            cleaned.append(name)
    for name in ("events", "resource"):
        value, changed = clean_value(getattr(record, name))
        if changed:
            setattr(record, name, value)
            cleaned.append(name)
    if record.parent_span_id is not None and not is_span_id(record.parent_span_id):
        record.parent_span_id = None
        cleaned.append("parent_span_id")
    if record.start_time > MAX_TIME:
        record.start_time = MAX_TIME
        cleaned.append("start_time")
    if record.end_time is not None and record.end_time > MAX_TIME:
        record.end_time = MAX_TIME
        cleaned.append("end_time")
    _mark(record, cleaned)
    return bool(cleaned)


def fit_names(record: SpanRecord) -> bool:
    """Shorten ``record``'s name and scope to their columns (in place, after redaction); whether one was."""
    cut = []
    for name, limit in (("name", _SPAN_NAME), ("scope", _SCOPE)):
        value = getattr(record, name)
        if value is not None and len(value) > limit:
            setattr(record, name, _text(value, limit))
            cut.append(name)
    _mark(record, cut)
    return bool(cut)


def _mark(record: SpanRecord, cleaned: list[str]) -> None:
    if cleaned:
        already = record.attributes.get(sc.TOOLPATH_CLEANED)
        already = already if isinstance(already, list) else []
        record.attributes[sc.TOOLPATH_CLEANED] = [*already, *(c for c in cleaned if c not in already)]


def clean_invocation(inv: Invocation) -> Invocation:
    """``inv`` with every field storable (a copy when something had to change, listed in ``toolpath.cleaned``)."""
    update: dict[str, Any] = {}
    _clean_texts(inv, _INVOCATION_TEXTS, update)
    pairs, changed = clean_value(inv.intermediate_responses)
    if changed:
        update["intermediate_responses"] = [tuple(pair) for pair in pairs]
    calls = [_clean_call(call) for call in inv.tool_calls]
    if any(new is not old for new, old in zip(calls, inv.tool_calls, strict=True)):
        update["tool_calls"] = calls
    attributes, changed = clean_value(inv.attributes)
    if not update and not changed:
        return inv
    already = attributes.get(sc.TOOLPATH_CLEANED)
    already = already if isinstance(already, list) else []
    fields = [*update, *(["attributes"] if changed else [])]
    update["attributes"] = {**attributes, sc.TOOLPATH_CLEANED: [*already, *(f for f in fields if f not in already)]}
    return inv.model_copy(update=update)


def _clean_call(call: ToolCall) -> ToolCall:
    update: dict[str, Any] = {}
    _clean_texts(call, _CALL_TEXTS, update)
    args, result = call.args, call.result
    known_args, known_result = call.__dict__.get(_KNOWN_CLEAN, _NOTHING_KNOWN)
    if args is not known_args:  # else parsed from text that cannot give anything to clean (see mark_clean)
        args, changed = clean_value(args)
        if changed:
            update["args"] = args
    if result is not known_result:
        result, changed = clean_value(result)
        if changed:
            update["result"] = result
    for name in ("start_time", "end_time"):
        value = getattr(call, name)
        if value is not None and value > MAX_TIME:
            update[name] = MAX_TIME
    return call.model_copy(update=update) if update else call


def _clean_texts(record: Invocation | ToolCall, texts: _Texts, update: dict[str, Any]) -> None:
    """Put in ``update`` each text field of ``texts`` (name, longest) that :func:`_text` changes."""
    for name, limit in texts:
        value = getattr(record, name)
        if value is None or (  # the usual short clean string, told without a call
            value.__class__ is str
            and (limit is None or len(value) <= limit)
            and "\x00" not in value
            and (value.isascii() or not _BAD_CHARS.search(value))
        ):
            continue
        if (new := _text(value, limit)) != value:
            update[name] = new


_Texts = tuple[tuple[str, int | None], ...]
_INVOCATION_TEXTS: _Texts = (("session_id", _SESSION_ID), ("agent_name", _AGENT_NAME), ("prompt", None),
                              ("response", None), ("error", None), ("answered_by", _ANSWERED_BY))  # fmt: skip
_CALL_TEXTS: _Texts = (("name", _TOOL_NAME), ("call_id", _CALL_ID), ("error", None), ("agent_name", _CALL_AGENT))


def _text(value: Any, limit: int | None) -> str:
    """``value`` as clean text of at most ``limit`` characters (a hash of the whole ends a shortened one)."""
    text = value if isinstance(value, str) else str(value)
    text, _ = clean_value(text)
    if limit is not None and len(text) > limit:
        digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
        text = f"{text[: limit - 18]}…#{digest}"
    return text


def mark_clean(call: ToolCall, args: bool, result: bool) -> None:
    """Say that ``call``'s ``args`` / ``result`` (as they are now) are values :func:`clean_value` leaves as they
    are; a value later replaced is walked again. Treat the values as read-only from here."""
    call.__dict__[_KNOWN_CLEAN] = (call.args if args else _NOT_KNOWN, call.result if result else _NOT_KNOWN)


_KNOWN_CLEAN = "_toolpath_clean_values"
"""Where a tool call made from clean text keeps its known-clean values (beside pydantic's fields, as the cached
properties of :mod:`toolpath.model` are kept)."""
_NOT_KNOWN = object()
_NOTHING_KNOWN = (_NOT_KNOWN, _NOT_KNOWN)
