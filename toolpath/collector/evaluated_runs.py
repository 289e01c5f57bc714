"""The unredacted copy of the runs an evaluation is waiting for, rebuilt by the in-process collector's worker.

An evaluation that runs an agent must score what the agent did, while the store keeps what policy allows. While
it waits, it registers a :class:`Watched` (:class:`toolpath.tracer.originals.Originals`): the worker copies each
span of its traces *before* redacting it, with each attribute restored to the value the agent produced, rebuilds
the invocation from those copies as it rebuilds the stored one, and hands it to the evaluation alone. The copies
are dropped as the run is rebuilt, or with their trace; none of it is written, logged or exported. Traces nobody
waits for cost one truth test per span.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Protocol

from toolpath.collector.clean import clean_invocation, clean_span
from toolpath.collector.reconstruct import invocation_of_run
from toolpath.model import Invocation
from toolpath.store.spanrecord import SpanRecord


class Watched(Protocol):
    """What an evaluation waiting for runs gives the collector."""

    traces: set[str]
    invocations: dict[str, Invocation]

    def original(self, value: Any) -> Any:
        """An attribute value as the agent produced it (the value itself when nothing else is known)."""


class EvaluatedRuns:
    """Unredacted span copies of watched traces, and the invocations rebuilt from them."""

    def __init__(self) -> None:
        self._watched: tuple[Watched, ...] = ()
        self._copies: dict[str, tuple[Watched, dict[str, SpanRecord]]] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._watched or self._copies)

    def watch(self, watched: Watched) -> None:
        with self._lock:
            self._watched = (*self._watched, watched)

    def unwatch(self, watched: Watched) -> None:
        """Stop watching; the copies of its traces go too (called by the worker's owner from any thread)."""
        with self._lock:
            self._watched = tuple(w for w in self._watched if w is not watched)
            for trace_id in [t for t, (w, _) in self._copies.items() if w is watched]:
                del self._copies[trace_id]

    def keep(self, record: SpanRecord) -> None:
        """On the worker, before ``record`` is redacted: a copy with the agent's values, if its trace is watched."""
        trace_id = record.trace_id
        with self._lock:
            held = self._copies.get(trace_id)
            if held is None:
                owner = next((w for w in self._watched if trace_id in w.traces), None)
                if owner is None:
                    return
                held = self._copies[trace_id] = (owner, {})
        owner, spans = held
        original = owner.original
        copy = dataclasses.replace(
            record,
            attributes={key: original(value) for key, value in record.attributes.items()},
            events=[{**e, "attributes": {k: original(v) for k, v in (e.get("attributes") or {}).items()}}
                    for e in record.events],
        )  # fmt: skip
        clean_span(copy, shorten=False)
        spans[record.span_id] = copy

    def build(self, run: SpanRecord, subtree: list[SpanRecord]) -> None:
        """Rebuild ``run`` (and ``subtree``, its spans as stored) from the copies, for the evaluation waiting."""
        with self._lock:
            held = self._copies.get(run.trace_id)
        if held is None:
            return
        owner, spans = held
        copied_run = spans.pop(run.span_id, run)
        copied = [spans.pop(span.span_id, span) for span in subtree]
        if not spans:
            with self._lock:
                self._copies.pop(run.trace_id, None)
        invocation = clean_invocation(invocation_of_run(copied_run, copied))
        owner.invocations[invocation.invocation_id] = invocation

    def drop(self, trace_id: str) -> None:
        """The trace is gone (evicted): so are its copies."""
        with self._lock:
            self._copies.pop(trace_id, None)
