"""The online evaluation job queue on SQLite and PostgreSQL: jobs enqueued as invocations are stored (sampled
and filtered), the backlog shed by policy, claims exclusive, and a dead worker's lease running out."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from sqlalchemy import bindparam, text

from tests.helpers.builders import invocation
from toolpath.evaluation.online import OnlineConfig
from toolpath.evaluation.online.sampling import sampled
from toolpath.store import schema as t
from toolpath.store.ingest import rescore
from toolpath.store.job_queue import _STALE, _WAITING, Job, JobQueue
from toolpath.store.job_status import SHED_POLICIES, UNFINISHED, JobStatus, ResultLabel, ShedPolicy, SkipReason
from toolpath.store.store import Store


def test_sampling_and_filters_are_applied_when_stored(store):
    config = OnlineConfig(metrics=["tool_call_count"], sample_rate=0.5, agent_names=["bot"])
    queue = JobQueue(store, accept=config.specs[0].accepts).attach()
    invocations = [invocation(i) for i in range(40)] + [invocation(100 + i, agent="other") for i in range(5)]
    store.write(invocations)
    expected = {inv.invocation_id for inv in invocations[:40] if sampled(inv.invocation_id, "default", 0.5)}
    assert 10 < len(expected) < 30  # a real sample, decided by the id alone
    with store.engine.connect() as conn:
        queued = {r.invocation_id for r in conn.execute(t.eval_jobs.select())}
    assert queued == expected
    store.write(invocations)  # rewriting an invocation (late spans) does not enqueue it twice
    assert queue.counts() == {"pending": len(expected)}

    (failures,) = OnlineConfig(metrics=["tool_call_count"], failures_only=True).specs
    assert failures.accepts(invocation(1, failure=1)) and not failures.accepts(invocation(2))


@pytest.mark.parametrize("policy, kept", [("oldest", {3, 4}), ("newest", {0, 1})])
def test_backlog_sheds_by_policy_and_counts(store, policy, kept):
    queue = JobQueue(store, max_backlog=2, shed=policy).attach()
    for i in range(5):
        store.write([invocation(i)])
    assert queue.counts() == {"pending": 2, "shed": 3}
    assert queue.stats.shed == 3
    with store.engine.connect() as conn:
        pending = {int(r.invocation_id, 16) for r in conn.execute(t.eval_jobs.select()) if r.status == "pending"}
    assert pending == kept


def test_claims_are_exclusive_and_a_dead_workers_lease_runs_out(store):
    queue = JobQueue(store).attach()
    store.write([invocation(i) for i in range(10)])
    claims: dict[str, list[str]] = {}

    def claim(worker: str) -> None:
        claims[worker] = queue.claim(worker, 4, lease_seconds=60)

    threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [i for ids in claims.values() for i in ids]
    assert len(taken) == len(set(taken)) == 10  # 4 + 4 + 2, nothing twice

    # w0 dies holding its jobs; after the lease, w9 takes them over, and w0's late completion is refused
    dead = claims["w0"]
    assert queue.claim("w9", 10, lease_seconds=60) == []  # leases still running
    time.sleep(0.05)
    taken_over = queue.claim("w9", 10, lease_seconds=0.01)
    assert set(taken_over) >= set(dead)
    assert queue.complete("w9", dead[0], [{"metric": "m", "score": 1.0, "label": "pass", "explanation": None}])
    assert not queue.complete("w0", dead[0], [{"metric": "m", "score": 0.0, "label": "fail", "explanation": None}])
    with store.engine.connect() as conn:
        rows = conn.execute(t.online_results.select().where(t.online_results.c.invocation_id == dead[0][0])).all()
    assert [(r.worker, r.score, r.evaluator, r.evaluator_version) for r in rows] == [("w9", 1.0, "default", "1")]
    assert queue.stats.lost_claims == 1


def test_a_claim_takes_run_out_leases_first_then_the_oldest_waiting_without_sorting_the_backlog(store):
    queue = JobQueue(store).attach()
    for i in range(8):
        store.write([invocation(i)])  # enqueued one after another: 0 is the oldest
    with store.engine.connect() as conn:
        order = [r.invocation_id for r in conn.execute(t.eval_jobs.select().order_by(t.eval_jobs.c.enqueued_at))]

    def ids(jobs: list[Job]) -> set[str]:
        return {job.invocation_id for job in jobs}

    dead = ids(queue.claim("w0", 2, lease_seconds=60))
    assert dead == set(order[:2])
    time.sleep(0.05)
    assert ids(queue.claim("w1", 3, lease_seconds=0.01)) == {*dead, order[2]}  # the run-out leases, then the oldest
    assert ids(queue.claim("w1", 3, lease_seconds=60)) == set(order[3:6])
    assert ids(queue.claim("w1", 10, lease_seconds=60)) == set(order[6:])
    if store.dialect == "sqlite":  # each part is an index range scan that stops at the limit, not a sort
        with store.engine.connect() as conn:
            for which in (_STALE, _WAITING):
                plan = conn.execute(
                    text(f"EXPLAIN QUERY PLAN {queue._claiming(which).text}").bindparams(
                        bindparam("names", expanding=True)
                    ),
                    {"claimed": "c", "pending": "p", "worker": "w", "now": 1, "stale": 0, "limit": 1, "names": ["a"]},
                )
                details = " ".join(str(row[-1]) for row in plan)
                assert "ix_eval_jobs_status" in details and "TEMP B-TREE" not in details, details


def test_has_work_says_whether_a_job_waits_or_a_lease_ran_out(store):
    queue = JobQueue(store).attach()
    assert not queue.has_work(lease_seconds=60)
    store.write([invocation(1)])
    assert queue.has_work(lease_seconds=60)
    assert queue.claim("w0", 5, lease_seconds=60)
    assert not queue.has_work(lease_seconds=60)  # claimed, its lease running
    time.sleep(0.05)
    assert queue.has_work(lease_seconds=0.01)  # its lease ran out


def test_a_batch_completes_only_the_jobs_its_worker_still_holds(store):
    queue = JobQueue(store).attach()
    store.write([invocation(i) for i in range(6)])
    mine = queue.claim("w0", 6, lease_seconds=60)
    time.sleep(0.05)
    lost = queue.claim("w1", 2, lease_seconds=0.01)  # w0's lease ran out for these two; w1 took them over
    assert len(lost) == 2 and set(lost) < set(mine)
    result = [{"metric": "m", "score": 1.0, "label": "pass", "explanation": "same"}]
    closed = queue.complete_batch("w0", {i: result for i in mine})
    assert closed == set(mine) - set(lost)
    assert queue.stats.completed == 4 and queue.stats.lost_claims == 2
    assert queue.complete_batch("w1", {i: [] for i in lost}) == set(lost)  # no results: closed all the same
    with store.engine.connect() as conn:
        rows = conn.execute(t.online_results.select()).all()
        statuses = {r.invocation_id: (r.status, r.claimed_by) for r in conn.execute(t.eval_jobs.select())}
    assert sorted((r.invocation_id, r.worker, r.score, r.explanation) for r in rows) == sorted(
        (i.invocation_id, "w0", 1.0, "same") for i in closed
    )
    assert statuses == {i.invocation_id: ("done", "w1" if i in lost else "w0") for i in mine}
    assert queue.complete_batch("w0", {}) == set()


def _durability(conn) -> str:
    setting = "synchronous" if conn.dialect.name == "sqlite" else "synchronous_commit"
    return str(conn.exec_driver_sql(f"{'PRAGMA' if conn.dialect.name == 'sqlite' else 'SHOW'} {setting}").scalar())


def test_online_writes_do_not_wait_for_the_disk_and_leave_every_other_write_durable(store):
    """Claims and results are redone if a power cut loses them, so their commits skip the wait for the disk; the
    connection goes back to the pool durable again (an ingest on it waits for the disk), after an error too."""
    durable = _durability_of_pool(store)
    assert durable in ("2", "on")  # FULL / on: what a 2xx promises
    with store.redoable_write() as conn:
        assert _durability(conn) in ("1", "off")  # NORMAL / off, for this transaction
        conn.exec_driver_sql("INSERT INTO eval_jobs (invocation_id, evaluator, status, enqueued_at, attempts) "
                             "VALUES ('kept', 'default', 'pending', 1, 0)")  # fmt: skip
    with pytest.raises(KeyError), store.redoable_write() as conn:
        conn.exec_driver_sql("INSERT INTO eval_jobs (invocation_id, evaluator, status, enqueued_at, attempts) "
                             "VALUES ('rolled back', 'default', 'pending', 1, 0)")  # fmt: skip
        raise KeyError
    assert _durability_of_pool(store) == durable
    assert JobQueue(store).counts() == {"pending": 1}


def _durability_of_pool(store) -> str:
    """Every pooled connection's setting, checked out at once: they must all agree."""
    conns = [store.engine.connect() for _ in range(3)]
    try:
        found = {_durability(conn) for conn in conns}
    finally:
        for conn in conns:
            conn.close()
    assert len(found) == 1, found
    return found.pop()


