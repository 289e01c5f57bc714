"""Exact retention on spans partitioned by day (``prune(exact=True)``: ``toolpath db prune --exact``, ``toolpath
collect --prune-exact``), on a real PostgreSQL server: after the days wholly older than the cutoff are dropped, the
batch deletes also take the spans older than the cutoff in the day the cutoff falls inside, a whole trace at a
time, and the store is left as a store of one table (SQLite) pruned alike is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.builders import agent_run
from tests.helpers.partitioned import (
    DAY,
    DAY0,
    ingest,
    partitioned_with,
    placed,
    spans_read_open,
    surviving,
)
from toolpath.store import partitions
from toolpath.store.retention import PruneCounts, prune
from toolpath.store.store import Store

AGE = 2 * DAY / 10**9
NOW = DAY0 + 7 * DAY + DAY // 2
"""The cutoff is DAY0 + 5.5 days: inside day 5's partition, which straddles it."""
RUNS = {
    "in the straddling day": agent_run(1, DAY0 + 5 * DAY + DAY // 4, "a"),  # older than the cutoff: exact takes it
    "across midnight": agent_run(2, DAY0 + 5 * DAY - 500_000, "b"),  # put back from day 4, ends before the cutoff
    "in a dropped day": agent_run(3, DAY0 + 3 * DAY, "c"),
    "recent": agent_run(4, DAY0 + 5 * DAY + DAY * 3 // 4, "d"),
    "across the cutoff": agent_run(5, DAY0 + 5 * DAY + DAY // 4, "e", late_child_ns=DAY0 + 5 * DAY + DAY * 3 // 4),
    "from an old day past the cutoff": agent_run(6, DAY0 + 4 * DAY, "f", late_child_ns=DAY0 + 6 * DAY),
    "from spans_before into the straddling day": agent_run(7, 0, "g", late_child_ns=DAY0 + 5 * DAY + DAY // 3),
}
KEPT = ("recent", "across the cutoff", "from an old day past the cutoff")


@pytest.fixture
def store(fresh_postgres) -> Iterator[Store]:
    yield from partitioned_with(fresh_postgres, DAY0, RUNS.values())


@pytest.fixture
def reference(tmp_path) -> Iterator[Store]:
    """The same traces in a store of one table (SQLite), where retention is exact already."""
    opened = Store(f"sqlite:///{tmp_path / 'reference.db'}")
    for spans in RUNS.values():
        ingest(opened, spans)
    yield opened
    opened.close()


def pruning(store: Store, *, exact: bool = False) -> tuple[PruneCounts, PruneCounts]:
    """A dry run, then the prune: what each said."""
    planned = prune(store, spans_older_than=AGE, invocations_older_than=AGE, dry_run=True, now_ns=NOW, exact=exact)
    done = prune(store, spans_older_than=AGE, invocations_older_than=AGE, batch_size=3, now_ns=NOW, exact=exact)
    return planned, done


def traces_left(store: Store) -> set[str]:
    return {trace for trace, _ in placed(store)}


def trace_of(name: str) -> str:
    return RUNS[name][0].trace_id


def test_without_exact_the_straddling_days_old_spans_wait_with_exact_they_go(store, reference):
    planned, done = pruning(store)
    assert planned == done and (done.spans, done.traces, done.partitions) == (3 + 3 + 4, 3, 1 + 5)
    assert traces_left(store) == {trace_of(name) for name in (*KEPT, "in the straddling day")}
    assert {s["session_id"] for s in store.list_sessions()} == {"a", "d", "e"}  # the invocation waits with its spans
    planned, done = pruning(store, exact=True)  # the days are gone: the batches take the rest
    assert planned == done and (done.spans, done.traces, done.partitions) == (3, 1, 0)
    assert done.invocations == 2  # at their own cutoff: the one across the cutoff too, as on one table
    assert traces_left(store) == {trace_of(name) for name in KEPT}
    prune(reference, spans_older_than=AGE, invocations_older_than=AGE, now_ns=NOW, exact=True)
    assert surviving(store) == surviving(reference)


def test_exact_at_once_counts_what_it_deletes_and_leaves_what_one_table_leaves(store, reference):
    planned, done = pruning(store, exact=True)
    expected = prune(reference, spans_older_than=AGE, invocations_older_than=AGE, batch_size=3, now_ns=NOW, exact=True)
    assert planned == done == expected
    assert (done.spans, done.traces, done.partitions) == (3 + 3 + 3 + 4, 4, 1 + 5)
    assert planned.partitions == done.partitions and expected.partitions == 0
    assert surviving(store) == surviving(reference)
    assert traces_left(store) == {trace_of(name) for name in KEPT}
    # a trace is never cut in two: those going on past the cutoff keep their older spans, in whichever partition
    where = placed(store)
    for name in ("across the cutoff", "from an old day past the cutoff"):
        assert {(s.trace_id, s.span_id) for s in RUNS[name]} <= set(where)
    assert where[(trace_of("across the cutoff"), RUNS["across the cutoff"][0].span_id)] == partitions.partition_name(
        DAY0 + 5 * DAY
    )
    assert prune(store, spans_older_than=AGE, invocations_older_than=AGE, now_ns=NOW, exact=True) == PruneCounts()


def test_exact_takes_the_old_days_by_batches_when_the_drop_cannot_lock(store, reference):
    """A long read holds the table: the drop gives up after its wait and the days stay, but an exact prune's
    batches still take every span older than the cutoff (the next round drops the emptied days)."""
    planned = prune(store, spans_older_than=AGE, invocations_older_than=AGE, dry_run=True, now_ns=NOW, exact=True)
    with spans_read_open(store):
        done = prune(store, spans_older_than=AGE, invocations_older_than=AGE, now_ns=NOW, exact=True)
    assert done == planned and done.partitions == 0 and planned.partitions == 1 + 5
    prune(reference, spans_older_than=AGE, invocations_older_than=AGE, now_ns=NOW, exact=True)
    assert surviving(store) == surviving(reference)
    later = prune(store, spans_older_than=AGE, invocations_older_than=AGE, now_ns=NOW, exact=True)
    assert later == PruneCounts() and later.partitions == 1 + 5  # empty now: dropped whole
