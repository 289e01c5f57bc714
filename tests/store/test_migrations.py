"""The store's schema comes from Alembic migrations, on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import threading

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from tests.helpers.turn_usage_spans import kept, store_at_0010
from toolpath.model import Invocation, ToolCall
from toolpath.store import migrate, turn_text
from toolpath.store import schema as t
from toolpath.store.store import Store

LEGACY_TABLES = {"sessions", "invocations", "tool_calls", "spans", "eval_runs", "eval_results"}
"""The tables of revision 0001, which stores made before migrations had."""


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("fresh_postgres")


def test_head_constant_is_the_newest_migration():
    config = migrate.alembic_config(None)
    assert ScriptDirectory.from_config(config).get_current_head() == migrate.HEAD


def test_migrations_build_exactly_the_tables_the_code_uses(empty_url):
    store = Store(empty_url)
    with store.engine.connect() as conn:
        assert migrate.current_revision(conn) == migrate.HEAD
        differences = compare_metadata(MigrationContext.configure(conn), t.metadata)
    # the text index is no table of the metadata (on SQLite a virtual table and its own tables)
    differences = [d for d in differences if not (d[0] == "remove_table" and d[1].name.startswith("turn_text"))]
    differences = [d for d in differences if not (d[0] == "remove_index" and d[1].name == "ix_turn_text_body")]
    # on PostgreSQL the partitions of spans (toolpath.store.partitions) are tables of their own, with their indexes
    partition = {"remove_table": lambda d: d[1].name, "remove_index": lambda d: d[1].table.name}
    differences = [d for d in differences if not (d[0] in partition and partition[d[0]](d).startswith("spans_"))]
    assert differences == []
    store.close()


def test_a_store_made_before_migrations_is_stamped_and_kept(empty_url):
    engine = create_engine(empty_url)
    # what toolpath did before it had migrations: create_all of the tables it had then
    # (with today's columns, and the tables today's write path fills beside invocations: the write below is today's)
    tables = [table for name, table in t.metadata.tables.items() if name in {*LEGACY_TABLES, "turn_usage"}]
    t.metadata.create_all(engine, tables=tables)
    with engine.begin() as conn:
        turn_text.create(conn)
    legacy = Store(empty_url, create=False)
    legacy.write([Invocation(invocation_id="inv-1", session_id="s-1", tool_calls=[ToolCall(name="a", args={})])])
    legacy.close()

    store = Store(empty_url)
    with store.engine.connect() as conn:
        assert migrate.current_revision(conn) == migrate.HEAD
    assert [inv.invocation_id for inv in store.list_invocations()] == ["inv-1"]
    store.close()
    engine.dispose()


def test_collectors_starting_together_migrate_once(fresh_postgres):
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            Store(fresh_postgres).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    engine = create_engine(fresh_postgres)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
        assert set(inspect(conn).get_table_names()) >= set(t.metadata.tables)
    engine.dispose()


def test_the_revision_keying_invocations_by_trace_and_span_keeps_their_data(empty_url):
    """A store written by a collector that keyed invocations by span id alone upgrades with its data: every row
    that named the invocation names its new id; an invocation not rebuilt from a span keeps its id."""
    script = ScriptDirectory(str(migrate.MIGRATIONS))
    rekey = next(r for r in script.walk_revisions() if r.path.endswith("_invocation_keys.py"))
    before = rekey.down_revision  # (the revision numbers may change when migrations merge)
    store = Store(empty_url, create=False)
    store.upgrade(before)
    trace, span = "ab" * 16, "cd" * 8
    with store.engine.begin() as conn:
        conn.execute(t.spans.insert(), [{"trace_id": trace, "span_id": span, "parent_span_id": None,
                                         "name": "invoke_agent bot", "kind": 1, "start_time": 5, "end_time": 9,
                                         "status_code": 0, "status_message": None, "attributes": {}, "events": [],
                                         "resource": {}, "scope": None}])  # fmt: skip
    with store.engine.begin() as conn:  # the columns of that revision (later ones add more)
        conn.execute(text("INSERT INTO sessions VALUES ('s', NULL, 0, 0)"))
        for invocation_id in (span, "from-a-dataset"):
            conn.execute(text(
                "INSERT INTO invocations (invocation_id, session_id, trace_id, intermediate_responses, failure, "
                "started_at, attributes) VALUES (:id, 's', :trace, '[]', 0, 0, '{}')"
            ), {"id": invocation_id, "trace": trace})  # fmt: skip
        conn.execute(text("INSERT INTO tool_calls (invocation_id, position, name, args) VALUES (:id, 0, 'a', '{}')"),
                     {"id": span})  # fmt: skip
        conn.execute(text("INSERT INTO eval_jobs (invocation_id, status, enqueued_at, attempts) "
                          "VALUES (:id, 'done', 1, 1)"), {"id": span})  # fmt: skip
        conn.execute(text("INSERT INTO online_results (invocation_id, metric, score, worker, created_at) "
                          "VALUES (:id, 'm', 1.0, 'w', 1)"), {"id": span})  # fmt: skip
    store.close()

    upgraded = Store(empty_url)
    key = f"{trace}-{span}"
    invocations = {inv.invocation_id: inv for inv in upgraded.list_invocations()}
    assert set(invocations) == {key, "from-a-dataset"}
    assert [c.name for c in invocations[key].tool_calls] == ["a"]
    assert invocations[key].span_id == span
    with upgraded.engine.connect() as conn:
        assert [r.invocation_id for r in conn.execute(t.eval_jobs.select())] == [key]
        assert [r.invocation_id for r in conn.execute(t.online_results.select())] == [key]
    from alembic import command

    with upgraded.engine.begin() as conn:  # and back
        command.downgrade(migrate.alembic_config(conn), before)
    with upgraded.engine.connect() as conn:  # read as that revision's columns (later ones add more)
        assert {r[0] for r in conn.execute(text("SELECT invocation_id FROM invocations"))} == {span, "from-a-dataset"}
    upgraded.close()


def test_the_revision_adding_call_agents_keeps_stored_calls_with_their_agent_unknown(empty_url):
    script = ScriptDirectory(str(migrate.MIGRATIONS))
    added = next(r for r in script.walk_revisions() if r.path.endswith("_call_agents.py"))
    store = Store(empty_url, create=False)
    store.upgrade(added.down_revision)
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO sessions VALUES ('s', 'bot', 1, 1)"))
        conn.execute(text(
            "INSERT INTO invocations (invocation_id, session_id, trace_id, agent_name, intermediate_responses, "
            "failure, started_at, attributes) VALUES ('i', 's', '', 'bot', '[]', 0, 1, '{}')"
        ))  # fmt: skip
        conn.execute(text("INSERT INTO tool_calls (invocation_id, position, name, args) VALUES ('i', 0, 'a', '{}')"))
    store.close()
    upgraded = Store(empty_url)
    [inv] = upgraded.list_invocations()
    assert (inv.answered_by, [(c.name, c.agent_name) for c in inv.tool_calls]) == (None, [("a", None)])
    upgraded.write(
        [inv.model_copy(update={"answered_by": "sub", "tool_calls": [ToolCall(name="a", agent_name="sub")]})]
    )
    assert [c.agent_name for c in upgraded.get_invocation("i").tool_calls] == ["sub"]
    from alembic import command

    with upgraded.engine.begin() as conn:  # and back
        command.downgrade(migrate.alembic_config(conn), added.down_revision)
    with upgraded.engine.connect() as conn:
        assert "agent_name" not in {c["name"] for c in inspect(conn).get_columns("tool_calls")}
    upgraded.close()


def test_the_revision_of_online_evaluators_keeps_jobs_and_scores_as_the_flat_evaluators(empty_url):
    """Jobs and scores stored when a store had one evaluator become the flat form's (``default``, version ``1``);
    afterwards two evaluators may score one metric of one turn; back down, one row per turn and metric is kept."""
    script = ScriptDirectory(str(migrate.MIGRATIONS))
    added = next(r for r in script.walk_revisions() if r.path.endswith("_online_evaluators.py"))
    store = Store(empty_url, create=False)
    store.upgrade(added.down_revision)
    with store.engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval_jobs (invocation_id, status, enqueued_at, attempts) VALUES ('i', 'done', 1, 1), "
            "('j', 'pending', 2, 0)"
        ))  # fmt: skip
        conn.execute(text(
            "INSERT INTO online_results (invocation_id, metric, score, label, worker, created_at) "
            "VALUES ('i', 'm', 0.5, 'pass', 'w', 3)"
        ))  # fmt: skip
    store.close()
    upgraded = Store(empty_url)
    with upgraded.engine.begin() as conn:
        jobs = sorted(tuple(r) for r in conn.execute(text("SELECT invocation_id, evaluator, status FROM eval_jobs")))
        assert jobs == [("i", "default", "done"), ("j", "default", "pending")]
        scored = "SELECT invocation_id, evaluator, evaluator_version, metric, score FROM online_results"
        assert [tuple(r) for r in conn.execute(text(scored))] == [("i", "default", "1", "m", 0.5)]
        conn.execute(text(
            "INSERT INTO online_results (invocation_id, evaluator, evaluator_version, metric, score, worker, "
            "created_at) VALUES ('i', 'another', '4', 'm', 0.9, 'w', 4)"
        ))  # fmt: skip
        conn.execute(text(
            "INSERT INTO eval_jobs (invocation_id, evaluator, status, reason, enqueued_at, attempts) "
            "VALUES ('i', 'another', 'skipped', 'budget', 4, 1)"
        ))  # fmt: skip
    from alembic import command

    with upgraded.engine.begin() as conn:  # and back
        command.downgrade(migrate.alembic_config(conn), added.down_revision)
    with upgraded.engine.connect() as conn:
        assert sorted(tuple(r) for r in conn.execute(text("SELECT invocation_id, score FROM online_results"))) == [
            ("i", 0.9)  # "another" comes first by name
        ]
        assert sorted(r[0] for r in conn.execute(text("SELECT invocation_id FROM eval_jobs"))) == ["i", "j"]
        assert not inspect(conn).has_table("online_usage")
    upgraded.close()


def test_migration_0011_fills_the_turns_stored_before_it_and_goes_back(empty_url):
    store_at_0010(empty_url)
    upgraded = Store(empty_url)
    turns, rows = kept(upgraded)
    assert turns == {"a": (107, 13, "from-resource"), "b": (1000, 0, "u-2")}
    assert len(rows) == 3
    with upgraded.engine.begin() as conn:
        command.downgrade(migrate.alembic_config(conn), "0010")
    with upgraded.engine.connect() as conn:
        assert not {"input_tokens", "output_tokens", "user_id"} & {
            c["name"] for c in inspect(conn).get_columns("invocations")}  # fmt: skip
        assert not inspect(conn).has_table("turn_usage")
    upgraded.close()


def test_migration_0012_indexes_the_turns_stored_before_it_and_goes_back(empty_url):
    store = Store(empty_url, create=False)
    store.upgrade("0011")
    with store.engine.begin() as conn:  # rows as a store at 0011 held them
        conn.execute(text("INSERT INTO sessions VALUES ('s', NULL, 0, 0)"))
        conn.execute(text(
            "INSERT INTO invocations (invocation_id, session_id, trace_id, prompt, intermediate_responses, failure, "
            "started_at, attributes) VALUES ('i', 's', '', 'about the Garage', '[]', 0, 0, '{}')"
        ))  # fmt: skip
    store.close()
    upgraded = Store(empty_url)
    from toolpath.store import browse
    from toolpath.store.session_filter import SessionFilter

    assert [r["session_id"] for r in browse.session_page(upgraded, SessionFilter(text="garage")).rows] == ["s"]
    with upgraded.engine.begin() as conn:
        command.downgrade(migrate.alembic_config(conn), "0011")
    with upgraded.engine.connect() as conn:
        assert not inspect(conn).has_table("turn_text")
    upgraded.close()
