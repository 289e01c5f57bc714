"""Spans partitioned by time on a real PostgreSQL server: ingest keeps its guarantees across partitions, retention
drops whole partitions and keeps the rows today's batch deletes keep, and migration 0013 moves a store with data
over (and back)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import create_engine, text

from tests.helpers.builders import agent_run, run_key
from tests.helpers.cli import run_cli
from tests.helpers.partitioned import DAY, DAY0, FUTURE, ingest, partitioned_at, placed, surviving
from toolpath.collector.reconstruct import build_invocations
from toolpath.store import bulk, migrate, partitions
from toolpath.store.retention import prune
from toolpath.store.store import Store


@pytest.fixture
def store(fresh_postgres) -> Iterator[Store]:
    opened = partitioned_at(fresh_postgres, DAY0)
    yield opened
    opened.close()


def test_a_new_store_is_partitioned_by_day_with_a_week_ahead(fresh_postgres):
    store = Store(fresh_postgres)
    with store.engine.connect() as conn:
        found = partitions.list_partitions(conn)
    names = [p.name for p in found]
    assert names[0] == partitions.BEFORE and names[-1] == partitions.DEFAULT and len(names) == 2 + 1 + partitions.AHEAD
    days = found[1:-1]
    assert all(p.upper - p.lower == DAY and p.lower % DAY == 0 for p in days)  # type: ignore[operator]
    assert [a.upper for a in found[:-2]] == [b.lower for b in found[1:-1]]  # no gap, no overlap
    store.close()


def test_a_span_sent_twice_is_stored_once_whichever_partition_takes_it(store):
    runs = [agent_run(1, 0, "epoch"), agent_run(2, DAY0 + 3 * DAY, "day"), agent_run(3, FUTURE, "future")]
    for spans in runs + runs:
        ingest(store, spans)
    where = placed(store)
    assert len(where) == sum(len(spans) for spans in runs) == 9
    assert {where[(spans[0].trace_id, spans[0].span_id)] for spans in runs} == {
        partitions.BEFORE, partitions.partition_name(DAY0 + 3 * DAY), partitions.DEFAULT
    }  # fmt: skip
    # the same key sent again with another start (another partition's): the span stored first stays, alone
    moved = [dataclasses.replace(s, start_time=s.start_time + 2 * DAY) for s in runs[1]]
    ingest(store, moved)
    assert len(placed(store)) == 9
    assert {s.start_time for s in store.spans_of_trace(runs[1][0].trace_id)} == {s.start_time for s in runs[1]}


def test_writers_racing_with_the_same_spans_store_each_once(store):
    runs = [agent_run(n, DAY0 + n * DAY // 3, f"s{n % 3}") for n in range(12)]
    failures: list[BaseException] = []

    def send() -> None:
        try:
            for spans in runs:
                ingest(store, spans)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    writers = [threading.Thread(target=send) for _ in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
    assert not failures
    assert len(placed(store)) == 12 * 3 and store.counts()["invocations"] == 12


def test_late_spans_of_an_old_trace_join_it_across_partitions(store):
    spans = agent_run(7, DAY0 + DAY, "late", tool_calls=3, late_child_ns=DAY0 + 4 * DAY)
    root, *children = spans
    ingest(store, children[-1:])  # the latest child first (another day's partition), then the rest, root last
    ingest(store, children[:-1])
    ingest(store, [root])
    [invocation] = store.invocations_by_id([run_key(7)])
    assert [c.name for c in invocation.tool_calls] == ["t0", "t1", "t2", "t3"]
    where = placed(store)
    assert where[(root.trace_id, root.span_id)] == partitions.partition_name(DAY0 + DAY)
    assert where[(root.trace_id, children[-1].span_id)] == partitions.partition_name(DAY0 + 4 * DAY)


def test_a_partition_made_later_takes_the_spans_the_default_one_held(store):
    ingest(store, agent_run(1, FUTURE + 5, "future"))
    assert set(placed(store).values()) == {partitions.DEFAULT}
    with store.engine.begin() as conn:
        made = partitions.ensure_partitions(conn, FUTURE, ahead=1)
        assert made == [
            partitions.partition_name(FUTURE // DAY * DAY),
            partitions.partition_name(FUTURE // DAY * DAY + DAY),
        ]
        assert partitions.ensure_partitions(conn, FUTURE, ahead=1) == []  # made once
    assert set(placed(store).values()) == {partitions.partition_name(FUTURE // DAY * DAY)}
    ingest(store, agent_run(1, FUTURE + 5, "future"))  # sent again: still stored once
    assert len(placed(store)) == 3


def fill(store: Store) -> None:
    """Traces over several days: old ones inside a day and across midnight, ones that go on past the cutoff (one
    across the midnight the cutoff is), one at the epoch, one in the future."""
    runs = [
        agent_run(1, DAY0 + DAY // 2, "a"),
        agent_run(2, DAY0 + 2 * DAY - 500_000, "a"),  # its tool spans start on the next day
        agent_run(3, DAY0 + DAY, "b", late_child_ns=DAY0 + 6 * DAY),  # goes on past the cutoff: kept whole
        agent_run(4, DAY0 + 2 * DAY, "b", late_child_ns=DAY0 + 4 * DAY + DAY // 2),
        agent_run(5, DAY0 + 5 * DAY - 500_000, "c"),  # its tool spans start at the cutoff: kept whole
        agent_run(6, DAY0 + 5 * DAY + DAY * 3 // 4, "c"),
        agent_run(7, 0, "epoch"),
        agent_run(8, FUTURE, "future"),
        agent_run(9, DAY0 + 4 * DAY - 1, "d", late_child_ns=DAY0 + 5 * DAY + DAY // 2),
    ]
    for spans in runs:
        ingest(store, spans)


AGE = 2 * DAY / 10**9
NOW = DAY0 + 7 * DAY
"""The cutoff is DAY0 + 5 days, a partition's lower bound: the days before it go whole, and the rest stays."""


