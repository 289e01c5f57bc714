"""What online scoring reads of stored turns (:func:`toolpath.store.reads.turns_by_id`): on SQLite run by the
driver itself, on the connection's own transaction, a failure raised as SQLAlchemy raises any statement's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.exc import OperationalError

from toolpath.model import Invocation, ToolCall
from toolpath.store.reads import turns_by_id
from toolpath.store.store import Store

CALLS = [
    ToolCall(name="find", args={"city": "Lyon", "n": 2}, result={"ok": True}, call_id="c1"),
    ToolCall(name="book", args={"é": [1, 2.5]}, error="Timeout: no answer", agent_name="booker"),
    ToolCall(name="ping", args={}, result=20),
]


def invocation(invocation_id: str, calls: list[ToolCall]) -> Invocation:
    return Invocation(
        invocation_id=invocation_id, session_id="s", agent_name="bot", prompt="p", response="r", tool_calls=calls,
        intermediate_responses=[("bot", "thinking")], latency_seconds=0.5, trace_id="a" * 32,
        started_at=datetime(2026, 12, 1, 12, 0, 1, 250000, tzinfo=UTC),
    )  # fmt: skip


def test_turns_are_read_with_their_calls_in_the_order_asked(store):
    store.write([invocation("one", CALLS), invocation("two", CALLS[1:]), invocation("none", [])])
    with store.engine.connect() as conn:
        turns = turns_by_id(conn, ["two", "missing", "none", "one"])
    assert [t.invocation_id for t in turns] == ["two", "none", "one"]
    two, none, one = turns
    assert one.calls == [(c.name, c.args, c.error, c.result, c.call_id, c.agent_name) for c in CALLS]
    assert two.calls == one.calls[1:]
    assert none.calls == []
    assert (one.trace_id, one.latency_seconds, one.intermediate_responses) == ("a" * 32, 0.5, [("bot", "thinking")])
    assert one.started_at == datetime(2026, 12, 1, 12, 0, 1, 250000, tzinfo=UTC)


def test_a_read_that_fails_is_raised_as_sqlalchemy_raises_it(tmp_path):
    """On SQLite the driver runs the read; its failure is raised by SQLAlchemy (the engine's handlers see it),
    not as the driver's own error."""
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.write([invocation("one", CALLS)])
        with store.engine.connect() as conn:
            conn.exec_driver_sql("ALTER TABLE tool_calls RENAME TO tool_calls_away")
            with pytest.raises(OperationalError, match="no such table: tool_calls"):
                turns_by_id(conn, ["one"])
    finally:
        store.close()