def test_a_batch_completes_and_the_next_is_claimed_in_one_transaction_and_a_stopping_worker_gives_it_back(store):
    queue = JobQueue(store).attach()
    store.write([invocation(i) for i in range(5)])
    first = queue.claim("w0", 2, lease_seconds=60)
    result = [{"metric": "m", "score": 1.0, "label": "pass", "explanation": None}]
    closed, second = queue.complete_and_claim("w0", {i: result for i in first}, 2, 60)
    assert closed == set(first) and len(second) == 2 and not set(second) & set(first)
    assert queue.counts() == {"done": 2, "claimed": 2, "pending": 1}

    queue.release("w0", second)  # stopping: waiting again at once, not after the lease, and no attempt counted
    assert queue.counts() == {"done": 2, "pending": 3}
    with store.engine.connect() as conn:
        attempts = {Job(r.invocation_id, r.evaluator): r.attempts for r in conn.execute(t.eval_jobs.select())}
    assert all(attempts[i] == 0 for i in second)
    assert sorted(queue.claim("w1", 5, lease_seconds=60)) == sorted({*second, *(i for i in attempts if i not in first)})
    assert queue.complete_and_claim("w1", {}, 0, 60) == (set(), [])


def test_a_worker_never_waits_for_an_ingest_rebuilding_one_of_its_jobs(postgres_url):
    """An ingest rebuilding an invocation locks its job (to wait it again) while it holds others; a worker
    completing a batch that has this job leaves it out instead of waiting, so the two never deadlock."""
    store = Store(postgres_url)
    try:
        with store.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {', '.join(t.metadata.tables)}"))
        queue = JobQueue(store).attach()
        store.write([invocation(i) for i in range(2)])
        first, second = sorted(queue.claim("w0", 2, lease_seconds=60))
        result = [{"metric": "m", "score": 1.0, "label": "pass", "explanation": None}]
        with store.engine.begin() as ingest:
            rescore(ingest, [second.invocation_id])  # the ingest holds the second job's row
            done: list[set[Job]] = []
            worker = threading.Thread(
                target=lambda: done.append(queue.complete_batch("w0", {first: result, second: result}))
            )
            worker.start()
            worker.join(10)
            assert not worker.is_alive(), "the worker waited for the ingest's lock"
            # then it takes the first: the worker has finished with it, no deadlock
            rescore(ingest, [first.invocation_id])
        assert done == [{first}]
        assert queue.counts() == {"pending": 2}
        assert queue.stats.lost_claims == 1
    finally:
        store.close()


