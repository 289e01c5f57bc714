"""The in-process collector: a span processor that turns finished agent runs into stored invocations.

``on_start`` / ``on_end`` run on the agent's thread, so they only note agent spans and append to a bounded
deque; when the deque is full the span is dropped and counted, never blocking the agent. Spans that end
while no agent run is open in their trace (the application's own HTTP or database spans) are not taken:
holding them would cost memory and garbage-collector time for nothing. A daemon worker wakes every ``interval``
(or sooner: a flush, an evaluation waiting for a run, a filling queue), prepares the drained spans as one batch,
groups them by trace, rebuilds each outermost agent run once its span has ended (children end before their
parent, so by then its tool spans are in), and writes invocations and raw spans to the store in batches.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context
from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import SpanKind, StatusCode

from toolpath.collector.clean import clean_invocation
from toolpath.collector.evaluated_runs import EvaluatedRuns
from toolpath.collector.prepare import SpanPreparer
from toolpath.collector.reconstruct import AGENT_SPAN_PREFIXES, invocation_of_run, is_agent_span
from toolpath.model import Invocation
from toolpath.redact import Redactor, hide_passwords
from toolpath.store.spanrecord import STATUS_ERROR, STATUS_OK, STATUS_UNSET, SpanRecord
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc

logger = logging.getLogger("toolpath.collector")

DEFAULT_MAX_QUEUE = 50_000
_IDLE_TRACE_SECONDS = 60.0
_MAX_BUFFERED_SPANS = 200_000
"""Spans held while waiting for their agent run to end; past this the least recently touched traces go."""
_WAKE_AT = 2048
_RECENT_RESULTS = 256
_WRITE_ATTEMPTS = 3
_REOPEN_SECONDS = 5.0


@dataclass
class CollectorStats:
    """Counters of what the collector did; read them with ``toolpath.stats()``."""

    spans_received: int = 0
    spans_dropped: int = 0
    """Spans lost because the queue was full (the agent was never blocked)."""
    invocations_written: int = 0
    invocations_lost: int = 0
    """Invocations that could not be written after retries (the store was down)."""
    spans_quarantined: int = 0
    """Spans left out because they could not be redacted (nothing is stored unredacted); the rest of their batch
    is kept."""
    store_errors: int = 0
    internal_errors: int = 0
    extra: dict[str, int] = field(default_factory=dict)


@dataclass
class _Trace:
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    touched: float = 0.0
    written: bool = False
    deferred: list[SpanRecord] = field(default_factory=list)
    """Agent runs that ended while another run of the trace was open: the outer run's, unless no run takes them."""


class _Marker:
    """Put in the queue by ``flush``; set when the worker reaches it."""

    def __init__(self) -> None:
        self.done = threading.Event()


