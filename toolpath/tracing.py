"""``toolpath.init()``: connect the tracer to the collector, the store, (optionally) an OTLP backend and online
evaluation; ``flush``, ``shutdown`` and ``stats``.

If the application already installed an SDK ``TracerProvider``, toolpath adds one processor to it and never
replaces or removes the application's own processors. Otherwise it installs a provider of its own. Calling
``init`` again while set up returns the running configuration; ``shutdown`` detaches toolpath, after which
``init`` may be called again (the one processor toolpath added is reused, not stacked).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from toolpath.collector.in_process import InProcessCollector, use_store_pseudonyms
from toolpath.errors import ConfigError
from toolpath.process_events import unwatch_process, watch_process
from toolpath.redact import Redactor
from toolpath.store.store import Store, resolve_store_url
from toolpath.tracer import content, untraced
from toolpath.tracer.exporters import CountingExporter, otlp_exporter

__all__ = ["Tracing", "flush", "init", "shutdown", "stats"]

logger = logging.getLogger("toolpath.tracer")

DEFAULT_SERVICE_NAME = "toolpath-agent"


class _Slot(SpanProcessor):
    """The one processor toolpath adds to a provider; forwards to whatever toolpath runs now (or nothing)."""

    def __init__(self) -> None:
        self.targets: tuple[Any, ...] = ()

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        for target in self.targets:
            try:
                target.on_start(span, parent_context)
            except Exception:  # never raise into the application
                logger.debug("toolpath: on_start failed", exc_info=True)

    def on_end(self, span: ReadableSpan) -> None:
        for target in self.targets:
            try:
                target.on_end(span)
            except Exception:
                logger.debug("toolpath: on_end failed", exc_info=True)

    def shutdown(self) -> None:
        self.targets = ()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return all(target.force_flush(timeout_millis) for target in self.targets if hasattr(target, "force_flush"))


class _CollectorAdapter:
    """Gives the collector the ``force_flush`` the slot expects."""

    def __init__(self, collector: InProcessCollector) -> None:
        self.collector = collector
        self.on_start = collector.on_start
        self.on_end = collector.on_end

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.collector.flush(timeout_millis / 1000)


@dataclass
class Tracing:
    """What ``init`` set up."""

    provider: TracerProvider
    collector: InProcessCollector
    store: Store | None
    exporter: CountingExporter | None
    export_processor: BatchSpanProcessor | None
    slot: _Slot
    online: Any = None
    """The online evaluator started by ``toolpath.init(online=...)``; stopped first by ``shutdown``."""
    losses_seen: int = 0
    """Spans and invocations lost (dropped, not stored, not exported) as of the last ``flush``."""

    def losses(self) -> int:
        s = self.collector.stats
        exported = self.exporter.dropped if self.exporter is not None else 0
        return s.spans_dropped + s.spans_quarantined + s.invocations_lost + exported + untraced.count()


_slots: weakref.WeakKeyDictionary[TracerProvider, _Slot] = weakref.WeakKeyDictionary()
_current: Tracing | None = None
_lock = threading.RLock()


def init(
    store: str | Store | bool | None = None,
    *,
    online: str | Path | Mapping[str, Any] | Any | None = None,
    service_name: str | None = None,
    otlp_endpoint: str | None = None,
    capture_content: bool = True,
    redact_keys: Iterable[str] = (),
    redact: bool = True,
    redact_patterns: Mapping[str, str] | None = None,
    max_value_length: int = content.DEFAULT_MAX_VALUE_LENGTH,
    tracer_provider: TracerProvider | None = None,
    max_queue: int | None = None,
) -> Tracing:
    """Set up tracing once; later calls return the running setup.

    Args:
        store: a database URL, a :class:`Store`, ``None`` for ``$TOOLPATH_STORE`` or ``sqlite:///toolpath.db``,
            or ``False`` to keep no store (spans still reach the collector and any OTLP exporter).
        service_name: ``service.name`` of the provider toolpath installs (ignored for an existing provider).
        otlp_endpoint: also export every span to this OTLP endpoint. Without it the standard
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` variables are honoured.
        capture_content: record prompts, responses, tool arguments and results (needed for evaluation).
        redact_keys: object keys whose values are replaced by ``[REDACTED]`` before anything leaves the process,
            on top of the defaults of :mod:`toolpath.redact` (``password``, ``api_key``, ``authorization``…).
        redact: ``False`` turns redaction off (keys and patterns).
        redact_patterns: name -> regular expression replaced inside strings, on top of the defaults (API keys,
            bearer tokens, e-mail addresses, card numbers); a name of a default replaces that default.
        max_value_length: longer attribute values are cut, with a marker.
        tracer_provider: the SDK provider to attach to; the global one by default.
        max_queue: spans the collector may hold before it drops (and counts) new ones.
        online: an ``online.toml`` path, a mapping with its keys, or an
            :class:`~toolpath.evaluation.online.OnlineConfig`: every invocation written to the store from now on
            that passes its filters and sample is scored by workers of their own, off the agent's threads.
    """
    global _current
    with _lock:
        if _current is not None:
            _start_online(_current, online)
            return _current
        if max_value_length < 64:
            raise ConfigError(f"max_value_length must be at least 64, got {max_value_length}")
        content.set_policy(
            content.ContentPolicy.build(
                capture_content, redact_keys, max_value_length, redact=redact, redact_patterns=redact_patterns
            )
        )
        provider = tracer_provider or _global_sdk_provider(service_name)
        redactor = content.policy().redactor
        the_store, open_later = _open_store(store, redactor)
        collector = InProcessCollector(
            the_store,
            redactor=redactor,
            open_store=open_later,
            **({"max_queue": max_queue} if max_queue else {}),
        )
        exporter, export_processor = otlp_exporter(otlp_endpoint)
        slot = _slots.get(provider)
        if slot is None:
            slot = _slots[provider] = _Slot()
            provider.add_span_processor(slot)
        targets: list[Any] = [_CollectorAdapter(collector)]
        if export_processor is not None:
            targets.append(export_processor)
        slot.targets = tuple(targets)
        _current = Tracing(provider, collector, the_store, exporter, export_processor, slot)
        _current.losses_seen = _current.losses()  # calls untraced before this setup are not its losses
        watch_process(shutdown, _in_forked_child)  # exit, SIGTERM, fork: nothing traced is lost silently
        _start_online(_current, online)
        return _current


def _start_online(tracing: Tracing, online: Any) -> None:
    if online is None or tracing.online is not None:
        return
    from toolpath.evaluation.catalog import resolve_metric
    from toolpath.evaluation.online import OnlineConfig, OnlineEvaluator

    redactor = content.policy().redactor
    if tracing.store is None and tracing.collector.store_pending:
        config = OnlineConfig.load(online)  # a bad config (or metric) is an error now, not once the store opens
        for spec in config.specs:
            for metric in spec.metrics:
                resolve_metric(metric)

        def start(store: Store) -> None:  # on the collector's worker, before it writes anything to the store
            try:
                tracing.online = OnlineEvaluator(store, config, redactor=redactor).start()
            except Exception:
                logger.exception("toolpath: online evaluation could not start once the store opened")

        tracing.collector.on_store_open = start
        logger.warning("toolpath: online evaluation starts once the store opens")
        return
    if tracing.store is None:
        raise ConfigError("online evaluation needs a store (init(store=False) keeps none)")
    tracing.online = OnlineEvaluator(tracing.store, online, redactor=redactor).start()


def current() -> Tracing | None:
    return _current


def flush(timeout: float = 10.0) -> bool:
    """Write everything traced so far to the store and push it to the OTLP exporter, waiting at most ``timeout``
    seconds in all. True only when all of it was delivered: nothing still pending, and no span or invocation
    dropped, lost or refused by the exporter since the previous ``flush``."""
    tracing = _current
    if tracing is None:
        return True
    deadline = time.monotonic() + timeout
    ok = tracing.collector.flush(timeout)
    if tracing.export_processor is not None:
        # the SDK's force_flush exports in the caller's thread and ignores its timeout: bound it here
        processor = tracing.export_processor
        ok = _within(max(0.0, deadline - time.monotonic()), processor.force_flush) and ok
    losses = tracing.losses()
    ok = ok and losses == tracing.losses_seen
    tracing.losses_seen = losses
    return ok


def _within(seconds: float, work: Callable[[], bool]) -> bool:
    """``work()`` in a daemon thread; False when it did not finish (or failed) within ``seconds``."""
    result: list[bool] = []

    def run() -> None:
        try:
            result.append(bool(work()))
        except Exception:
            logger.warning("toolpath: flushing the exporter failed", exc_info=True)

    thread = threading.Thread(target=run, name="toolpath-flush", daemon=True)
    thread.start()
    thread.join(seconds)
    return bool(result and result[0])


def shutdown(timeout: float = 10.0) -> None:
    """Flush, stop the collector and exporter, and detach from the provider."""
    global _current
    with _lock:
        tracing = _current
        if tracing is None:
            return
        _current = None
        unwatch_process()
        tracing.slot.targets = ()
        tracing.collector.shutdown(timeout)
        if tracing.online is not None:  # after the collector's last writes, so their jobs are enqueued
            tracing.online.stop(timeout)
        if tracing.export_processor is not None:
            processor = tracing.export_processor
            _within(timeout, lambda: processor.shutdown() or True)
        opened = tracing.store or tracing.collector.store  # a store opened late belongs to the collector
        if opened is not None:
            opened.close()
        content.set_policy(content.ContentPolicy())


def _in_forked_child() -> None:
    """In a child of ``fork()``: the lock, the collector's worker thread and the store's connections anew (none of
    the parent's threads exist here, and its connections are the parent's to use)."""
    global _lock
    _lock = threading.RLock()
    tracing = _current
    if tracing is None:
        return
    tracing.collector.after_fork()
    opened = tracing.store or tracing.collector.store
    if opened is not None:
        opened.engine.dispose(close=False)
    if tracing.online is not None:  # online scoring stays with the parent's workers
        tracing.online = None


def stats() -> dict[str, int]:
    """Counters: spans received, dropped and quarantined (not redactable), invocations written and lost; with an
    OTLP exporter, spans exported and dropped (``spans_export_dropped``: refused, failed, or
    ``spans_export_queue_full`` of them dropped because the export queue was full)."""
    tracing = _current
    if tracing is None:
        return {}
    s = tracing.collector.stats
    out = {
        "spans_received": s.spans_received,
        "spans_dropped": s.spans_dropped,
        "spans_quarantined": s.spans_quarantined,
        "invocations_written": s.invocations_written,
        "invocations_lost": s.invocations_lost,
        "store_errors": s.store_errors,
        "internal_errors": s.internal_errors,
        "calls_untraced": untraced.count(),
    }
    if tracing.exporter is not None:
        out["spans_exported"] = tracing.exporter.exported
        out["spans_export_dropped"] = tracing.exporter.dropped
        out["spans_export_queue_full"] = tracing.exporter.queue_full
    return out


def _global_sdk_provider(service_name: str | None) -> TracerProvider:
    existing = trace.get_tracer_provider()
    if isinstance(existing, TracerProvider):
        return existing
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME}
        )
    )
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:  # someone else's non-SDK provider won the race
        raise ConfigError("a non-SDK TracerProvider is installed; pass tracer_provider= to toolpath.init()")
    return provider


STORE_OPEN_SECONDS = 2.0
"""How long ``init`` waits for the store; past that tracing starts without it and opens it later."""
STORE_OPEN_LATER_SECONDS = 30.0
"""How long after ``init`` the collector's worker (never the agent's thread) waits for a first attempt to open the
store that is still going on (a slow first migration on a loaded machine) before it writes without it."""


def _open_store(
    store: str | Store | bool | None, redactor: Redactor | None
) -> tuple[Store | None, Callable[[], Store] | None]:
    """The store, opened now if that takes at most :data:`STORE_OPEN_SECONDS`; else ``None`` and the function
    that opens it later. A store that is down or locked never blocks or fails the agent: one warning, then the
    collector retries and counts what it could not write. A malformed URL is still an error now. ``redactor``
    takes the store's pseudonym key (read off this thread, within the same time)."""
    if store is False:
        return None, None
    if isinstance(store, Store):
        if redactor is not None:
            given = store

            def read_key() -> bool:
                use_store_pseudonyms(redactor, given)
                return True

            _within(STORE_OPEN_SECONDS, read_key)
        return store, None
    url = resolve_store_url(None if store is True else store)
    unopened = Store(url, create=False)  # a bad URL, a missing driver or folder: an error now (no I/O yet)
    opened: list[Store] = []
    failure: list[BaseException] = []

    def open_now() -> None:
        try:
            unopened.upgrade()  # under the lock every process creating or migrating this store takes
            if redactor is not None:
                use_store_pseudonyms(redactor, unopened)
            opened.append(unopened)
        except Exception as exc:
            failure.append(exc)

    thread = threading.Thread(target=open_now, name="toolpath-store-open", daemon=True)
    thread.start()
    thread.join(STORE_OPEN_SECONDS)
    if opened:
        return opened[0], None
    why = unopened.hide_password(f"{failure[0]}") if failure else f"no answer within {STORE_OPEN_SECONDS:g} s"
    logger.warning("toolpath: the store is unavailable (%s); tracing goes on, writes are retried and counted", why)

    deadline = time.monotonic() + STORE_OPEN_LATER_SECONDS

    def open_later() -> Store:
        thread.join(max(0.0, deadline - time.monotonic()))  # on the collector's worker: the agent never waits
        if thread.is_alive():  # the first attempt is still waiting (a lock): never migrate twice at once
            raise ConfigError(f"store {unopened.url}: still waiting for the first attempt to open it")
        return opened[0] if opened else Store(url)

    return None, open_later
