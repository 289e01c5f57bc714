"""The online queue's statements run by SQLite's driver: the same claims as SQLAlchemy's (index range scans that
stop at the limit), and failures raised as SQLAlchemy raises a statement's."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event, exc

from tests.helpers.builders import invocation
from toolpath.store import queue_sql
from toolpath.store.job_queue import _STALE, _WAITING, JobQueue, QueueEvaluator
from toolpath.store.store import Store


@pytest.fixture
def sqlite_store(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    yield store
    store.close()


def test_a_driver_claim_scans_the_status_index_and_stops_at_its_limit(sqlite_store):
    queue = JobQueue(sqlite_store, evaluators=[QueueEvaluator("a", "1"), QueueEvaluator("b", "1")])
    params = {"claimed": "c", "pending": "p", "worker": "w", "now": 1, "stale": 0, "limit": 1, "name_0": "a"}
    with sqlite_store.engine.connect() as conn:
        for which in (_STALE, _WAITING):
            sql = queue._driver_claiming(which, 2)
            assert "IN (:name_0, :name_1)" in sql
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", {**params, "name_1": "b"}).all()
            details = " ".join(str(row[-1]) for row in plan)
            assert "ix_eval_jobs_status" in details and "TEMP B-TREE" not in details, details


def test_driver_claims_take_only_the_queues_evaluators_jobs(sqlite_store):
    mine = JobQueue(sqlite_store, evaluators=[QueueEvaluator("a", "1"), QueueEvaluator("b", "1")]).attach()
    other = JobQueue(sqlite_store, evaluators=[QueueEvaluator("c", "1")])
    sqlite_store.write([invocation(i) for i in range(3)])
    mine.detach()
    other.attach()
    sqlite_store.write([invocation(i) for i in range(3, 5)])
    taken = mine.claim("w", 10, lease_seconds=60)
    assert sorted({job.evaluator for job in taken}) == ["a", "b"] and len(taken) == 6
    assert all(type(job).__name__ == "Job" for job in taken)
    assert {job.evaluator for job in other.claim("w", 10, lease_seconds=60)} == {"c"}


def _seen_by_handlers(store: Store) -> list[BaseException]:
    seen: list[BaseException] = []
    event.listen(store.engine, "handle_error", lambda context: seen.append(context.original_exception))
    return seen


def test_a_failed_statement_undone_alone_is_raised_by_sqlalchemy_and_the_transaction_goes_on(sqlite_store):
    seen = _seen_by_handlers(sqlite_store)
    with sqlite_store.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    with sqlite_store.engine.connect() as conn:
        with conn.begin():
            assert queue_sql.driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (1,)) == [(1,)]
            with pytest.raises(exc.IntegrityError):
                queue_sql.driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (1,))
            assert queue_sql.driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (2,)) == [(2,)]
        assert conn.exec_driver_sql("SELECT k FROM t ORDER BY k").all() == [(1,), (2,)]
    assert len(seen) == 1  # the engine's handlers saw the failure, once
    with sqlite_store.engine.connect() as conn, conn.begin(), pytest.raises(exc.OperationalError):
        queue_sql.driver_rows(conn, "UPDATE missing SET k = 1", ())  # the transaction's first statement
    assert len(seen) == 2


def test_a_failure_that_undid_the_transaction_is_raised_without_running_the_statement_again(sqlite_store):
    with sqlite_store.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        conn.exec_driver_sql(
            "CREATE TRIGGER undo BEFORE INSERT ON t WHEN NEW.k = 9 BEGIN SELECT RAISE(ROLLBACK, 'undone'); END"
        )
    seen = _seen_by_handlers(sqlite_store)
    with sqlite_store.engine.connect() as conn:
        with pytest.raises(exc.IntegrityError, match="undone"), conn.begin():
            queue_sql.driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (1,))
            queue_sql.driver_rows(conn, "INSERT INTO t VALUES (?) RETURNING k", (9,))  # undoes the 1 too
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 0  # not redone in a transaction of its own
    assert seen == []  # not run again through SQLAlchemy