class InProcessCollector:
    """Collects this process's spans and writes each finished agent run to ``store`` (if any)."""

    def __init__(
        self,
        store: Store | None,
        *,
        max_queue: int = DEFAULT_MAX_QUEUE,
        interval: float = 0.2,
        redactor: Redactor | None = None,
        open_store: Callable[[], Store] | None = None,
    ) -> None:
        self.store = store
        self._open_store = open_store if store is None else None
        """Opens the store later, on this worker, when it could not be opened at start (down, locked)."""
        self.on_store_open: Callable[[Store], None] | None = None
        """Called with the store opened later, on this worker, before anything is written to it (online
        evaluation starts there, so that every invocation written is queued for it)."""
        self._next_open = 0.0
        self.redactor = redactor
        self._preparer = SpanPreparer(redactor)
        self.stats = CollectorStats()
        self._max_queue = max_queue
        self._wake_at = min(_WAKE_AT, max_queue // 2)
        """Queued spans that wake the worker before its interval is up."""
        self._interval = interval
        self._queue: deque[Any] = deque()
        self._open_agents: set[int] = set()
        self._agent_traces: dict[int, int] = {}
        """Trace id -> agent spans open in it. Only spans of those traces are collected."""
        self._wake = threading.Event()
        self._stopping = False
        self._lock = threading.Lock()
        self._traces: dict[str, _Trace] = {}
        self._buffered = 0
        self._waiters: dict[str, Future[Invocation]] = {}
        self._recent: OrderedDict[str, Invocation] = OrderedDict()
        self.evaluated = EvaluatedRuns()
        """Runs an evaluation waits for, rebuilt from the agent's own values too (never stored)."""
        self._last_drop_log = 0.0
        self._worker = threading.Thread(target=self._run, name="toolpath-collector", daemon=True)
        self._worker.start()

    def after_fork(self) -> None:
        """In a child of ``fork()``: the worker thread did not come along, and the spans and runs the parent had
        queued are the parent's to write. Start empty, with a worker of this process's own."""
        self._queue = deque()
        self._open_agents = set()
        self._agent_traces = {}
        self._wake = threading.Event()
        self._stopping = False
        self._lock = threading.Lock()
        self._traces = {}
        self._buffered = 0
        self._waiters = {}
        self._recent = OrderedDict()
        self.evaluated = EvaluatedRuns()
        self.stats = CollectorStats()
        self._worker = threading.Thread(target=self._run, name="toolpath-collector", daemon=True)
        self._worker.start()

    # --- agent thread --------------------------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        # The name test is cheap and rules out almost every span; attribute look-ups on the SDK's
        # BoundedAttributes cost several microseconds when the key is missing.
        if (span.name.startswith(AGENT_SPAN_PREFIXES) and is_agent_span(span.attributes or {})) or (
            span.name == "invocation" and getattr(span.instrumentation_scope, "name", None) == sc.ADK_SCOPE
        ):  # ADK's legacy format: one "invocation" span above the turn's agents (a transfer adds one)
            ctx = span.context
            with self._lock:
                self._open_agents.add(ctx.span_id)
                self._agent_traces[ctx.trace_id] = self._agent_traces.get(ctx.trace_id, 0) + 1

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        is_root = nested = False
        if ctx.span_id in self._open_agents:
            with self._lock:
                self._open_agents.discard(ctx.span_id)
                parent = span.parent
                is_root = parent is None or parent.span_id not in self._open_agents
                left = self._agent_traces.pop(ctx.trace_id, 1) - 1
                if left:
                    self._agent_traces[ctx.trace_id] = left
                # another run of this trace is still open: this one may be inside it (ADK's AgentTool runs its
                # agent in a nested run under the tool span); decided when the last one ends
                nested = is_root and left > 0
        elif ctx.trace_id not in self._agent_traces:
            return  # not inside an agent run: not ours to keep (the application's exporters still get it)
        queued = len(self._queue)
        if queued >= self._max_queue or self._stopping:
            self._count_drop()
            return
        self._queue.append((span, is_root, nested))
        # The worker drains every ``interval`` on its own, or when a flush or an evaluation waits: waking it at
        # each run's end handed the interpreter lock back and forth on every run (20 µs a tool call on the
        # agent's thread, and a worker working on cold caches). A queue filling up wakes it early.
        if queued == self._wake_at:
            self._wake.set()

    def _count_drop(self) -> None:
        with self._lock:
            self.stats.spans_dropped += 1
            now = time.monotonic()
            if now - self._last_drop_log > 10:
                self._last_drop_log = now
                logger.warning("toolpath: span queue full, dropping spans (%d so far)", self.stats.spans_dropped)

    # --- public control ----------------------------------------------------------------------------------

    @property
    def store_pending(self) -> bool:
        """True while the store could not be opened yet (it is retried on the worker)."""
        return self._open_store is not None

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued before this call has been processed and written."""
        if not self._worker.is_alive():
            return not self._queue
        marker = _Marker()
        self._queue.append(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    def shutdown(self, timeout: float = 10.0) -> None:
        self.flush(timeout)
        self._stopping = True
        self._wake.set()
        self._worker.join(timeout)

    def wait_for_invocation(self, invocation_id: str, timeout: float = 10.0) -> Invocation | None:
        """The invocation of the agent span ``invocation_id`` once it has been rebuilt (and written)."""
        with self._lock:
            if invocation_id in self._recent:
                return self._recent[invocation_id]
            future = self._waiters.setdefault(invocation_id, Future())
        self._wake.set()
        try:
            return future.result(timeout)
        except TimeoutError:
            return None
        finally:
            with self._lock:
                self._waiters.pop(invocation_id, None)

    # --- worker ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        # The store's own I/O must not produce spans that come back here.
        context.attach(context.set_value(context._SUPPRESS_INSTRUMENTATION_KEY, True))
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            try:
                self._drain()
                self._evict_idle()
            except Exception:
                self.stats.internal_errors += 1
                logger.exception("toolpath: collector worker error")
            if self._stopping and not self._queue:
                self._evict_idle(everything=True)
                return

    def _drain(self) -> None:
        while self._queue:
            if self.store is None and self._open_store is not None:
                self._try_open()  # before redacting: spans written to the store carry the store's pseudonyms
            markers: list[_Marker] = []
            items: list[tuple[ReadableSpan, bool, bool]] = []
            for _ in range(len(self._queue)):
                item = self._queue.popleft()
                if isinstance(item, _Marker):
                    markers.append(item)
                else:
                    items.append(item)
            records = [record_from_readable(span) for span, _, _ in items]
            if self.evaluated:  # an evaluation waits for these runs: copies with the agent's values, kept here
                for record in records:
                    self.evaluated.keep(record)
            # every span cleaned (what the store cannot take: NUL, NaN, times past 2262…), redacted (other
            # instrumentations' spans, and what the application added to ours) and its names fitted, the batch at
            # once: spans nothing would change are proven so by a few tests over all their text
            self._take(self._preparer.prepare_each(records), items)
            for marker in markers:
                marker.done.set()

    def _take(self, records: list[SpanRecord | None], items: list[tuple[ReadableSpan, bool, bool]]) -> None:
        """Hold each prepared span in its trace and rebuild the runs that ended; a span that could not be redacted
        (``None``) is left out, counted, and the rest go on."""
        roots: list[SpanRecord] = []
        now = time.monotonic()
        traces = self._traces
        for record, (_, is_root, nested) in zip(records, items, strict=True):
            if record is None:
                self.stats.spans_quarantined += 1
                continue
            self.stats.spans_received += 1
            trace = traces.pop(record.trace_id, None) or _Trace()
            traces[record.trace_id] = trace  # re-insert: dict order = least recently touched first
            if record.span_id not in trace.spans:
                self._buffered += 1
            trace.spans[record.span_id] = record
            trace.touched = now
            if nested:
                trace.deferred.append(record)
            elif is_root:
                roots.append(record)
        self._complete(roots)

    def _complete(self, roots: list[SpanRecord]) -> None:
        if not roots:
            return
        invocations: list[Invocation] = []
        spans: list[SpanRecord] = []
        for root in roots:
            trace = self._traces.get(root.trace_id)
            if trace is None:
                continue
            # the run that ended last in its trace, then the deferred runs it does not contain
            runs, trace.deferred = [root, *trace.deferred], []
            self._build(trace, runs, invocations, spans)
            if not trace.spans:  # nothing else pending in this trace: forget it now, not in a minute
                self._traces.pop(root.trace_id, None)
        self._write(invocations, spans)
        with self._lock:
            for inv in invocations:
                self._recent[inv.invocation_id] = inv
                if len(self._recent) > _RECENT_RESULTS:
                    self._recent.popitem(last=False)
                waiter = self._waiters.get(inv.invocation_id)
                if waiter is not None and not waiter.done():
                    waiter.set_result(inv)

    def _build(
        self, trace: _Trace, runs: list[SpanRecord], invocations: list[Invocation], spans: list[SpanRecord]
    ) -> None:
        """Rebuild each of ``runs`` not inside one built before it, taking its spans out of ``trace``."""
        for run in runs:
            if run.span_id not in trace.spans:
                continue  # inside a run built already
            subtree = _take_subtree(trace, run)
            self._buffered -= len(subtree) + 1
            if self.evaluated:
                self.evaluated.build(run, subtree)
            invocations.append(clean_invocation(invocation_of_run(run, subtree)))
            spans.append(run)
            spans.extend(subtree)
        trace.written = True

    def _write(self, invocations: list[Invocation], spans: list[SpanRecord]) -> bool:
        if self.store is None and self._open_store is not None:
            self._try_open()
            if self.store is None:
                self.stats.invocations_lost += len(invocations)
                return False
        if self.store is None:
            return True
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                self.store.write(invocations, spans)
            except Exception as exc:
                self.stats.store_errors += 1
                if attempt + 1 == _WRITE_ATTEMPTS:
                    self.stats.invocations_lost += len(invocations)
                    why = self.store.hide_password(str(exc))
                    logger.error("toolpath: could not write %d invocation(s) to the store: %s", len(invocations), why)
                    return False
                time.sleep(0.05 * 4**attempt)
            else:
                self.stats.invocations_written += len(invocations)
                return True
        return False

    def _try_open(self) -> None:
        """Open the deferred store, at most every few seconds, on this worker (never on the agent's thread)."""
        now = time.monotonic()
        if self._open_store is None or now < self._next_open:
            return
        try:
            self.store = self._open_store()
        except Exception as exc:
            self.stats.store_errors += 1
            self._next_open = now + _REOPEN_SECONDS
            logger.debug("toolpath: store still unavailable: %s", hide_passwords(str(exc)))
        else:
            self._open_store = None
            if self.redactor is not None:  # the store's pseudonyms from now on, as every process sharing it
                use_store_pseudonyms(self.redactor, self.store)
            if self.on_store_open is not None:
                self.on_store_open(self.store)
            logger.warning("toolpath: the store is reachable now; invocations are written again")

    def _evict_idle(self, everything: bool = False) -> None:
        """Forget traces nobody added to for a while, or the oldest when too many spans are held; spans
        late for an already written trace are stored, spans of traces with no agent run are not."""
        cutoff = time.monotonic() - _IDLE_TRACE_SECONDS
        late: list[SpanRecord] = []
        orphans: list[Invocation] = []
        while self._traces:
            trace_id, trace = next(iter(self._traces.items()))  # least recently touched
            if not (everything or trace.touched < cutoff or self._buffered > _MAX_BUFFERED_SPANS):
                break
            if trace.deferred:  # the run they were waiting for never ended here: they are runs of their own
                runs, trace.deferred = trace.deferred, []
                self._build(trace, runs, orphans, late)
            del self._traces[trace_id]
            if self.evaluated:
                self.evaluated.drop(trace_id)
            self._buffered -= len(trace.spans)
            if trace.written:
                late.extend(trace.spans.values())
        if late:
            self._write(orphans, late)


def use_store_pseudonyms(redactor: Redactor, store: Store) -> None:
    """Pseudonymise identifiers with ``store``'s secret from now on (the collector's, when they share the store);
    if it cannot be read, the process's key stays, with a warning."""
    try:
        redactor.pseudonym_key = store.pseudonym_key()
    except Exception as exc:
        why = store.hide_password(str(exc))
        logger.warning("toolpath: cannot read the store's pseudonym key (%s); this process uses its own", why)


def _take_subtree(trace: _Trace, root: SpanRecord) -> list[SpanRecord]:
    """Remove and return the spans of ``trace`` that descend from ``root``."""
    trace.spans.pop(root.span_id, None)
    children: dict[str, list[SpanRecord]] = {}
    for span in trace.spans.values():
        if span.parent_span_id is not None:
            children.setdefault(span.parent_span_id, []).append(span)
    found: list[SpanRecord] = []
    stack = [root.span_id]
    while stack:
        for child in children.pop(stack.pop(), ()):
            found.append(trace.spans.pop(child.span_id))
            stack.append(child.span_id)
    return found


def record_from_readable(span: ReadableSpan) -> SpanRecord:
    """An SDK span as a :class:`SpanRecord`."""
    ctx = span.context
    parent = span.parent
    status = span.status
    scope = span.instrumentation_scope
    trace_id = ctx.trace_id
    hex_trace = _trace_hex.get(trace_id)
    if hex_trace is None:  # the spans of a run share their trace: its id is formatted once
        if len(_trace_hex) >= _TRACE_HEX_KEPT:
            _trace_hex.clear()
        hex_trace = _trace_hex[trace_id] = format(trace_id, "032x")
    return SpanRecord(
        hex_trace,
        format(ctx.span_id, "016x"),
        format(parent.span_id, "016x") if parent is not None else None,
        span.name,
        _KIND_FROM_SDK[span.kind],  # SDK enum starts at INTERNAL=0, OTLP at INTERNAL=1
        span.start_time or 0,
        span.end_time,
        _STATUS_FROM_SDK[status.status_code],
        status.description,
        _plain(_attributes_of(span)),
        [{"name": e.name, "time_unix_nano": e.timestamp, "attributes": _plain(e.attributes)} for e in span.events]
        if getattr(span, "_events", True)  # a span with none (the usual one) is not copied for nothing
        else [],
        _resource(span.resource),
        scope.name if scope is not None else None,
    )


_STATUS_FROM_SDK = {StatusCode.UNSET: STATUS_UNSET, StatusCode.OK: STATUS_OK, StatusCode.ERROR: STATUS_ERROR}
_KIND_FROM_SDK = {kind: kind.value + 1 for kind in SpanKind}
_trace_hex: dict[int, str] = {}
_TRACE_HEX_KEPT = 1024


def _attributes_of(span: ReadableSpan) -> Any:
    """The span's attributes; the SDK's own dict when it can be read directly (``span.attributes`` wraps it in a
    read-only proxy over a mapping whose every read is a Python call: six times slower to copy)."""
    bounded = getattr(span, "_attributes", None)
    inner = getattr(bounded, "_dict", None)
    if inner.__class__ is dict or inner.__class__ is OrderedDict:
        return inner
    return span.attributes


def _plain(attributes: Any) -> dict[str, Any]:
    if not attributes:
        return {}
    plain = dict(attributes)
    if tuple in set(map(type, plain.values())):
        for key, value in plain.items():
            if type(value) is tuple:  # sequence attributes: store as JSON arrays
                plain[key] = list(value)
    return plain


_resources: dict[int, tuple[Any, dict[str, Any]]] = {}


def _resource(resource: Any) -> dict[str, Any]:
    """A provider has one resource for all its spans: convert it once (keyed by identity)."""
    if resource is None:
        return {}
    cached = _resources.get(id(resource))
    if cached is None or cached[0] is not resource:
        cached = (resource, _plain(resource.attributes))
        if len(_resources) > 64:
            _resources.clear()
        _resources[id(resource)] = cached
    return cached[1]
