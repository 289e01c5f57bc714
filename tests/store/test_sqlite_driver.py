"""Statements run by SQLite's driver inside a SQLAlchemy transaction: a failure is raised as SQLAlchemy raises the
driver's error, never by running the statement again (its changes may be made already, its busy wait spent); a
write refused by a read-only store says so as any statement's refusal does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import event, exc

from tests.helpers.builders import invocation
from toolpath.errors import ConfigError
from toolpath.store.job_queue import JobQueue, QueueEvaluator
from toolpath.store.sqlite_driver import driver_rows
from toolpath.store.store import Store


@pytest.fixture
def sqlite_store(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    yield store
    store.close()


def _statements(conn) -> list[str]:  # type: ignore[no-untyped-def]
    """What the driver runs on ``conn`` from now on."""
    ran: list[str] = []
    conn.connection.driver_connection.set_trace_callback(ran.append)
    return ran


def test_a_failed_statement_is_raised_as_sqlalchemys_error_and_the_transaction_goes_on(sqlite_store):
    with sqlite_store.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    with sqlite_store.engine.connect() as conn:
        with conn.begin():
            ran = _statements(conn)
            assert driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (1,)) == [(1,)]
            with pytest.raises(exc.IntegrityError):
                driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (1,))
            assert driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (2,)) == [(2,)]
            assert sum("INSERT" in s for s in ran) == 3  # the failed one ran once
        assert conn.exec_driver_sql("SELECT k FROM t ORDER BY k").all() == [(1,), (2,)]
    with sqlite_store.engine.connect() as conn, conn.begin(), pytest.raises(exc.OperationalError):
        driver_rows(conn, "UPDATE missing SET k = 1", ())


def test_a_failure_after_the_changes_is_raised_and_not_run_again(sqlite_store):
    """A pending job whose id is not UTF-8 (written by another program): the claim's RETURNING rows fail as they
    are read, after every row was claimed. The claim fails and its transaction is undone, as before; it is not run
    again to claim more jobs than it returns."""
    queue = JobQueue(sqlite_store, evaluators=[QueueEvaluator("a", "1")])
    queue.attach()
    sqlite_store.write([invocation(i) for i in range(3)])
    queue.detach()
    with sqlite_store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE eval_jobs SET invocation_id = CAST(X'FF' || invocation_id AS TEXT)")
    with pytest.raises(exc.OperationalError, match="UTF-8"):
        queue.claim("w", 2, lease_seconds=60)
    with sqlite_store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM eval_jobs WHERE status = 'claimed'").scalar() == 0


def test_a_locked_store_is_waited_for_once(sqlite_store, tmp_path):
    """Another connection holds the write lock: the claim waits its busy timeout once, then fails (running the
    statement again would wait it twice)."""
    queue = JobQueue(sqlite_store, evaluators=[QueueEvaluator("a", "1")])
    queue.attach()
    sqlite_store.write([invocation(0)])
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with sqlite_store.engine.connect() as conn:
            ran = _statements(conn)
            with pytest.raises(exc.OperationalError, match="locked"), conn.begin():
                conn.exec_driver_sql("PRAGMA busy_timeout = 50")
                queue._claim(conn, "w", 1, 60, None, 0)
            assert sum(s.lstrip().startswith("UPDATE eval_jobs") for s in ran) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_write_refused_by_a_read_only_store_says_it_is_read_only(sqlite_store, tmp_path):
    seen: list[BaseException] = []
    queue = JobQueue(sqlite_store, evaluators=[QueueEvaluator("a", "1")])
    queue.attach()
    sqlite_store.write([invocation(0)])
    read_only = Store(f"sqlite:///file:{tmp_path / 'store.db'}?mode=ro&uri=true", create=False)
    event.listen(read_only.engine, "handle_error", lambda context: seen.append(context.original_exception))
    try:
        with pytest.raises(ConfigError, match="read-only"):
            JobQueue(read_only, evaluators=[QueueEvaluator("a", "1")]).claim("w", 1, lease_seconds=60)
    finally:
        read_only.close()
    assert len(seen) == 1
