"""A thread's bound on its writes' lock waits (:mod:`toolpath.store.lock_waits`), on a real SQLite file whose write
lock another connection holds and on a real PostgreSQL server where another transaction holds a trace's lock."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DataError, IntegrityError, OperationalError

from tests.helpers import SPANS
from toolpath.collector import otlp
from toolpath.collector.ingestor import rebuild, store_unavailable
from toolpath.collector.reconstruct import is_run_span
from toolpath.store.lock_waits import NoTimeLeft, bounded, time_left
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store

BODY = SPANS / "otel-genai-langchain.shared.otlp.pb"
"""13 spans: two invocations, one trace."""


def _records() -> list[SpanRecord]:
    return otlp.decode(BODY.read_bytes(), "application/x-protobuf")


class _Holder:
    """Another connection holding what a write of ``trace_id`` must wait for: the SQLite file's write lock, or on
    PostgreSQL the trace's lock (as another collector's write holds it), until :meth:`release`."""

    def __init__(self, store: Store, trace_id: str) -> None:
        self.sqlite: sqlite3.Connection | None = None
        self.pg = None
        if store.dialect == "sqlite":
            self.sqlite = sqlite3.connect(store.database_file, isolation_level=None, check_same_thread=False)
            self.sqlite.execute("BEGIN IMMEDIATE")
        else:
            self.pg = store.engine.connect()
            self.pg.begin()
            self.pg.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": trace_id})

    def release(self) -> None:
        if self.sqlite is not None:
            self.sqlite.execute("ROLLBACK")
            self.sqlite.close()
        if self.pg is not None:
            self.pg.rollback()
            self.pg.close()


@contextlib.contextmanager
def _locked(store: Store, trace_id: str) -> Iterator[None]:
    holder = _Holder(store, trace_id)
    try:
        yield
    finally:
        holder.release()


def _ingest(store: Store, records: list[SpanRecord]) -> int:
    return store.ingest(records, rebuild, is_run_span)


def test_a_bounded_write_gives_up_waiting_for_a_lock_then_writes_once_it_is_free(store):
    records = _records()
    with _locked(store, records[0].trace_id), bounded(0.5):
        started = time.monotonic()
        with pytest.raises(OperationalError) as raised:
            _ingest(store, records)
        waited = time.monotonic() - started
    assert 0.4 <= waited < 3.0 and store_unavailable(raised.value)
    assert store.counts()["spans"] == 0
    with bounded(0.5):
        assert _ingest(store, records) == 2
    assert store.counts()["spans"] == 13
    if store.dialect == "sqlite":  # the connection waits as long as before for writers without a bound
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_the_deadline_bounds_a_wait_and_no_write_starts_after_it(store):
    records = _records()
    with _locked(store, records[0].trace_id), bounded(30.0, lambda: started + 0.5):
        started = time.monotonic()
        with pytest.raises(OperationalError):
            _ingest(store, records)
        waited = time.monotonic() - started
    assert 0.4 <= waited < 3.0
    past = time.monotonic() - 1
    with bounded(30.0, lambda: past):
        assert not time_left()
        with pytest.raises(NoTimeLeft):
            _ingest(store, records)
    assert time_left() and store.counts()["spans"] == 0  # outside the with: no bound


def test_without_a_bound_a_write_waits_for_the_lock(store):
    records = _records()
    holder = _Holder(store, records[0].trace_id)
    threading.Timer(1.0, holder.release).start()
    started = time.monotonic()
    assert _ingest(store, records) == 2  # waited, then wrote
    assert time.monotonic() - started >= 0.9 and store.counts()["spans"] == 13


def test_postgresql_cuts_statements_only_once_there_is_a_deadline(postgres_url):
    store = Store(postgres_url)

    def settings() -> tuple[str, str]:
        with store.durable_write() as conn:
            return conn.exec_driver_sql("SHOW lock_timeout").scalar(), conn.exec_driver_sql(
                "SHOW statement_timeout"
            ).scalar()

    before = settings()
    with bounded(0.5):
        assert settings() == ("500ms", before[1])
    with bounded(5.0, lambda: time.monotonic() + 2.0):
        lock, statement = settings()
    assert lock == statement and statement.endswith("ms") and 1500 < int(statement[:-2]) <= 2000
    assert settings() == before  # for the transaction only
    store.close()


_SET_BACK = {"busy timeout": ("busy_timeout", "30000"), "synchronous": ("synchronous", "FULL")}
"""A setting a bounded write on a SQLite file changes, and the pragma and value that set it back."""


def _deny_setting_back(conn, setting: str) -> None:
    """The connection refuses (as an authorizer may) to set ``setting`` back to the engine's."""
    driver = conn.connection.driver_connection
    pragma, value = _SET_BACK[setting]

    def authorize(action: int, name: str | None, given: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_PRAGMA and name == pragma and given == value
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    driver.set_authorizer(authorize)


@pytest.fixture
def scratch(tmp_path) -> Iterator[Store]:
    store = Store(f"sqlite:///{tmp_path / 'scratch.db'}")
    with store.engine.begin() as conn:
        conn.execute(text("CREATE TABLE scratch (k TEXT PRIMARY KEY)"))
    yield store
    store.engine.dispose()


def _next_connection_is_set_as_usual(store: Store, used: object) -> None:
    with store.engine.connect() as conn:
        assert conn.connection.driver_connection is not used  # the one with a changed setting was discarded
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL


@pytest.mark.parametrize("setting", list(_SET_BACK))
def test_a_failed_restore_of_a_setting_never_hides_the_writes_own_error(scratch, caplog, setting):
    """A bounded write that fails raises its own error even when setting its connection back fails too; that
    failure is told in a note and the log, and the connection, left with a changed setting, is not pooled again."""
    with pytest.raises(IntegrityError) as raised, bounded(0.05), scratch.durable_write() as conn:
        used = conn.connection.driver_connection
        _deny_setting_back(conn, setting)
        conn.execute(text("INSERT INTO scratch VALUES ('a'), ('a')"))
    assert "UNIQUE constraint failed" in str(raised.value)
    assert any(setting in note and "not authorized" in note for note in raised.value.__notes__)
    assert setting in caplog.text and "not authorized" in caplog.text
    _next_connection_is_set_as_usual(scratch, used)
    with scratch.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM scratch").scalar() == 0  # rolled back


@pytest.mark.parametrize("setting", list(_SET_BACK))
def test_a_failed_restore_after_a_committed_write_leaves_it_committed(scratch, caplog, setting):
    """The write committed before its connection is set back: a failed restore discards the connection and is
    logged, and the write is not reported as failed (its caller would write it again)."""
    with bounded(0.05), scratch.durable_write() as conn:
        used = conn.connection.driver_connection
        _deny_setting_back(conn, setting)
        conn.execute(text("INSERT INTO scratch VALUES ('a')"))
    assert setting in caplog.text and "not authorized" in caplog.text
    _next_connection_is_set_as_usual(scratch, used)
    with scratch.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT k FROM scratch").scalars().all() == ["a"]


def test_postgresql_bounds_end_with_a_failed_write_too(postgres_url):
    """PostgreSQL's bounds are the transaction's own (``set_config(…, true)``): a bounded write that fails leaves
    its pooled connection with the server's settings, with nothing to set back."""
    store = Store(postgres_url)

    def settings(conn) -> tuple[int, str, str]:
        show = [conn.exec_driver_sql(sql).scalar() for sql in ("SHOW lock_timeout", "SHOW statement_timeout")]
        return conn.exec_driver_sql("SELECT pg_backend_pid()").scalar(), *show

    with store.engine.connect() as conn:
        before = settings(conn)
    with pytest.raises(DataError), bounded(0.5, lambda: time.monotonic() + 2.0), store.durable_write() as conn:
        during = settings(conn)
        conn.exec_driver_sql("SELECT 1 / 0")
    assert during[0] == before[0] and during[1:] != before[1:]  # the pooled connection, bounded
    with store.engine.connect() as conn:
        assert settings(conn) == before  # the same connection again, as it was
    store.close()
