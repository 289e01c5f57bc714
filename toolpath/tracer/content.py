"""What content leaves the process: capture on/off, redacted keys, value length (SPEC §2).

Redaction and truncation happen here, before a value becomes a span attribute, so every processor and
exporter sees the same cleaned value.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from toolpath.tracer.semconv import REDACTED, TRUNCATION_MARKER

DEFAULT_MAX_VALUE_LENGTH = 64 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class ContentPolicy:
    capture: bool = True
    redact_keys: frozenset[str] = frozenset()
    """Lower-cased object keys whose values are replaced by ``[REDACTED]`` at any depth."""
    max_value_length: int = DEFAULT_MAX_VALUE_LENGTH

    @classmethod
    def build(cls, capture: bool, redact_keys: Iterable[str], max_value_length: int) -> ContentPolicy:
        return cls(capture, frozenset(k.lower() for k in redact_keys), max_value_length)


_policy = ContentPolicy()


def policy() -> ContentPolicy:
    return _policy


def set_policy(new: ContentPolicy) -> None:
    global _policy
    _policy = new


def to_json(value: Any) -> str:
    """Serialise for a span attribute; never raises (unserialisable leaves become their ``repr``)."""
    keys = _policy.redact_keys
    if keys:
        value = redact(value, keys)
    try:
        return _encode(value)
    except (TypeError, ValueError):  # circular references, NaN keys and the like
        return json.dumps(repr(value), ensure_ascii=False)


def clip(text: str) -> tuple[str, bool]:
    """Cut ``text`` to the configured length with a visible marker; the flag says whether it was cut."""
    limit = _policy.max_value_length
    if len(text) <= limit:
        return text, False
    return text[:limit] + TRUNCATION_MARKER.format(dropped=len(text) - limit), True


def redact(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        return {k: REDACTED if isinstance(k, str) and k.lower() in keys else redact(v, keys) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, keys) for v in value]
    if (dataclasses.is_dataclass(value) and not isinstance(value, type)) or hasattr(value, "model_dump"):
        return redact(_fallback(value), keys)
    return value


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
