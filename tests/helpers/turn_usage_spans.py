"""One trace of two turns with model calls below each (and one outside both), written to a store, and what the
store then keeps of each turn's usage: what the turn-usage tests and the migration's backfill test share."""

from __future__ import annotations

from sqlalchemy import select

from toolpath.model import Invocation, invocation_key
from toolpath.store import schema as t
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc

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


def store_at_0010(url: str, *, unanalysed: bool = False) -> None:
    """Make the store at ``url`` at revision 0010 and write :func:`two_turns` as it held them (no usage columns);
    ``unanalysed`` (PostgreSQL): autovacuum kept from analysing its tables, as after a bulk load."""
    from sqlalchemy import text

    store = Store(url, create=False)
    store.upgrade("0010")
    spans, invocations = two_turns()
    with store.engine.begin() as conn:
        if unanalysed:
            for table in ("spans", "invocations"):
                conn.execute(text(f"ALTER TABLE {table} SET (autovacuum_enabled = false)"))
        conn.execute(t.spans.insert(), [s.to_row() for s in spans])
        conn.execute(text("INSERT INTO sessions VALUES ('s', NULL, 0, 0)"))
        for inv in invocations:
            conn.execute(text(
                "INSERT INTO invocations (invocation_id, session_id, trace_id, intermediate_responses, failure, "
                "started_at, attributes) VALUES (:id, 's', :trace, '[]', 0, 0, '{}')"
            ), {"id": inv.invocation_id, "trace": TRACE})  # fmt: skip
    store.close()
