"""The sessions list read through the database driver alone (:mod:`toolpath.store.direct`) and through the store's
SQLAlchemy engine gives the same rows, on a real SQLite file and a real PostgreSQL server; a store the driver
cannot read as it is (a schema to migrate) is opened as a ``Store`` and read all the same."""

from __future__ import annotations

import sqlite3

import pytest

from toolpath.model import Invocation, ToolCall
from toolpath.store import migrate, session_list
from toolpath.store.direct import reading
from toolpath.store.session_list import Reader
from toolpath.store.store import Store

MARK = "toolpath.evaluation"


def turn(invocation_id: str, session_id: str, second: int, **fields) -> Invocation:
    from datetime import UTC, datetime

    return Invocation(
        invocation_id=invocation_id,
        session_id=session_id,
        agent_name=fields.pop("agent", "lister"),
        prompt=f"prompt of {invocation_id}",
        response="ok",
        trace_id=invocation_id.encode().hex().ljust(32, "0"),
        started_at=datetime(2026, 11, 1, 12, 0, second, tzinfo=UTC),
        latency_seconds=fields.pop("latency", 1.0),
        **fields,
    )


TURNS = [
    turn("la1", "list-a", 1, tool_calls=[ToolCall(name="get", args={"k": 1}), ToolCall(name="put", error="E: no")]),
    turn("la2", "list-a", 5, failure=1, error="boom", latency=3.5),
    turn("lb1", "list-b", 3, attributes={MARK: True}),
    turn("lc1", "eval-list-c", 2),
    turn("ld1", "list-d", 4, agent="other"),
]


def url_of(store: Store) -> str:
    return store.engine.url.render_as_string(hide_password=False)


def test_the_driver_and_the_engine_read_the_same_list(store):
    store.write(TURNS)
    with store.engine.connect() as conn:
        through_engine = session_list.listed(Reader.of_connection(conn), limit=None, evaluation_attribute=MARK)
        engine_count = session_list.count(Reader.of_connection(conn), agent_name="lister")
    with reading(url_of(store)) as reader:
        assert reader.dialect == store.dialect
        through_driver = session_list.listed(reader, limit=None, evaluation_attribute=MARK)
        assert session_list.count(reader, agent_name="lister") == engine_count == 3
        only_lister = session_list.listed(reader, agent_name="lister", limit=2)
    assert through_driver == through_engine
    mine = [row for row in through_driver if row["session_id"].startswith(("list-", "eval-list-"))]
    assert [row["session_id"] for row in mine] == ["list-a", "list-d", "list-b", "eval-list-c"]  # newest first
    a, d, b, c = mine
    assert (a["invocations"], a["failures"], a["tool_calls"], a["tool_errors"]) == (2, 1, 2, 1)
    assert (a["slowest"], a["latency"], a["prompt"]) == (3.5, 4.5, "prompt of la1")
    assert a["first_started_at"] == "2026-11-01T12:00:01+00:00" and a["last_started_at"] == "2026-11-01T12:00:05+00:00"
    assert [row["evaluation"] for row in mine] == [False, False, True, True]  # marked turn; evaluator's id
    assert (d["agent_name"], b["tool_calls"], c["invocations"]) == ("other", 0, 1)
    assert [row["session_id"] for row in only_lister] == ["list-a", "list-b"]
    # the Store's own list is the same rows (without the mark, only the evaluators' ids say "evaluation")
    listed = {row["session_id"]: row for row in store.list_sessions(limit=None)}
    assert [listed[row["session_id"]] for row in mine] == [{**row, "evaluation": row is c} for row in mine]


def test_a_store_that_needs_migrating_is_opened_as_a_store_and_read(tmp_path):
    """An empty file (the schema not made yet) and a store one revision behind: the driver does not read them
    as they are; opening them as a ``Store`` brings the schema to its head, and the list is read."""
    empty = tmp_path / "empty.db"
    empty.touch()
    with reading(str(empty)) as reader:
        assert session_list.listed(reader) == [] and session_list.count(reader) == 0
    assert sqlite3.connect(empty).execute("SELECT version_num FROM alembic_version").fetchall() == [(migrate.HEAD,)]

    behind = tmp_path / "behind.db"
    Store(f"sqlite:///{behind}").write(TURNS[:1])
    from alembic import command
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{behind}")
    with engine.begin() as conn:
        command.downgrade(migrate.alembic_config(conn), "-1")
    engine.dispose()
    before = sqlite3.connect(behind).execute("SELECT version_num FROM alembic_version").fetchall()
    assert before != [(migrate.HEAD,)]
    with reading(str(behind)) as reader:
        assert [row["session_id"] for row in session_list.listed(reader)] == ["list-a"]
    assert sqlite3.connect(behind).execute("SELECT version_num FROM alembic_version").fetchall() == [(migrate.HEAD,)]


def test_a_file_that_is_not_a_database_is_one_error(tmp_path):
    from toolpath.errors import ConfigError

    notes = tmp_path / "notes.db"
    notes.write_text("not a database, just notes\n" * 100)
    with pytest.raises(ConfigError, match=r"notes.db: cannot open \(file is not a database\)"), reading(str(notes)):
        pass


def test_the_calls_caps_left_out_are_summed_per_session_and_nothing_else_counts(store):
    """A session's ``tool_calls_dropped`` is the sum of its turns' ``toolpath.tool_calls_dropped``, through the
    driver and the engine alike; a value the collector never writes (text, a fraction, a negative number, true,
    a number too large for a count) counts nothing and fails no query. Online scoring reads the same per turn."""
    from toolpath.store.reads import turns_by_id

    calls = [ToolCall(name="get", args={"n": n}) for n in range(3)]
    odd = ["banana", 2.5, -3, True, 10**30, 10**10, {"n": 1}]
    store.write(
        [
            turn("cap1", "capped", 1, tool_calls=calls, attributes={session_list.CALLS_DROPPED: 1000}),
            turn("cap2", "capped", 2, tool_calls=calls[:1], attributes={session_list.CALLS_DROPPED: 7}),
            turn("cap3", "capped", 3),
            *(turn(f"odd{n}", "odd", n + 1, attributes={session_list.CALLS_DROPPED: v}) for n, v in enumerate(odd)),
            turn("whole", "whole", 9, tool_calls=calls),
        ]
    )
    with store.engine.connect() as conn:
        through_engine = session_list.listed(Reader.of_connection(conn), limit=None)
        turns = {t.invocation_id: t.calls_dropped for t in turns_by_id(conn, ["cap1", "cap3", "odd0", "odd4"])}
    with reading(url_of(store)) as reader:
        through_driver = session_list.listed(reader, limit=None)
    assert through_driver == through_engine
    rows = {row["session_id"]: row for row in through_driver}
    assert (rows["capped"]["tool_calls"], rows["capped"]["tool_calls_dropped"]) == (4, 1007)
    assert (rows["odd"]["tool_calls_dropped"], rows["whole"]["tool_calls_dropped"]) == (0, 0)
    assert turns == {"cap1": 1000, "cap3": 0, "odd0": 0, "odd4": 0}
