"""Retention on SQLite and PostgreSQL: old traces go whole, old invocations go with their tool calls, online jobs
and scores and the sessions they empty, evaluation runs stay, a dry run counts exactly what a prune deletes, and
a prune in small batches lets ingest go on."""

from __future__ import annotations

import threading
import time

import pytest

from tests.helpers.builders import agent_run, run_key
from toolpath.collector.reconstruct import build_invocations, is_run_span
from toolpath.errors import ConfigError
from toolpath.store import schema as t
from toolpath.store.job_queue import Job, JobQueue
from toolpath.store.retention import (
    PruneCounts,
    RetentionWorker,
    check_lifetimes,
    cutoff_ns,
    parse_duration,
    prune,
)

DAY = 86_400
NOW = 1_800_000_000 * 10**9
OLD, RECENT = NOW - 40 * DAY * 10**9, NOW - 2 * DAY * 10**9


def fill(store) -> None:
    """Session "gone": two old runs; session "mixed": an old run and a recent one; session "straddle": a run that
    started old but whose last span is recent; session "new": a recent run. Online jobs for every invocation, and
    online scores for the old run of "mixed" and the recent one."""
    queue = JobQueue(store).attach()
    runs = [
        agent_run(1, OLD, "gone"),
        agent_run(2, OLD + 10**9, "gone", tool_calls=3),
        agent_run(3, OLD + 2 * 10**9, "mixed"),
        agent_run(4, RECENT, "mixed"),
        agent_run(5, OLD, "straddle", late_child_ns=RECENT),
        agent_run(6, RECENT + 10**9, "new", tool_calls=1),
    ]
    for spans in runs:
        store.ingest(spans, build_invocations, is_run_span)
    assert len(queue.claim("w", 10, 60)) == 6
    for scored in (run_key(3), run_key(4)):
        result = [{"metric": "m", "score": 1.0, "label": "pass", "explanation": None}]
        assert queue.complete("w", Job(scored, "default"), result)
    queue.detach()
    store.write_eval_run(
        {"run_id": "r1", "kind": "dataset", "dataset": "d.jsonl", "agent": None, "metrics": ["m"],
         "started_at": OLD, "finished_at": OLD, "row_count": 1, "failed_count": 0, "summary": {}},
        [{"run_id": "r1", "position": 0, "case_id": None, "invocation_id": run_key(1), "status": None,
          "scores": {"m": 1.0}, "row": {"prompt": "run 1"}}],
    )  # fmt: skip


def test_prune_removes_what_is_old_and_a_dry_run_counts_it_exactly(store):
    fill(store)
    before = store.counts()
    assert (before["spans"], before["invocations"], before["eval_jobs"], before["online_results"]) == (19, 6, 6, 2)
    age = 30 * DAY
    planned = prune(store, spans_older_than=age, invocations_older_than=age, dry_run=True, now_ns=NOW)
    assert store.counts() == before  # a dry run deletes nothing
    done = prune(store, spans_older_than=age, invocations_older_than=age, batch_size=2, now_ns=NOW)
    # runs 1-3 go whole; run 5 started old (its invocation goes) but its trace ends recently (its spans stay)
    assert (
        done
        == planned
        == PruneCounts(
            spans=3 + 4 + 3, traces=3, invocations=4, tool_calls=2 + 3 + 2 + 3, sessions=2, jobs=4, online_results=1
        )
    )
    after = store.counts()
    assert after["spans"] == 19 - 10 and after["invocations"] == 2 and after["tool_calls"] == 2 + 1
    assert {s["session_id"] for s in store.list_sessions()} == {"mixed", "new"}
    mixed = store.get_session("mixed")
    assert [i.invocation_id for i in mixed.invocations] == [run_key(4)]
    with store.engine.connect() as conn:
        row = conn.execute(t.sessions.select().where(t.sessions.c.session_id == "mixed")).one()
        jobs = {r.invocation_id for r in conn.execute(t.eval_jobs.select())}
    assert row.first_started_at == row.last_started_at == RECENT  # says what its invocations say now
    assert jobs == {run_key(4), run_key(6)}
    assert store.get_eval_run("r1")["results"][0]["invocation_id"] == run_key(1)  # eval runs stay
    assert len(store.spans_of_trace(f"{5:032x}")) == 4  # the straddling trace is whole
    again = prune(store, spans_older_than=age, invocations_older_than=age, now_ns=NOW)
    assert again == PruneCounts()


