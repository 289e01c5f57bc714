"""What an agent produced before redaction, kept in this process's memory while an evaluation waits for its run.

Redaction happens on the agent's thread, before a value becomes a span attribute (:func:`toolpath.tracer.content.
encode`): the store, the OTLP exporter and every processor of the provider only ever see the redacted text. An
evaluation must score what the agent did, so while it runs the agent it opens :func:`watching`: in that context
each value the tracer encodes is also kept as the plain snapshot the encoder made of it anyway (one dictionary
entry on the agent's thread, nothing more), keyed by the redacted text that became the attribute, and each agent
run started there notes its trace. The in-process collector's worker (off the agent's thread) asks
:meth:`Originals.original` for each attribute of those traces' spans, rebuilds the unredacted invocation next to
the stored one and leaves it in :attr:`Originals.invocations`, for the evaluation alone.

Nothing here is written, logged or exported; it lives as long as the evaluation holds it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from toolpath.model import Invocation
from toolpath.tracer.semconv import TRUNCATION_MARKER

__all__ = ["Originals", "watching"]

open_count = 0
"""How many :func:`watching` contexts are open in the process: the tracer's hot path reads only this while none is."""
_current: ContextVar[Originals | None] = ContextVar("toolpath_originals", default=None)
_count_lock = threading.Lock()
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


class Originals:
    """The values the agent produced in one evaluation's runs, before redaction, and the invocations rebuilt from
    them."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[str, Any, int, int]] = {}
        """id(redacted text) -> (that text, the value before redaction, the length limit, characters dropped)."""
        self.traces: set[str] = set()
        """Trace ids (32 hex digits) of the agent runs started while watching."""
        self.invocations: dict[str, Invocation] = {}
        """Invocation id -> the invocation as the collector rebuilt it from the unredacted values."""

    def keep(self, text: str, value: Any, limit: int, dropped: int) -> None:
        """Called on the agent's thread: ``text`` (an attribute's redacted value) was made of ``value`` (a plain
        snapshot: fresh containers, immutable leaves) cut to ``limit`` characters, ``dropped`` of them left out."""
        self._kept[id(text)] = (text, value, limit, dropped)

    def note_trace(self, trace_id: int) -> None:
        self.traces.add(format(trace_id, "032x"))

    def original(self, value: Any) -> Any:
        """An attribute value as the tracer would have written it without redaction; other values as they are."""
        if value.__class__ is not str:
            return value
        kept = self._kept.get(id(value))
        if kept is None or kept[0] is not value:
            return value
        _, plain, limit, dropped = kept
        try:
            text = _encode(self._resolved(plain))
        except (TypeError, ValueError):  # as the encoder does: keys JSON cannot take
            text = json.dumps(repr(plain), ensure_ascii=False)
        if len(text) <= limit and not dropped:
            return text
        return text[:limit] + TRUNCATION_MARKER.format(dropped=max(len(text) - limit, 0) + dropped)

    def _resolved(self, plain: Any) -> Any:
        """``plain`` with every redacted text inside it (a non-text answer encoded into a message) restored."""
        kind = plain.__class__
        if kind is str:
            return self.original(plain)
        if kind is dict:
            return {key: self._resolved(item) for key, item in plain.items()}
        if kind is list:
            return [self._resolved(item) for item in plain]
        return plain


def current() -> Originals | None:
    """The :class:`Originals` of the evaluation whose agent runs in this context, if any."""
    return _current.get() if open_count else None


@contextlib.contextmanager
def watching(originals: Originals) -> Iterator[Originals]:
    """Keep what the agent produces in this context (and contexts copied from it) in ``originals``."""
    global open_count
    token = _current.set(originals)
    with _count_lock:
        open_count += 1
    try:
        yield originals
    finally:
        with _count_lock:
            open_count -= 1
        _current.reset(token)