def test_prune_drops_old_partitions_and_keeps_what_batch_deletes_keep(store, tmp_path):
    reference = Store(f"sqlite:///{tmp_path / 'reference.db'}")  # one table, today's batch deletes
    for target in (store, reference):
        fill(target)
    age = AGE
    planned = prune(store, spans_older_than=age, invocations_older_than=age, dry_run=True, now_ns=NOW)
    done = prune(store, spans_older_than=age, invocations_older_than=age, batch_size=3, now_ns=NOW)
    expected = prune(reference, spans_older_than=age, invocations_older_than=age, batch_size=3, now_ns=NOW)
    assert planned == done == expected
    assert (done.spans, done.traces) == (3 + 3 + 4 + 3, 4)  # runs 1, 2, 4 (a late span) and 7
    assert planned.partitions == done.partitions == 1 + 5 and expected.partitions == 0  # before, and days 0-4
    assert surviving(store) == surviving(reference)
    with store.engine.connect() as conn:
        left = [p.name for p in partitions.list_partitions(conn)]
    assert left[0] == partitions.partition_name(DAY0 + 5 * DAY)  # the day starting at the cutoff stays
    where = placed(store)
    # the long traces' old spans are kept, where no partition of their day is left
    assert where[(f"{3:032x}", f"a{3:015x}")] == where[(f"{9:032x}", f"a{9:015x}")] == partitions.DEFAULT
    again = prune(store, spans_older_than=age, invocations_older_than=age, now_ns=NOW)
    assert again == prune(reference, spans_older_than=age, invocations_older_than=age, now_ns=NOW) == type(again)()
    later = NOW + DAY  # runs 5 and 9 are old now, whole: their spans go, from the default partition too
    assert prune(store, spans_older_than=age, invocations_older_than=None, now_ns=later) == prune(
        reference, spans_older_than=age, invocations_older_than=None, now_ns=later
    )
    assert surviving(store) == surviving(reference)
    reference.close()


