"""Each turn's model usage and user, kept as the turn is written and by migration 0011 for turns stored before."""

from __future__ import annotations

from sqlalchemy import select

from tests.helpers.turn_usage_spans import kept, two_turns
from toolpath.model import Invocation
from toolpath.store import schema as t
from toolpath.store import turn_usage
from toolpath.ui.usage_view import USAGE_KEYS


def test_a_turn_keeps_the_usage_of_the_model_calls_below_it_and_its_user(store):
    spans, invocations = two_turns()
    store.write(invocations, spans)
    turns, rows = kept(store)
    # the trace's call outside both turns counts for neither; a token count that is no number counts as none
    assert turns == {"a": (107, 13, "from-resource"), "b": (1000, 0, "u-2")}
    assert rows == {("a", "m1", 0, 100, 10), ("a", "m1", 1, 7, 3), ("b", "", 0, 1000, 0)}
    with store.engine.connect() as conn:
        [reported] = conn.execute(select(t.turn_usage.c.cost).where(t.turn_usage.c.reported == 1)).scalars()
    assert reported == 0.5


def test_a_turn_written_again_with_more_spans_is_counted_again(store):
    spans, invocations = two_turns()
    store.write(invocations[:1], spans[:2])
    assert kept(store)[0] == {"a": (100, 10, "from-resource")}
    store.write(invocations, spans)
    assert kept(store)[0]["a"] == (107, 13, "from-resource")


def test_the_stores_usage_keys_are_the_ones_the_ui_reads():
    assert turn_usage.USAGE_KEYS == USAGE_KEYS


def test_the_backfill_goes_in_batches_over_every_turn(store):
    spans, invocations = two_turns()
    store.write(invocations, spans)
    with store.engine.begin() as conn:
        conn.execute(t.turn_usage.delete())
        conn.execute(t.invocations.update().values(input_tokens=0, output_tokens=0, user_id=None))
        assert turn_usage.backfill(conn, batch=1) == 2
    assert kept(store)[0] == {"a": (107, 13, "from-resource"), "b": (1000, 0, "u-2")}


def test_the_user_filter_and_rows_read_the_kept_user(store):
    from toolpath.store import browse
    from toolpath.store.session_filter import SessionFilter

    spans, invocations = two_turns()
    other = Invocation(invocation_id="no-user", session_id="t", trace_id="cd" * 16)
    store.write([*invocations, other], spans)
    page = browse.session_page(store, SessionFilter(user="u-2"))
    assert [(r["session_id"], r["users"]) for r in page.rows] == [("s", ["from-resource", "u-2"])]
    assert browse.session_page(store, SessionFilter(user="u-3")).rows == []
    assert [r["session_id"] for r in browse.session_page(store, SessionFilter(text="FROM-RES")).rows] == ["s"]


def test_the_tokens_filter_reads_the_session_totals_kept_on_its_turns(store):
    from toolpath.store import browse
    from toolpath.store.session_filter import SessionFilter

    spans, invocations = two_turns()  # session s: 107 + 13 + 1000 = 1,120 tokens
    store.write([*invocations, Invocation(invocation_id="none", session_id="t", trace_id="cd" * 16)], spans)
    assert [r["session_id"] for r in browse.session_page(store, SessionFilter(tokens_above=1119)).rows] == ["s"]
    assert browse.session_page(store, SessionFilter(tokens_above=1120)).rows == []
