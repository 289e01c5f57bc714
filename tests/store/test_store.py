"""The SQL store on a real SQLite file and a real PostgreSQL server: round trips and idempotent upserts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from toolpath.errors import ConfigError
from toolpath.model import Invocation, ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store, resolve_store_url

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def invocation(inv_id: str, session: str, offset: int, calls: list[ToolCall], **kw) -> Invocation:
    return Invocation(
        invocation_id=inv_id,
        session_id=session,
        agent_name="bot",
        prompt=f"prompt {inv_id}",
        response=f"response {inv_id}",
        tool_calls=calls,
        latency_seconds=0.25,
        trace_id=f"{offset:032x}",
        started_at=T0 + timedelta(seconds=offset),
        **kw,
    )


CALLS = [
    ToolCall(
        name="get",
        args={"id": "x", "nested": {"k": [1, 2.5, None]}},
        result={"ok": True},
        call_id="c1",
        start_time=1,
        end_time=2,
    ),
    ToolCall(name="set", args={"v": "ünïcødé 温度"}, result="done", error=None),
    ToolCall(name="boom", args={}, result=None, error="ValueError: nope"),
]


def test_round_trip(store):
    store.write([invocation("i1", "s", 1, CALLS, attributes={"service.name": "svc"})])
    got = store.get_invocation("i1")
    assert got == invocation("i1", "s", 1, CALLS, attributes={"service.name": "svc"})
    assert got.started_at == T0 + timedelta(seconds=1)


def test_rewriting_is_idempotent_and_replaces_tool_calls(store):
    store.write([invocation("i1", "s", 1, CALLS)])
    store.write([invocation("i1", "s", 1, CALLS)])
    store.write([invocation("i1", "s", 1, CALLS[:1], failure=1, error="E: x")])
    counts = store.counts()
    assert counts["invocations"] == 1 and counts["tool_calls"] == 1 and counts["sessions"] == 1
    got = store.get_invocation("i1")
    assert got.failure == 1 and [c.name for c in got.tool_calls] == ["get"]


def test_sessions_aggregate_and_order(store):
    store.write([invocation("a2", "A", 20, []), invocation("b1", "B", 5, [])])
    store.write([invocation("a1", "A", 10, [], failure=1)])
    sessions = store.list_sessions()
    assert [s["session_id"] for s in sessions] == ["A", "B"]
    assert sessions[0]["invocations"] == 2 and sessions[0]["failures"] == 1
    assert sessions[0]["first_started_at"] == (T0 + timedelta(seconds=10)).isoformat()
    assert [i.invocation_id for i in store.get_session("A").invocations] == ["a1", "a2"]
    assert store.get_session("missing") is None


def test_filters(store):
    store.write([invocation("a", "A", 1, []), invocation("b", "B", 2, [])])
    assert [
        i.invocation_id for i in store.list_invocations(since_ns=int((T0 + timedelta(seconds=2)).timestamp()) * 10**9)
    ] == ["b"]
    assert store.list_invocations(agent_name="other") == []


def test_spans_round_trip_and_dedupe(store):
    span = SpanRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None,
        name="invoke_agent bot",
        kind=1,
        start_time=10,
        end_time=20,
        status_code=2,
        status_message="x",
        attributes={"gen_ai.operation.name": "invoke_agent", "list": [1, 2]},
        events=[{"name": "exception", "time_unix_nano": 15, "attributes": {"exception.type": "E"}}],
        resource={"service.name": "svc"},
        scope="toolpath",
    )
    store.write([], [span])
    store.write([], [span])
    assert store.spans_of_trace("ab" * 16) == [span]


def test_bad_urls_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="no driver"):
        Store("nosuchdb://host/db")
    with pytest.raises(ConfigError, match="does not exist"):
        Store(f"sqlite:///{tmp_path}/missing/dir/x.db")


def test_url_resolution(monkeypatch):
    monkeypatch.delenv("TOOLPATH_STORE", raising=False)
    assert resolve_store_url() == "sqlite:///toolpath.db"
    assert resolve_store_url("data/x.db") == "sqlite:///data/x.db"
    assert resolve_store_url("x.sqlite3") == "sqlite:///x.sqlite3"
    assert resolve_store_url("runs/store") == "sqlite:///runs/store"  # a folder in it: a path
    monkeypatch.setenv("TOOLPATH_STORE", "postgresql+psycopg://u@h/db")
    assert resolve_store_url() == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize("url", ["::::", "localhost:5432", "host=db1 dbname=toolpath user=me", "toolpath"])
def test_a_store_that_is_neither_url_nor_path_is_an_error_and_no_file(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"neither a database URL nor a SQLite file path.*sqlite:///toolpath\.db"):
        Store(url)
    monkeypatch.setenv("TOOLPATH_STORE", url)
    with pytest.raises(ConfigError, match="neither a database URL"):
        Store()
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_a_database_or_a_folder_is_a_config_error(tmp_path):
    (tmp_path / "notes.db").write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(ConfigError, match=r"notes.db: cannot open \(file is not a database\)"):
        Store(f"sqlite:///{tmp_path / 'notes.db'}")
    (tmp_path / "folder.db").mkdir()
    with pytest.raises(ConfigError, match=r"folder\.db is a folder, not a database file"):
        Store(f"sqlite:///{tmp_path / 'folder.db'}")
    opened = Store(f"sqlite:///{tmp_path / 'later.db'}", create=False)  # nothing touched before upgrade()
    assert not (tmp_path / "later.db").exists()
    opened.upgrade()
    assert (tmp_path / "later.db").exists()


def test_sqlite_uses_wal(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'wal.db'}")
    with s.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_bulk_reads_give_back_what_was_written_in_the_order_asked(store):
    bare = ToolCall(name="ping", args=None, result=20)  # without arguments (not {}); a bare number as result
    written = [
        invocation("i1", "s", 1, CALLS, attributes={"service.name": "svc", "n": [1, {"b": False}]}),
        invocation("i2", "s", 2, [bare, *CALLS[1:]], intermediate_responses=[("sub", "partial"), ("x", "")]),
        invocation("i3", "t", 3, [], failure=1, error="E: boom"),
        invocation("i4", "t", 4, [ToolCall(name="n", args={}, result=2.5), ToolCall(name="s", result="7")]),
    ]
    store.write(written)
    got = store.invocations_by_id(["i3", "missing", "i1", "i2", "i4"])
    assert got == [written[2], written[0], written[1], written[3]]
    assert [c.result for c in got[3].tool_calls] == [2.5, "7"]
    assert got[1].tool_calls[0].start_time == 1 and got[1].tool_calls[0].end_time == 2
    assert got[2].tool_calls[0].args is None and got[2].tool_calls[2].args == {}
    assert [c.result for c in got[2].tool_calls] == [20, "done", None]
    assert got[2].intermediate_responses == [("sub", "partial"), ("x", "")]
    assert got[0].tool_calls == [] and got[0].error == "E: boom"
    assert store.invocations_by_id([]) == []
    many = [invocation(f"m{n}", "u", n, CALLS[:1]) for n in range(1200)]  # more ids than one IN list holds
    store.write(many)
    assert store.invocations_by_id([inv.invocation_id for inv in reversed(many)]) == many[::-1]


def test_each_call_keeps_its_agent_and_each_turn_the_agent_that_answered(store):
    """A turn the root agent transferred: its own call, the sub-agent's call, the sub-agent's answer; a call whose
    agent is unknown stays unknown (not the root agent)."""
    calls = [
        ToolCall(name="transfer_to_agent", args={"agent_name": "billing_agent"}, agent_name="coordinator"),
        ToolCall(name="refund", args={"order": 7}, call_id="c-2", agent_name="billing_agent"),
        ToolCall(name="legacy", args={}),
    ]
    written = invocation("i1", "s", 1, calls, answered_by="billing_agent")
    store.write([written])
    for got in (store.get_invocation("i1"), *store.invocations_by_id(["i1"]), *store.list_invocations()):
        assert got == written
        assert [c.agent_name for c in got.tool_calls] == ["coordinator", "billing_agent", None]
        assert (got.agent_name, got.answered_by) == ("bot", "billing_agent")


def test_a_closed_sqlite_store_leaves_nothing_in_its_write_ahead_log(tmp_path):
    """What the log held is in the database file after close(): no data (nor deleted data) stays in -wal."""
    from toolpath.model import Invocation

    path = tmp_path / "w.db"
    store = Store(f"sqlite:///{path}")
    store.write([Invocation(invocation_id="i1", session_id="s1", prompt="secret plan", response="ok")])
    wal = path.with_name(path.name + "-wal")
    assert wal.exists() and wal.stat().st_size > 0
    store.close()
    assert not wal.exists() or wal.stat().st_size == 0
    again = Store(f"sqlite:///{path}")
    assert again.get_session("s1") is not None
    again.close()