def test_a_partition_goes_once_its_whole_day_is_older_than_the_cutoff(store):
    """A cutoff inside a day: that day's older spans wait for their partition to go whole, but a trace put back from
    a dropped day that ends in it before the cutoff goes whole at once."""
    runs = {
        "in part": agent_run(1, DAY0 + 5 * DAY + DAY // 4, "a"),
        "across midnight": agent_run(2, DAY0 + 5 * DAY - 500_000, "b"),
        "dropped": agent_run(3, DAY0 + 3 * DAY, "c"),
        "recent": agent_run(4, DAY0 + 5 * DAY + DAY * 3 // 4, "d"),
    }
    for spans in runs.values():
        ingest(store, spans)
    now = DAY0 + 7 * DAY + DAY // 2  # the cutoff: DAY0 + 5.5 days
    planned = prune(store, spans_older_than=AGE, invocations_older_than=AGE, dry_run=True, now_ns=now)
    done = prune(store, spans_older_than=AGE, invocations_older_than=AGE, now_ns=now)
    assert planned == done and (done.spans, done.traces, done.partitions) == (3 + 3, 2, 1 + 5)
    assert {trace for trace, _ in placed(store)} == {runs["in part"][0].trace_id, runs["recent"][0].trace_id}
    # an invocation never goes before its spans: the one of the spans that wait for their day waits with them
    assert {s["session_id"] for s in store.list_sessions()} == {"a", "d"}
    later = prune(store, spans_older_than=AGE, invocations_older_than=AGE, now_ns=now + DAY // 2)
    assert (later.spans, later.invocations, later.partitions) == (6, 2, 1)
    assert placed(store) == {} and store.list_sessions() == []


def test_db_prune_says_what_it_dropped(fresh_postgres, tmp_path):
    today = time.time_ns() // DAY * DAY
    store = partitioned_at(fresh_postgres, today - 10 * DAY)
    for n, (days_ago, session) in enumerate([(9, "a"), (8, "a"), (1, "b")]):
        ingest(store, agent_run(n, today - days_ago * DAY, session))
    dry = run_cli(tmp_path, "db", "prune", "--store", fresh_postgres, "--older-than", "5d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    said = "6 span(s) of 2 trace(s), 2 invocation(s), 4 tool call(s), 1 session(s)"
    assert f"would prune {said}" in dry.stdout and "(6 partition(s) of spans dropped whole)" in dry.stdout
    assert store.counts()["spans"] == 9
    pruned = run_cli(tmp_path, "db", "prune", "--store", fresh_postgres, "--older-than", "5d")
    assert pruned.returncode == 0, pruned.stderr
    assert f"pruned {said}" in pruned.stdout and "(6 partition(s) of spans dropped whole)" in pruned.stdout
    counts = store.counts()
    assert (counts["spans"], counts["invocations"], counts["sessions"]) == (3, 1, 1)
    with store.engine.connect() as conn:
        assert partitions.list_partitions(conn)[0].lower == today - 5 * DAY
    store.close()


def test_migration_0013_moves_a_store_with_data_over_and_back(fresh_postgres):
    engine = create_engine(fresh_postgres)
    migrate.upgrade(engine, "0012")
    now = time.time_ns()
    runs = [agent_run(1, 0, "epoch"), agent_run(2, now - 3 * DAY, "old"), agent_run(3, now + 30 * DAY, "ahead")]
    with engine.begin() as conn:
        assert not partitions.is_partitioned(conn)
        for spans in runs:  # as an earlier toolpath wrote them
            bulk.insert_spans(conn, spans)
            bulk.write_invocations(conn, build_invocations(spans))
    assert migrate.upgrade(engine) == migrate.HEAD
    store = Store(fresh_postgres)
    where = placed(store)
    assert len(where) == 9
    assert {where[(s.trace_id, s.span_id)] for s in runs[0] + runs[1]} == {partitions.BEFORE}  # attached in place
    assert {where[(s.trace_id, s.span_id)] for s in runs[2]} == {partitions.DEFAULT}  # past the week made ahead
    with store.engine.connect() as conn:
        made = partitions.list_partitions(conn)
        before = made[0]
        indexes = {
            r[0] for r in conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'spans_before'"))
        }
    assert before.lower is None and before.upper == (now // DAY + 1) * DAY and len(made) == 1 + partitions.AHEAD + 1
    assert indexes == {"spans_before_pkey", "spans_before_start_time_idx", "spans_before_trace_id_parent_span_id_idx"}
    for spans in runs:  # sent again after the migration: each stored once
        ingest(store, spans)
    ingest(store, agent_run(4, now, "new"))
    assert len(placed(store)) == 12 and store.counts()["invocations"] == 4
    # the spans the store had are pruned from spans_before by batches, not kept until its whole range is old
    pruned = prune(store, spans_older_than=2 * DAY / 10**9, invocations_older_than=None, now_ns=now)
    assert (pruned.spans, pruned.traces, pruned.partitions) == (6, 2, 0)
    assert {trace for trace, _ in placed(store)} == {runs[2][0].trace_id, f"{4:032x}"}
    store.close()
    migrate_down = create_engine(fresh_postgres)
    with migrate_down.begin() as conn:
        command.downgrade(migrate.alembic_config(conn), "0012")
    with migrate_down.connect() as conn:
        assert not partitions.is_partitioned(conn)
        assert conn.execute(text("SELECT count(*) FROM spans")).scalar() == 6
    migrate_down.dispose()
    engine.dispose()


def test_db_partitions_makes_them_ahead_and_lists_them(fresh_postgres, tmp_path):
    today = time.time_ns() // DAY * DAY
    store = partitioned_at(fresh_postgres, today - 3 * DAY, ahead=0)  # a store no collector made partitions for since
    ingest(store, agent_run(1, today + DAY + 5, "tomorrow"))  # no partition yet: the default one takes it
    listed = run_cli(tmp_path, "db", "partitions", "--store", fresh_postgres, "--ahead", "2")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].endswith(": 6 partition(s) of spans, 3 made now")  # the days missed before today stay missing
    days = [partitions.partition_name(today + n * DAY) for n in (-3, 0, 1, 2)]
    assert [line.split(":")[0].strip() for line in lines[1:]] == [partitions.BEFORE, *days, partitions.DEFAULT]
    assert lines[1].startswith("  spans_before: the oldest to ") and lines[-1] == "  spans_default: any other time"
    assert lines[3].endswith(" UTC (new)") and not lines[2].endswith("(new)")
    assert set(placed(store).values()) == {partitions.partition_name(today + DAY)}  # moved out of the default one
    weekly = run_cli(tmp_path, "db", "partitions", "--store", fresh_postgres, "--ahead", "1", "--period", "1w")
    assert weekly.returncode == 0 and "(new)" in weekly.stdout
    with store.engine.connect() as conn:
        *_, before, newest, _ = partitions.list_partitions(conn)
    # a week's partition ends on a week's boundary and begins there too, or where the days made before end
    assert newest.upper % (7 * DAY) == 0  # type: ignore[operator]
    assert newest.lower == max(newest.upper - 7 * DAY, before.upper)  # type: ignore[operator]
    bad = run_cli(tmp_path, "db", "partitions", "--store", fresh_postgres, "--period", "10m")
    assert (
        bad.returncode == 2
        and bad.stderr == "error: --period '10m': at least an hour, in whole seconds (e.g. 1d, 1w)\n"
    )
    Store(f"sqlite:///{tmp_path / 'one.db'}").close()
    sqlite = run_cli(tmp_path, "db", "partitions", "--store", "one.db")
    assert sqlite.returncode == 0 and "spans are one table" in sqlite.stdout
    store.close()


def test_a_collectors_retention_rounds_make_partitions_ahead_pruning_or_not(fresh_postgres, tmp_path):
    from toolpath.cli.collect import _retention

    today = time.time_ns() // DAY * DAY
    store = partitioned_at(fresh_postgres, today - 3 * DAY, ahead=0)
    worker = _retention(store, None, None, "10m")  # no --retain-spans: on PostgreSQL the worker runs all the same
    assert worker is not None and worker.run_once() == type(worker.total)()
    with store.engine.connect() as conn:
        days = [p.lower for p in partitions.list_partitions(conn) if p.lower is not None and not p.default]
    assert days[-1] == today + partitions.AHEAD * DAY and today in days
    sqlite = Store(f"sqlite:///{tmp_path / 'one.db'}")
    assert _retention(sqlite, None, None, "10m") is None  # SQLite: nothing to do without an age
    sqlite.close()
    store.close()


def test_ingest_goes_on_while_partitions_are_dropped(store):
    for n in range(60):
        ingest(store, agent_run(1000 + n, DAY0 + (n % 5) * DAY + n, f"old-{n % 6}"))
    written: list[int] = []
    failures: list[BaseException] = []

    def send() -> None:
        try:
            for n in range(30):  # new traces, while the old days go
                ingest(store, agent_run(5000 + n, DAY0 + 6 * DAY + n, f"new-{n % 3}"))
                written.append(n)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    writer = threading.Thread(target=send)
    writer.start()
    done = prune(store, spans_older_than=AGE, invocations_older_than=AGE, now_ns=NOW)
    writer.join(60)
    assert not failures and len(written) == 30
    assert (done.spans, done.traces, done.invocations, done.partitions) == (180, 60, 60, 1 + 5)
    assert store.counts()["spans"] == 90 and store.counts()["invocations"] == 30
