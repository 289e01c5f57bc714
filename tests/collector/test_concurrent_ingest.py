"""Requests ingested side by side by one collector (its threads clean, redact and rebuild at once; only the store's
transaction takes turns on SQLite) store what the same requests store one after another, and count exactly; a
collector process takes ``ingest_threads`` exports at once, whatever its callers' threads."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select

from tests.helpers import SPANS
from tests.helpers.builders import span_count, split_export
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import Limits
from toolpath.store import schema as t
from toolpath.store.store import Store

BODY = (SPANS / "adk-v2.scenarios.otlp.pb").read_bytes()


def _state(store: Store) -> dict[str, list[tuple]]:
    with store.engine.connect() as conn:
        return {
            "sessions": [tuple(r) for r in conn.execute(select(t.sessions).order_by(t.sessions.c.session_id))],
            "invocations": [
                tuple(r) for r in conn.execute(select(t.invocations).order_by(t.invocations.c.invocation_id))
            ],
            "tool_calls": [
                tuple(r) for r in conn.execute(select(t.tool_calls).order_by(t.tool_calls.c.invocation_id, "position"))
            ],
            "spans": [
                tuple(r)
                for r in conn.execute(select(t.spans.c.trace_id, t.spans.c.span_id).order_by("trace_id", "span_id"))
            ],
        }


def _send(ingestor: Ingestor, bodies: list[bytes], threads: int) -> None:
    def post(body: bytes) -> int:
        headers = {"Content-Type": "application/x-protobuf", "Content-Length": str(len(body))}
        return ingestor.handle_http("/v1/traces", headers, lambda _n: body).status

    with ThreadPoolExecutor(threads) as pool:
        assert list(pool.map(post, bodies)) == [200] * len(bodies)


def _parts(seed: int) -> list[bytes]:
    n = span_count(BODY)
    order = random.Random(seed).sample(range(n), n)
    return split_export(BODY, [order[i : i + 5] for i in range(0, n, 5)])


@pytest.fixture(params=["sqlite-file", "sqlite-memory", "postgresql"])
def stores(request, tmp_path):
    """Two empty stores of one kind: one fed in turn, one fed side by side."""
    if request.param == "postgresql":
        from sqlalchemy import text

        url = request.getfixturevalue("postgres_url")
        opened = [Store(url)]
        with opened[0].engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {', '.join(t.metadata.tables)}"))
        yield opened[0], None
        opened[0].close()
        return
    urls = (
        [f"sqlite:///{tmp_path / f'{i}.db'}" for i in range(2)] if request.param == "sqlite-file" else ["sqlite://"] * 2
    )
    opened = [Store(url) for url in urls]
    yield opened[0], opened[1]
    for store in opened:
        store.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_requests_side_by_side_store_what_they_store_in_turn(stores, seed):
    alone, together = stores
    bodies = _parts(seed)
    _send(Ingestor(alone), bodies, threads=1)
    expected = _state(alone)
    if together is None:  # PostgreSQL: the same store, emptied, then fed side by side
        together = alone
        with together.engine.begin() as conn:
            for table in reversed(t.metadata.sorted_tables):
                conn.execute(table.delete())
    ingestor = Ingestor(together, max_in_flight=len(bodies), ingest_threads=4)
    _send(ingestor, bodies, threads=4)
    assert _state(together) == expected
    assert ingestor.spans_stored == span_count(BODY)


def test_spans_over_the_trace_limit_are_counted_once_each_side_by_side(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'limit.db'}")
    limits = Limits(max_spans_per_trace=3)
    ingestor = Ingestor(store, limits=limits, max_in_flight=64, ingest_threads=4)
    _send(ingestor, _parts(3), threads=4)
    registry = ingestor.metrics.registry
    stored = registry.get_sample_value("toolpath_spans_stored_total")
    turned_away = registry.get_sample_value("toolpath_spans_rejected_total", {"reason": "trace_limit"})
    assert turned_away == limits.hits["spans_over_trace_limit"] > 0
    assert stored == store.counts()["spans"]
    assert stored + turned_away == span_count(BODY)
    store.close()


@pytest.mark.parametrize("ingest_threads", [None, 3])
def test_a_process_stores_ingest_threads_exports_at_once_one_by_default_on_sqlite(tmp_path, ingest_threads):
    store = Store(f"sqlite:///{tmp_path / 'turns.db'}")
    ingestor = Ingestor(store, max_in_flight=8, ingest_threads=ingest_threads)
    ingest, guard = store.ingest, threading.Lock()
    running = most = 0

    def counted(*args, **kwargs):
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
        try:
            time.sleep(0.05)  # long enough for the other callers to arrive
            return ingest(*args, **kwargs)
        finally:
            with guard:
                running -= 1

    store.ingest = counted  # type: ignore[method-assign]
    bodies = _parts(4)
    _send(ingestor, bodies, threads=6)
    assert most == (ingest_threads or 1)
    assert ingestor.spans_stored == span_count(BODY)
    store.close()
