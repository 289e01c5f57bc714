"""Each turn's model usage and user, kept as the turn is written and by migration 0011 for turns stored before."""

from __future__ import annotations

from sqlalchemy import select

from toolpath.model import Invocation, invocation_key
from toolpath.store import schema as t
from toolpath.store import turn_usage
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc
from toolpath.ui.usage_view import USAGE_KEYS

TRACE = "ab" * 16


def _span(span_id: str, parent: str | None, start: int, resource: dict | None = None, **attributes) -> SpanRecord:
    return SpanRecord(trace_id=TRACE, span_id=span_id * 16 if len(span_id) == 1 else span_id, parent_span_id=parent,
                      name="s", kind=1, start_time=start, end_time=start + 1, attributes=attributes,
                      resource=resource or {})  # fmt: skip


def two_turns() -> tuple[list[SpanRecord], list[Invocation]]:
    """One trace with two agent spans (two turns), each with model calls below it, and one model call of the
    trace outside both."""
    a, b = "a" * 16, "b" * 16
    spans = [
        _span("a", None, 1, {"service.name": "bot", "enduser.id": "from-resource"}),
        _span(
            "1",
            a,
            2,
            **{sc.GEN_AI_USAGE_INPUT_TOKENS: 100, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10, sc.GEN_AI_REQUEST_MODEL: "m1"},
        ),
        _span(
            "2",
            "1" * 16,
            3,
            **{
                sc.OI_TOKEN_COUNT_PROMPT: 7,
                sc.OI_TOKEN_COUNT_COMPLETION: 3,
                sc.GEN_AI_RESPONSE_MODEL: "m1",
                sc.GEN_AI_USAGE_COST_TOTAL: 0.5,
            },
        ),
        _span("b", None, 10, **{"user.id": "u-2"}),
        _span("3", b, 11, **{sc.GEN_AI_USAGE_INPUT_TOKENS: 1000, sc.GEN_AI_USAGE_OUTPUT_TOKENS: "many"}),
        _span("4", None, 20, **{sc.GEN_AI_USAGE_INPUT_TOKENS: 99999}),  # no turn's
    ]
    invocations = [Invocation(invocation_id=invocation_key(TRACE, span), session_id="s", trace_id=TRACE)
                   for span in (a, b)]  # fmt: skip
    return spans, invocations


def kept(store: Store) -> tuple[dict[str, tuple[int, int, str | None]], set[tuple[str, str, int, int, int]]]:
    inv, used = t.invocations, t.turn_usage
    with store.engine.connect() as conn:
        turns = {r.invocation_id[-1]: (r.input_tokens, r.output_tokens, r.user_id) for r in conn.execute(
            select(inv.c.invocation_id, inv.c.input_tokens, inv.c.output_tokens, inv.c.user_id))}  # fmt: skip
        rows = {(r.invocation_id[-1], r.model, r.reported, r.input_tokens, r.output_tokens) for r in conn.execute(
            select(used))}  # fmt: skip
    return turns, rows


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
