"""What content leaves the process: capture on/off, redacted keys, value length (docs/spec.md §2).

Redaction and truncation happen here, before a value becomes a span attribute, so every processor and
exporter sees the same cleaned value.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from toolpath.redact import Redactor
from toolpath.tracer import originals
from toolpath.tracer.semconv import TRUNCATION_MARKER

DEFAULT_MAX_VALUE_LENGTH = 64 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class ContentPolicy:
    capture: bool = True
    redactor: Redactor | None = dataclasses.field(default_factory=Redactor.build)
    """Secret keys and patterns replaced before a value becomes an attribute (the collector's rules);
    ``None`` turns redaction off."""
    max_value_length: int = DEFAULT_MAX_VALUE_LENGTH

    @classmethod
    def build(
        cls,
        capture: bool,
        redact_keys: Iterable[str],
        max_value_length: int,
        *,
        redact: bool = True,
        redact_patterns: Mapping[str, str] | None = None,
    ) -> ContentPolicy:
        redactor = Redactor.build(redact_keys, redact_patterns) if redact else None
        return cls(capture, redactor, max_value_length)


_policy = ContentPolicy()


def policy() -> ContentPolicy:
    return _policy


def set_policy(new: ContentPolicy) -> None:
    global _policy
    _policy = new


def encode(value: Any) -> tuple[str, bool]:
    """A value as a span attribute: cut to about the configured length *first* (so the agent's thread never pays
    for more than the limit, however large the value), then redacted, serialised and clipped with the marker.
    The flag says whether anything was cut."""
    limit = _policy.max_value_length
    if value.__class__ is dict and not originals.open_count and _flat_size(value) < limit and _encode_chunks:
        # the usual tool value, a few plain fields: the bounded copy would equal it, so redact and encode it at once
        redactor = _policy.redactor
        try:
            text = "".join(_encode_chunks(value if redactor is None else redactor.value(value), 0))
        except (TypeError, ValueError):  # a key JSON has no text for: the full walk below writes its repr
            text = None
        if text is not None and len(text) <= limit:
            return text, False
    dropped = [0]
    bounded = _bounded(value, limit, [limit], dropped)
    text = _to_json_copied(bounded)
    cut = len(text) > limit or dropped[0] > 0
    if cut:
        text = text[:limit] + TRUNCATION_MARKER.format(dropped=max(len(text) - limit, 0) + dropped[0])
    if originals.open_count and _policy.redactor is not None and (kept := originals.current()) is not None:
        kept.keep(text, bounded, limit, dropped[0])  # an evaluation waits for this run: the value before redaction
    return text, cut


def encode_message(role: str, text: Any, finish_reason: str | None = None) -> tuple[str, bool]:
    """``[{"role", "parts": [{"type": "text", "content": text}], "finish_reason"}]`` as :func:`encode` writes it (a
    ``text`` that is not a string becomes its redacted JSON text first). A short text is redacted and quoted at
    once, without the walks :func:`encode` makes: a prompt or an answer is one string."""
    limit = _policy.max_value_length
    redactor = _policy.redactor
    if text.__class__ is str and len(text) < limit // 2 and not originals.open_count and _message_keys_plain(redactor):
        quote = json.encoder.encode_basestring
        if redactor is not None:
            role, text = redactor.text(role), redactor.text(text)
            finish_reason = None if finish_reason is None else redactor.text(finish_reason)
        closing = "}]" if finish_reason is None else f',"finish_reason":{quote(finish_reason)}}}]'
        out = f'[{{"role":{quote(role)},"parts":[{{"type":"text","content":{quote(text)}}}]{closing}'
        if len(out) <= limit:
            return out, False
    message: dict[str, Any] = {
        "role": role,
        "parts": [{"type": "text", "content": text if isinstance(text, str) else encode(text)[0]}],
    }
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return encode([message])


_MESSAGE_PROBE = {"role": "r", "parts": [{"type": "t", "content": "c"}], "finish_reason": "f"}
_message_keys_checked: tuple[Redactor | None, bool] = (None, True)


def _message_keys_plain(redactor: Redactor | None) -> bool:
    """Whether ``redactor`` leaves a message's keys and their short values as they are (a redact key named
    ``content`` or ``role`` would replace them whole): only then may :func:`encode_message` redact the text alone."""
    global _message_keys_checked
    if redactor is None:
        return True
    checked, plain = _message_keys_checked
    if checked is not redactor:
        plain = redactor.value(_MESSAGE_PROBE) == _MESSAGE_PROBE
        _message_keys_checked = (redactor, plain)
    return plain


def not_text(value: Any) -> str | None:
    """Why ``value``, an agent's response, has no text to record (``None``: it has, or it is a value recorded as
    its JSON): bytes, or a generator or coroutine the agent handed back instead of its result."""
    if isinstance(value, bytes | bytearray | memoryview):
        size = value.nbytes if isinstance(value, memoryview) else len(value)
        return f"the agent returned {size} bytes, not text"
    if inspect.isgenerator(value) or inspect.isasyncgen(value) or inspect.iscoroutine(value):
        return f"the agent returned a {type(value).__name__} object, not text"
    return None


def identifier(value: Any) -> str:
    """A session (or other grouping) id as a span attribute: its keyed pseudonym if redaction would touch it."""
    redactor = _policy.redactor
    text = str(value)
    return text if redactor is None else redactor.identifier(text)


def to_json(value: Any) -> str:
    """Serialise for a span attribute; never raises (unserialisable leaves become their ``repr``)."""
    return _redacted_json(value, _encode)


def _to_json_copied(value: Any) -> str:
    """:func:`to_json` of a value :func:`_bounded` built: a fresh tree, so no cycle the encoder must look for."""
    return _redacted_json(value, _encode_tree)


def _redacted_json(value: Any, encode: Callable[[Any], str]) -> str:
    redactor = _policy.redactor
    if redactor is not None:
        value = redactor.value(value, convert=_convertible)
    try:
        return encode(value)
    except (TypeError, ValueError):  # circular references, NaN keys and the like
        return json.dumps(repr(value), ensure_ascii=False)


def clip(text: str) -> tuple[str, bool]:
    """Cut ``text`` to the configured length with a visible marker; the flag says whether it was cut."""
    limit = _policy.max_value_length
    if len(text) <= limit:
        return text, False
    return text[:limit] + TRUNCATION_MARKER.format(dropped=len(text) - limit), True


_FLAT_FIELDS = 32


def _flat_size(value: dict[Any, Any]) -> int:
    """What :func:`_bounded` would spend on a dict of at most a few dozen plain fields (strings, numbers, booleans,
    ``None``), or a size past any limit for any other dict: below the limit the bounded copy equals the dict."""
    if len(value) > _FLAT_FIELDS:
        return _NOT_FLAT
    size = 2
    for item in value.values():
        kind = item.__class__
        if kind is str:
            size += len(item)
        elif kind is int or kind is float or kind is bool or item is None:
            size += 8
        else:
            return _NOT_FLAT
    return size


_NOT_FLAT = 1 << 62


MAX_DEPTH = 64
"""Containers nested deeper are recorded as :data:`TOO_DEEP` (a value that contains itself ends there too)."""
TOO_DEEP = "<nested too deep>"


def _bounded(value: Any, limit: int, budget: list[int], dropped: list[int], depth: int = 0) -> Any:
    """``value`` with strings longer than ``limit`` cut to ``limit + 1`` characters and containers cut once about
    ``limit`` characters of content were kept (``budget``: what is left, shared by the whole walk; each container
    spends from it too, so a value that contains itself, or a wide deep tree, ends). The work is bounded by the
    limit, not by the value's size; ``dropped`` counts the characters (or entries) left out."""
    kind = value.__class__
    if kind is str:
        budget[0] -= len(value)
        if len(value) > limit + 1:
            dropped[0] += len(value) - limit - 1
            return value[: limit + 1]
        return value
    if kind in (int, float, bool) or value is None:
        budget[0] -= 8
        return value
    if isinstance(value, Mapping):
        if depth >= MAX_DEPTH:
            dropped[0] += 1
            return TOO_DEEP
        budget[0] -= 2
        out: dict[Any, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if budget[0] <= 0:
                dropped[0] += len(value) - index
                return out
            out[key] = _bounded(item, limit, budget, dropped, depth + 1)
        return out
    if kind is list or kind is tuple or isinstance(value, set | frozenset):
        if depth >= MAX_DEPTH:
            dropped[0] += 1
            return TOO_DEEP
        budget[0] -= 2
        if isinstance(value, set | frozenset) and len(value) <= 10_000:
            value = sorted(value, key=repr)  # a stable order for a set; a huge one keeps its own
        items: list[Any] = []
        for index, item in enumerate(value):
            if budget[0] <= 0:
                dropped[0] += len(value) - index
                return items
            items.append(_bounded(item, limit, budget, dropped, depth + 1))
        return items
    if isinstance(value, bytes):
        budget[0] -= 16
        return f"<{len(value)} bytes>"
    converted = _convertible(value)
    return value if converted is value else _bounded(converted, limit, budget, dropped, depth + 1)


def _convertible(value: Any) -> Any:
    """Any value that is not JSON as a plain value redaction can look into: models and dataclasses as dicts, sets
    as sorted lists, anything else as its text (so a secret in an object's ``str`` is still found)."""
    return _fallback(value)


def _fallback(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic v2 models
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:  # a model that cannot dump itself still gets recorded
            return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


# One encoder for every call: ``json.dumps`` with options builds a new one each time.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_fallback).encode


def _c_encoder() -> Any:
    """The C encoder made once, without the cycle check: the value is a copy the bounded walk built (a cyclic
    value never gets this far), and ``JSONEncoder.encode`` would build the encoder again on every call."""
    make = getattr(json.encoder, "c_make_encoder", None)
    try:
        return (
            make(None, _fallback, json.encoder.encode_basestring, None, ":", ",", False, False, True) if make else None
        )
    except TypeError:  # another interpreter's signature
        return None


_encode_chunks = _c_encoder()


def _encode_tree(value: Any) -> str:
    if _encode_chunks is None:  # an interpreter without the C encoder
        return _encode(value)
    if value.__class__ is str:
        return json.encoder.encode_basestring(value)
    return "".join(_encode_chunks(value, 0))