def test_spans_only_keeps_invocations_and_their_scores(store):
    fill(store)
    before = store.counts()
    done = prune(store, spans_older_than=30 * DAY, invocations_older_than=None, now_ns=NOW)
    assert done == PruneCounts(spans=10, traces=3)
    after = store.counts()
    assert after["spans"] == before["spans"] - 10
    assert {k: v for k, v in after.items() if k != "spans"} == {k: v for k, v in before.items() if k != "spans"}
    [old] = store.invocations_by_id([run_key(2)])
    assert [c.name for c in old.tool_calls] == ["t0", "t1", "t2"]


def test_ingest_goes_on_while_a_prune_runs_in_small_batches(store):
    old = [span for n in range(200) for span in agent_run(1000 + n, OLD + n, f"old-{n % 20}")]
    store.write(build_invocations(old), old)
    written: list[int] = []
    failures: list[BaseException] = []

    def ingest() -> None:
        try:
            for n in range(40):
                store.ingest(agent_run(5000 + n, RECENT + n, f"new-{n % 4}"), build_invocations, is_run_span)
                written.append(n)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    writer = threading.Thread(target=ingest)
    writer.start()
    done = prune(store, spans_older_than=30 * DAY, invocations_older_than=30 * DAY, batch_size=50, now_ns=NOW)
    writer.join(60)
    assert not failures and len(written) == 40
    assert done.traces == done.invocations == 200 and done.sessions == 20 and done.spans == 600
    counts = store.counts()
    assert (counts["spans"], counts["invocations"], counts["sessions"]) == (120, 40, 4)


def test_durations_and_lifetimes():
    assert parse_duration("30d") == 30 * DAY and parse_duration("12h") == 43_200 and parse_duration("1.5m") == 90
    for bad in ("30", "30 days", "-1d", "d", ""):
        with pytest.raises(ConfigError, match=r"--older-than .*not a duration"):
            parse_duration(bad, "--older-than")
    for zero in ("0h", "0d", "0.0m"):
        with pytest.raises(ConfigError, match=r"--older-than .*must be more than zero"):
            parse_duration(zero, "--older-than")
    check_lifetimes(7 * DAY, 90 * DAY)
    check_lifetimes(7 * DAY, None)
    with pytest.raises(ConfigError, match="shorter than --retain-spans"):
        check_lifetimes(7 * DAY, DAY)
    with pytest.raises(ConfigError, match="needs --retain-spans"):
        check_lifetimes(None, DAY)


def test_collectors_sharing_a_postgresql_store_take_turns(postgres_url):
    from toolpath.store.store import Store

    store = Store(postgres_url)
    first = RetentionWorker(store, spans=DAY, invocations=None, every=3600)
    second = RetentionWorker(store, spans=DAY, invocations=None, every=3600)
    with first._turn() as mine:
        assert mine
        assert second.run_once() is None  # the other collector is pruning: this one skips the round
    assert second.run_once() is not None
    worker = RetentionWorker(store, spans=DAY, invocations=None, every=0.05).start()
    deadline = time.monotonic() + 10
    while worker.rounds < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.stop()
    assert worker.rounds >= 2
    store.close()


def test_a_pruned_turn_takes_its_reviews_and_a_kept_one_keeps_them(store):
    from toolpath.store.annotations import ReviewLabel, annotate, annotations_of

    fill(store)
    annotate(store, run_key(1), author="Ada", label=ReviewLabel.FAIL)
    annotate(store, run_key(4), author="Ada", comment="fine")
    planned = prune(store, spans_older_than=30 * DAY, invocations_older_than=30 * DAY, dry_run=True, now_ns=NOW)
    done = prune(store, spans_older_than=30 * DAY, invocations_older_than=30 * DAY, now_ns=NOW)
    assert done.annotations == planned.annotations == 1 and "1 review(s)" in str(done)
    kept = annotations_of(store, [run_key(1), run_key(4)])
    assert kept[run_key(1)] == [] and [n.comment for n in kept[run_key(4)]] == ["fine"]


@pytest.mark.parametrize("age", [99_999_999 * DAY, 10.0**300, float("inf")], ids=["99999999d", "1e300s", "inf"])
def test_an_age_past_the_oldest_time_a_column_holds_prunes_nothing(store, age):
    """99999999d is older than any 64-bit nanosecond time (the driver's OverflowError before): nothing is that old."""
    for n, start in enumerate((OLD, RECENT)):
        store.ingest(agent_run(n, start, f"s{n}"), build_invocations, is_run_span)
    before = store.counts()
    assert before["spans"] and before["invocations"] == 2
    for dry_run in (True, False):
        counts = prune(store, spans_older_than=age, invocations_older_than=age, dry_run=dry_run, now_ns=NOW)
        assert counts == PruneCounts()
    assert store.counts() == before
    assert cutoff_ns(NOW, 40 * DAY) == NOW - 40 * DAY * 10**9  # an ordinary age: exact to the nanosecond
