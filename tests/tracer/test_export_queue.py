"""The OTLP export queue of ``toolpath.init``: what it drops when full is counted, ``flush()`` says so, and the
default queue holds a burst of thousands of agent runs sent to a real collector on loopback."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import func, select

import toolpath
from tests.helpers.collector import serving
from tests.helpers.weather import bot
from toolpath.config import DEFAULT_EXPORT_QUEUE
from toolpath.store import schema as t
from toolpath.store.store import Store
from toolpath.tracer.exporters import CountingBatchProcessor, CountingExporter


def stored_spans(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(t.spans)).scalar_one())


def burst(tmp_path: Path, runs: int, flush_timeout: float) -> tuple[bool, dict[str, int], int]:
    """``runs`` agent runs (two spans each) exported as fast as they come to a collector on loopback: whether
    ``flush()`` said all was delivered, ``toolpath.stats()`` after it, and how many spans the collector stored."""
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        with serving(store) as service:
            toolpath.init(store=False, otlp_endpoint=f"http://127.0.0.1:{service.options.http_port}")
            for n in range(runs):
                bot(f"Weather in Paris? {n}")
            delivered = toolpath.flush(timeout=flush_timeout)
            stats = toolpath.stats()
            toolpath.shutdown()
            return delivered, stats, stored_spans(store)
    finally:
        store.close()


def test_the_counter_finds_the_sdk_queue():
    """The drop count reads the SDK's own queue: an SDK release that moves it fails here, not in silence."""
    processor = CountingBatchProcessor(CountingExporter(InMemorySpanExporter()), 8)
    try:
        assert processor.queue is not None and processor.queue.maxlen == 8
        assert processor._batch_processor._queue is processor.queue  # the one the SDK puts spans in
    finally:
        processor.shutdown()


def test_flush_says_false_and_stats_count_what_a_full_queue_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    delivered, stats, arrived = burst(tmp_path, 400, flush_timeout=60)  # 800 spans into a queue of 8
    assert stats["spans_export_queue_full"] > 0
    assert delivered is False  # spans were dropped: never "all delivered"
    assert stats["spans_exported"] == arrived  # what the collector stored is what the exporter says it sent
    assert stats["spans_exported"] + stats["spans_export_dropped"] == 800  # and every other span is counted


def test_the_default_queue_holds_a_burst_of_thousands_of_runs(tmp_path):
    assert DEFAULT_EXPORT_QUEUE >= 16_384
    delivered, stats, arrived = burst(tmp_path, 3000, flush_timeout=120)
    assert stats["spans_export_dropped"] == 0 and delivered is True
    assert arrived == stats["spans_exported"] == 6000
