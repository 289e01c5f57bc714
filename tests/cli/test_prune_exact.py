"""``toolpath db prune --exact`` and ``toolpath collect --prune-exact`` end to end: on spans partitioned by day
(PostgreSQL) the older spans of the day the cutoff falls inside go only with them; on SQLite the option changes
nothing and says so; ``--prune-exact`` without ``--retain-spans`` is one error line."""

from __future__ import annotations

import time

from tests.helpers.builders import agent_run
from tests.helpers.cli import run_cli
from tests.helpers.collector import Collector
from tests.helpers.partitioned import DAY, ingest, partitioned_at, placed
from toolpath.store.store import Store


def mid_day_age(day_start: int) -> str:
    """An age whose cutoff is noon of the day starting at ``day_start``: hours from either midnight, however long
    the test takes."""
    return f"{(time.time_ns() - (day_start + DAY // 2)) // 10**9}s"


def test_db_prune_exact_takes_the_straddling_days_old_spans(fresh_postgres, tmp_path):
    today = time.time_ns() // DAY * DAY
    day = today - 5 * DAY  # the cutoff's day
    store = partitioned_at(fresh_postgres, today - 10 * DAY)
    for n, (at, session) in enumerate([(today - 9 * DAY, "a"), (day + DAY // 24, "b"), (day + DAY * 3 // 4, "c")]):
        ingest(store, agent_run(n, at, session))
    ingest(store, agent_run(3, today, "c"))
    age = mid_day_age(day)

    def db_prune(*options: str) -> str:
        done = run_cli(tmp_path, "db", "prune", "--store", fresh_postgres, "--older-than", age, *options)
        assert done.returncode == 0, done.stderr
        return done.stdout

    one = "3 span(s) of 1 trace(s), 1 invocation(s), 2 tool call(s), 1 session(s)"
    two = "6 span(s) of 2 trace(s), 2 invocation(s), 4 tool call(s), 2 session(s)"
    dropped = "(6 partition(s) of spans dropped whole)"  # spans_before and the 5 days before the cutoff's
    exact = "(--exact: to the cutoff, inside its day's partition too)"
    assert f"would prune {one}" in db_prune("--dry-run") and f"would prune {two}" in db_prune("--dry-run", "--exact")
    said = db_prune()
    assert f"pruned {one}" in said and dropped in said and "--exact" not in said
    assert {trace for trace, _ in placed(store)} == {f"{n:032x}" for n in (1, 2, 3)}  # run 1 waits for its day
    said = db_prune("--exact")
    assert f"pruned {one}" in said and exact in said and "dropped whole" not in said
    assert {trace for trace, _ in placed(store)} == {f"{n:032x}" for n in (2, 3)}
    counts = store.counts()
    assert (counts["spans"], counts["invocations"], counts["sessions"]) == (6, 2, 1)
    store.close()


def test_db_prune_exact_on_sqlite_changes_nothing_and_says_so(tmp_path):
    now, day = time.time_ns(), DAY
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    for n, (age, session) in enumerate([(40, "a"), (30, "a"), (1, "b")]):
        ingest(store, agent_run(n, now - age * day - day // 2, session))
    plain = run_cli(tmp_path, "db", "prune", "--store", "s.db", "--older-than", "30d", "--dry-run")
    dry = run_cli(tmp_path, "db", "prune", "--store", "s.db", "--older-than", "30d", "--dry-run", "--exact")
    said = "6 span(s) of 2 trace(s), 2 invocation(s), 4 tool call(s), 1 session(s)"
    assert plain.returncode == dry.returncode == 0 and f"would prune {said}" in plain.stdout
    assert dry.stdout.startswith(plain.stdout.rstrip("\n"))
    assert dry.stdout.rstrip("\n").endswith("(--exact: spans are one table here, retention is exact without it)")
    pruned = run_cli(tmp_path, "db", "prune", "--store", "s.db", "--older-than", "30d", "--exact")
    assert pruned.returncode == 0 and f"pruned {said}" in pruned.stdout and "one table here" in pruned.stdout
    assert store.counts()["spans"] == 3
    store.close()


def test_prune_exact_needs_retain_spans(tmp_path):
    bad = run_cli(
        tmp_path, "collect", "--store", "sqlite:///c.db", "--http-port", "0", "--grpc-port", "0", "--prune-exact"
    )
    assert bad.returncode == 2
    assert bad.stderr == "error: --prune-exact needs --retain-spans (it says how spans are pruned)\n"
    assert not (tmp_path / "c.db").exists()


def test_a_collector_with_prune_exact_prunes_to_the_cutoff(fresh_postgres, tmp_path):
    today = time.time_ns() // DAY * DAY
    day = today - DAY  # the cutoff's day
    store = partitioned_at(fresh_postgres, today - 3 * DAY)
    old, recent = agent_run(1, day + DAY // 24, "old"), agent_run(2, day + DAY * 3 // 4, "recent")
    for spans in (old, recent):
        ingest(store, spans)
    collector = Collector(
        tmp_path, fresh_postgres, "--retain-spans", mid_day_age(day), "--prune-exact", "--prune-every", "1s"
    ).start()
    try:
        deadline = time.monotonic() + 60
        while store.spans_of_trace(old[0].trace_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert store.spans_of_trace(old[0].trace_id) == []
        assert len(store.spans_of_trace(recent[0].trace_id)) == 3
    finally:
        collector.stop()
        store.close()
    assert collector.process is not None and collector.process.returncode == 0
