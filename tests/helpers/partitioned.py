"""PostgreSQL stores whose spans are partitioned by day, at a chosen date, for the retention tests: made, filled
through ingest, and looked into (which partition holds each span, which rows a prune leaves)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text

from toolpath.collector.reconstruct import build_invocations, is_run_span
from toolpath.store import migrate, partitions
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store

DAY = partitions.DAY_NS
DAY0 = 1_800_000_000 * 10**9 // DAY * DAY
"""The first day the test stores have a partition of (2027-01-15, UTC)."""
FUTURE = DAY0 + 400 * DAY
"""Past every partition made ahead: the default partition's."""


def partitioned_at(url: str, now_ns: int, ahead: int = 10) -> Store:
    """The store at ``url`` (an empty database) partitioned as migration 0013 would have done at ``now_ns``."""
    engine = create_engine(url)
    migrate.upgrade(engine, "0012")
    with engine.begin() as conn:
        partitions.partition_spans(conn, now_ns, ahead=ahead)
    engine.dispose()
    return Store(url)  # at 0012: 0013 finds spans partitioned and leaves them so


def partitioned_with(url: str, now_ns: int, runs: Iterable[list[SpanRecord]]) -> Iterator[Store]:
    """A store partitioned at ``now_ns`` holding ``runs`` (for a fixture to yield from: closed after)."""
    opened = partitioned_at(url, now_ns)
    for spans in runs:
        ingest(opened, spans)
    yield opened
    opened.close()


def ingest(store: Store, spans: list[SpanRecord]) -> None:
    store.ingest(spans, build_invocations, is_run_span)


def placed(store: Store) -> dict[tuple[str, str], str]:
    """Each stored span's key and the partition holding it."""
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT trace_id, span_id, tableoid::regclass::text FROM spans")).all()
    return {(r[0], r[1]): r[2] for r in rows}


def surviving(store: Store) -> dict[str, set[tuple[object, ...]]]:
    """The rows a prune may delete or change, table by table."""
    queries = {
        "spans": "SELECT trace_id, span_id, start_time FROM spans",
        "invocations": "SELECT invocation_id, session_id FROM invocations",
        "tool_calls": "SELECT invocation_id, position FROM tool_calls",
        "sessions": "SELECT session_id, first_started_at, last_started_at FROM sessions",
    }
    with store.engine.connect() as conn:
        return {table: {tuple(row) for row in conn.execute(text(sql))} for table, sql in queries.items()}


@contextmanager
def spans_read_open(store: Store) -> Iterator[None]:
    """A long read of ``spans`` in another session while the block runs: its lock is held until the block ends, so a
    partition drop inside the block misses its lock (after its wait) and leaves the partitions in place."""
    reader = create_engine(store.url)
    try:
        with reader.connect() as conn, conn.begin():
            conn.exec_driver_sql("SELECT count(*) FROM spans").scalar_one()
            yield
    finally:
        reader.dispose()
