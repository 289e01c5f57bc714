"""The UI's reads on real SQLite and PostgreSQL: the session search (prompts, responses, ids, tool names,
arguments, results, attributes; case-insensitive, ``%`` and ``_`` literal), the filters, pages both ways with a
total, a turn's place in its session, and what says whether each run's results failed."""

from __future__ import annotations

from datetime import UTC, datetime

from toolpath.model import Invocation, ToolCall
from toolpath.store import browse
from toolpath.store.session_filter import SessionFilter


def turn(n: int, session: str, **fields) -> Invocation:
    return Invocation(
        invocation_id=f"i{n}",
        session_id=session,
        agent_name="bot",
        started_at=datetime(2026, 5, 1, 10, n, tzinfo=UTC),
        **fields,
    )


def fill(store) -> None:
    store.write(
        [
            turn(0, "prod-1", prompt="Where is ORDER 7?", response="It shipped", attributes={"tier": "Gold"}),
            turn(1, "prod-1", prompt="thanks", response="bye", latency_seconds=2.5),
            turn(
                2,
                "prod-2",
                prompt="dim it",
                tool_calls=[
                    ToolCall(name="set_Light", args={"room": "50%_off"}, result={"ok": "Porch"}, error="Timeout")
                ],
            ),
            turn(3, "eval-run1-0", prompt="eval prompt"),
            turn(4, "replay-run1-prod-1", prompt="replayed"),
        ]
    )


def ids(store, **where) -> list[str]:
    return [r["session_id"] for r in browse.session_page(store, SessionFilter(**where)).rows]


def test_search_reaches_every_field_and_ignores_case(store):
    fill(store)
    assert ids(store, text="order 7") == ["prod-1"]  # a prompt, another case
    assert ids(store, text="SHIPPED") == ["prod-1"]  # a response
    assert ids(store, text="gold") == ["prod-1"]  # an attribute
    assert ids(store, text="set_light") == ["prod-2"]  # a tool name
    assert ids(store, text="50%_off") == ["prod-2"]  # an argument, % and _ literal
    assert ids(store, text="0%x") == []
    assert ids(store, text="porch") == ["prod-2"]  # a result
    assert ids(store, text="PROD-") == ["replay-run1-prod-1", "prod-2", "prod-1"]  # session ids, newest first
    assert ids(store, tool="set_Light") == ["prod-2"] and ids(store, tool_error=True) == ["prod-2"]
    assert ids(store, latency_above=2.0) == ["prod-1"]
    assert ids(store, hide_evaluation=True) == ["prod-2", "prod-1"]


def test_pages_both_ways_with_a_total_and_a_turns_place(store):
    fill(store)
    first = browse.session_page(store, SessionFilter(), limit=2)
    assert [r["session_id"] for r in first.rows] == ["replay-run1-prod-1", "eval-run1-0"]
    assert first.total == 4 and first.previous_cursor is None and first.next_cursor is not None
    second = browse.session_page(store, SessionFilter(), limit=2, after=first.next_cursor)
    assert [r["session_id"] for r in second.rows] == ["prod-2", "prod-1"] and second.next_cursor is None
    back = browse.session_page(store, SessionFilter(), limit=2, before=second.previous_cursor)
    assert [r["session_id"] for r in back.rows] == [r["session_id"] for r in first.rows]
    row = second.rows[1]
    assert (row["invocations"], row["tool_calls"], row["slowest"]) == (2, 0, 2.5)
    assert second.rows[0]["tool_errors"] == 1
    assert browse.turn_place(store, "i1") == ("prod-1", 2) and browse.turn_place(store, "nope") is None


def test_annotations_are_kept_redacted_and_filter_sessions(store):
    import pytest

    from toolpath.errors import ConfigError
    from toolpath.store.annotations import ReviewLabel, annotate, annotations_of

    fill(store)
    annotate(store, "i2", author="Ada", label=ReviewLabel.FAIL, comment="mail jane@example.com")
    annotate(store, "i0", author="Bo", score=0.5)
    assert ids(store, review="fail") == ["prod-2"]
    assert ids(store, review="any") == ["prod-2", "prod-1"]
    assert ids(store, review="pass") == []
    (note,) = annotations_of(store, ["i2"])["i2"]
    assert note.label is ReviewLabel.FAIL and "jane@example.com" not in (note.comment or "")
    with pytest.raises(ConfigError, match="no turn"):
        annotate(store, "nope", author="Ada", label=ReviewLabel.PASS)
    with pytest.raises(ConfigError, match="needs a label"):
        annotate(store, "i1", author="Ada")


def test_search_looks_in_spans_only_when_asked(store):
    from toolpath.store.spanrecord import SpanRecord

    trace = "ab" * 16
    store.write(
        [
            Invocation(invocation_id=f"{trace}-{'cd' * 8}", session_id="spanned", trace_id=trace, agent_name="bot",
                       prompt="hi", started_at=datetime(2026, 5, 2, tzinfo=UTC))
        ],
        [SpanRecord(trace, "cd" * 8, None, "invoke_agent bot", 1, 1, 2, attributes={"app.region": "Eu-West-9"},
                    events=[{"name": "retry", "attributes": {"why": "Quota Hit"}}])],
    )  # fmt: skip
    assert ids(store, text="eu-west-9") == []
    assert ids(store, text="eu-west-9", in_spans=True) == ["spanned"]
    assert ids(store, text="quota hit", in_spans=True) == ["spanned"]  # an event's attribute