def test_job_statuses_are_stored_as_the_same_plain_text_on_every_driver(store):
    """``JobStatus`` members go to the database as their lowercase values (the column other processes, older
    versions and dashboards read), through SQLAlchemy and through the driver's own executemany alike."""
    queue = JobQueue(store, max_backlog=3, shed="newest", max_attempts=0).attach()
    assert queue.shed_policy is ShedPolicy.NEWEST
    store.write([invocation(i) for i in range(4)])  # the driver's insert: pending; the fourth is shed
    assert queue.claim("w0", 1, lease_seconds=60) == []  # max_attempts=0: the claimed job is given up: failed
    queue.max_attempts = 3
    done = queue.claim("w0", 1, lease_seconds=60)
    queue.complete_batch("w0", {i: [] for i in done})
    held = queue.claim("w1", 1, lease_seconds=60)
    assert len(done) == len(held) == 1
    with store.engine.connect() as conn:
        stored = sorted(r[0] for r in conn.exec_driver_sql("SELECT status FROM eval_jobs"))
    assert stored == ["claimed", "done", "failed", "shed"]
    assert all(type(s) is str for s in stored)
    counts = queue.counts()
    assert counts == {"claimed": 1, "done": 1, "failed": 1, "shed": 1}
    assert all(isinstance(s, JobStatus) for s in counts)
    with store.engine.begin() as conn:  # the ingest's rescore: every job but the shed one waits again
        rescore(conn, [invocation(i).invocation_id for i in range(4)])
    with store.engine.connect() as conn:
        stored = sorted(r[0] for r in conn.exec_driver_sql("SELECT status FROM eval_jobs"))
    assert stored == ["pending", "pending", "pending", "shed"]
    assert all(type(s) is str for s in stored)
    assert queue.counts() == {JobStatus.PENDING: 3, JobStatus.SHED: 1}


def test_job_statuses_and_shed_policies_keep_the_text_they_are_stored_and_configured_as():
    """The values are the stored column (read by older versions and other processes), the ``shed`` option of
    online.toml and the backlog's Prometheus label: each member prints as its value and reads back from it."""
    assert [s.value for s in JobStatus] == ["pending", "claimed", "done", "shed", "failed", "skipped"]
    assert [r.value for r in SkipReason] == ["not_sampled", "rate", "budget"]
    assert [p.value for p in ShedPolicy] == ["oldest", "newest"]
    assert [label.value for label in ResultLabel] == ["pass", "fail", "error", "scored"]
    assert SHED_POLICIES == (ShedPolicy.OLDEST, ShedPolicy.NEWEST)
    assert UNFINISHED == (JobStatus.PENDING, JobStatus.CLAIMED)
    for member in (*JobStatus, *ShedPolicy, *ResultLabel, *SkipReason):
        assert str(member) == f"{member}" == member.value
        assert type(member)(member.value) is member
    assert ", ".join(SHED_POLICIES) == "oldest, newest"  # as the error for a bad ``shed`` lists them


def test_the_status_enums_load_without_sqlalchemy():
    """The ingest, the job queue and the collector's metrics share these enums; importing them (or the metrics
    module that labels the backlog with them, or the sessions filter that names a result label) loads no
    SQLAlchemy (a fresh process)."""
    code = (
        "import sys, toolpath.store.job_status, toolpath.collector.prometheus, toolpath.store.session_filter\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
