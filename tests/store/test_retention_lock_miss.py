"""Retention on spans partitioned by day when a drop misses the table's lock (a long read holds it), on a real
PostgreSQL server: the old days' partitions stay until a later round, and so do the invocations of their traces:
no invocation is pruned while its trace still has spans in the store, for a late span to rebuild it from; and an
invocation whose spans the batches take (spans_before's) goes with them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from tests.helpers.builders import agent_run, run_key
from tests.helpers.partitioned import (
    DAY,
    DAY0,
    ingest,
    partitioned_at,
    partitioned_with,
    placed,
    spans_read_open,
    surviving,
)
from toolpath.store.annotations import ReviewLabel, annotate, annotations_of
from toolpath.store.retention import PruneCounts, prune
from toolpath.store.store import Store

AGE = 2 * DAY / 10**9
NOW = DAY0 + 7 * DAY + DAY // 2
"""The cutoff is DAY0 + 5.5 days: inside day 5's partition; days 0 to 4 (and spans_before) are wholly older."""
RUNS = {
    "in an old day": agent_run(1, DAY0 + 3 * DAY, "a"),
    "across midnight": agent_run(2, DAY0 + 5 * DAY - 500_000, "b"),  # from day 4 into day 5, before the cutoff
    "in the straddling day": agent_run(3, DAY0 + 5 * DAY + DAY // 4, "c"),
    "from an old day past the cutoff": agent_run(4, DAY0 + 4 * DAY, "d", late_child_ns=DAY0 + 6 * DAY),
    "in spans_before": agent_run(5, DAY0 - DAY, "e"),  # walked by the batches, a drop or not
    "recent": agent_run(6, DAY0 + 6 * DAY, "f"),
}


@pytest.fixture
def store(fresh_postgres) -> Iterator[Store]:
    yield from partitioned_with(fresh_postgres, DAY0, RUNS.values())


def pruning(store: Store, *, dry_run: bool = False, exact: bool = False) -> PruneCounts:
    return prune(
        store, spans_older_than=AGE, invocations_older_than=AGE, dry_run=dry_run, batch_size=3, now_ns=NOW, exact=exact
    )


def traces_with_spans(store: Store) -> set[str]:
    return {trace for trace, _ in placed(store)}


def traces_with_invocations(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.execute(text("SELECT DISTINCT trace_id FROM invocations")).scalars())


def traces_of(*names: str) -> set[str]:
    return {RUNS[name][0].trace_id for name in names}


def test_a_drop_that_misses_its_lock_leaves_the_invocations_of_the_days_it_leaves(store):
    with spans_read_open(store):
        done = pruning(store)
    assert done.partitions == 0  # every day waits for the next round: its spans, and its traces' invocations
    assert (done.spans, done.traces, done.invocations, done.sessions) == (3, 1, 1, 1)  # spans_before's trace
    kept = traces_of(*(name for name in RUNS if name != "in spans_before"))
    assert traces_with_spans(store) == kept
    assert traces_with_invocations(store) == kept
    assert {s["session_id"] for s in store.list_sessions()} == {"a", "b", "c", "d", "f"}


def test_a_late_span_after_a_missed_drop_finds_its_turn_as_it_was(store):
    """Not a turn pruned, then rebuilt by a late span from the spans left: its review would be gone."""
    annotate(store, run_key(1), author="Ada", label=ReviewLabel.PASS)
    with spans_read_open(store):
        pruning(store)
    late = agent_run(1, RUNS["in an old day"][0].start_time, "a", tool_calls=3)[-1]  # a third tool call, late
    ingest(store, [late])
    [invocation] = store.invocations_by_id([run_key(1)])
    assert [c.name for c in invocation.tool_calls] == ["t0", "t1", "t2"]
    assert [note.author for note in annotations_of(store, [run_key(1)])[run_key(1)]] == ["Ada"]


def test_the_next_round_drops_the_days_and_their_invocations_as_a_dry_run_says(store):
    with spans_read_open(store):
        pruning(store)
    planned = pruning(store, dry_run=True)
    done = pruning(store)
    assert planned == done and done.partitions == planned.partitions == 1 + 5
    assert (done.spans, done.traces, done.invocations) == (3 + 3, 2, 3)  # the trace across midnight put back, gone
    # a trace that goes on past the cutoff keeps its spans, its invocation goes at its cutoff (as on one table)
    assert traces_with_spans(store) == traces_of("in the straddling day", "from an old day past the cutoff", "recent")
    assert traces_with_invocations(store) == traces_of("in the straddling day", "recent")
    assert pruning(store) == PruneCounts()


def test_a_dry_run_counts_the_drop_it_would_make(store):
    """A dry run takes no lock: it says what a round that gets the lock prunes (its days' invocations too)."""
    with spans_read_open(store):
        planned = pruning(store, dry_run=True)
    assert planned.partitions == 1 + 5 and (planned.spans, planned.invocations) == (3 + 3 + 3, 4)
    assert traces_with_spans(store) == traces_of(*RUNS) == traces_with_invocations(store)


def test_an_exact_prune_that_misses_its_lock_takes_spans_and_invocations_at_their_cutoff(store):
    with spans_read_open(store):
        done = pruning(store, exact=True)
    assert done.partitions == 0 and done.invocations == 5  # every one started before the cutoff
    assert traces_with_spans(store) == traces_of("from an old day past the cutoff", "recent")
    assert traces_with_invocations(store) == traces_of("recent")


def test_a_cutoff_inside_spans_before_prunes_invocations_with_the_spans_the_batches_take(fresh_postgres, tmp_path):
    """spans_before is walked by the batches (a migrated store keeps all its spans there): its invocations go at
    their cutoff, as on one table, not kept until its whole range is old."""
    store = partitioned_at(fresh_postgres, DAY0)
    reference = Store(f"sqlite:///{tmp_path / 'reference.db'}")
    runs = [agent_run(1, DAY0 - 3 * DAY, "old"), agent_run(2, DAY0 - DAY, "new"), agent_run(3, DAY0 + DAY, "new")]
    for target in (store, reference):
        for spans in runs:
            ingest(target, spans)
    now = DAY0  # the cutoff: DAY0 - 2 days, inside spans_before

    def pruned(target: Store, dry_run: bool = False) -> PruneCounts:
        return prune(target, spans_older_than=AGE, invocations_older_than=AGE, dry_run=dry_run, now_ns=now)

    planned, done = pruned(store, dry_run=True), pruned(store)
    assert planned == done == pruned(reference) and (done.spans, done.invocations, done.sessions) == (3, 1, 1)
    assert surviving(store) == surviving(reference)
    reference.close()
    store.close()
