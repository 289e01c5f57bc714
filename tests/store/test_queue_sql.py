"""The online queue's statements run by SQLite's driver: the same claims as SQLAlchemy's (index range scans that
stop at the limit), each queue's jobs its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.builders import invocation
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
