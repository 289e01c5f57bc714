"""A turn's usage computed from its spans as they are written gives what the SQL refresh over the stored spans gives:
several models, reported and unreported cost, cost parts, OpenInference token keys, booleans and strings where
numbers go, a user on a child span or on the resource, runs inside runs, and spans that come late or before their
parent; a value each database reads its own way is left to the refresh."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.helpers.turn_usage_spans import two_turns
from toolpath.collector.ingestor import rebuild
from toolpath.collector.reconstruct import is_run_span
from toolpath.model import Invocation, invocation_key
from toolpath.store import schema as t
from toolpath.store import turn_usage
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.store.turn_usage_spans import turn_usages
from toolpath.tracer import semconv as sc

IN, OUT = sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS
OI_IN, OI_OUT = sc.OI_TOKEN_COUNT_PROMPT, sc.OI_TOKEN_COUNT_COMPLETION
TOTAL, COST_IN, COST_OUT = sc.GEN_AI_USAGE_COST_TOTAL, "gen_ai.usage.cost.input", "gen_ai.usage.cost.output"
RESPONSE_MODEL, REQUEST_MODEL = sc.GEN_AI_RESPONSE_MODEL, sc.GEN_AI_REQUEST_MODEL
SQL_REFRESH = turn_usage.refresh


def span(trace: str, n: int, parent: int | None, start: int, resource: dict | None = None, **attributes) -> SpanRecord:
    return SpanRecord(trace_id=trace * 32, span_id=f"{n:016x}", parent_span_id=None if parent is None else f"{parent:016x}",
                      name=f"span {n}", kind=1, start_time=start, end_time=start + 1, attributes=attributes,
                      resource=resource or {})  # fmt: skip


def agent(trace: str, n: int, parent: int | None, start: int, resource: dict | None = None, **attributes) -> SpanRecord:
    return span(trace, n, parent, start, resource, **{"gen_ai.operation.name": "invoke_agent",
                                                      "gen_ai.agent.name": f"agent{n}", **attributes})  # fmt: skip


def tool(trace: str, n: int, parent: int, start: int) -> SpanRecord:
    return span(trace, n, parent, start, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{n}"})


def whole_trace() -> list[SpanRecord]:
    """One request: two turns; the first with every kind of usage value, a run inside it and users on several spans."""
    a = "a"
    return [
        agent(a, 1, None, 10, {"enduser.id": "from-resource"}),
        span(a, 2, 1, 11, **{IN: 100, OUT: 10, RESPONSE_MODEL: "m1", REQUEST_MODEL: "m0"}),
        span(a, 3, 1, 12, **{OI_IN: 7, OI_OUT: 3, RESPONSE_MODEL: None, REQUEST_MODEL: "m2", TOTAL: 0.5}),
        span(a, 4, 1, 13, **{IN: 5, COST_IN: 0.1, COST_OUT: 0.2, REQUEST_MODEL: "m2"}),  # cost as its parts
        span(a, 5, 1, 14, **{IN: True, OI_IN: 4, OUT: "12"}),  # a boolean and a string are no numbers
        span(a, 6, 1, 15, **{COST_OUT: 0.3, RESPONSE_MODEL: "m1"}),  # a cost alone counts
        span(a, 7, 1, 16, **{TOTAL: "1.0", COST_IN: 0.25, OUT: 2.0, RESPONSE_MODEL: "m1"}),
        span(a, 8, 1, 17, **{"llm.model_name": "x", "other": 1}),  # no usage: not counted
        span(a, 9, 1, 5, {"user.id": "resource-of-a-child"}, **{"enduser.id": "earliest-child"}),
        span(a, 10, 1, 30, **{"user.id": "later-child"}),
        tool(a, 11, 1, 18),
        agent(a, 12, 11, 19),  # an agent called as a tool: part of turn 1
        span(a, 13, 12, 20, **{IN: 1000, OUT: 100, RESPONSE_MODEL: "m3", TOTAL: 2}),
        agent(a, 20, None, 40),  # a second turn of the trace: nothing used, no user
        tool(a, 21, 20, 41),
        span(a, 22, None, 50, **{IN: 99999}),  # in the trace, below no turn
    ]


def late_spans() -> list[list[SpanRecord]]:
    """Requests that add to turns stored before: a span after its parent, the same trace sent again with one
    more span, and spans that come before their turn's agent span."""
    b, c = "b", "c"
    first = [agent(b, 1, None, 10, {"user.id": "u" * 300}), span(b, 2, 1, 11, **{IN: 50, REQUEST_MODEL: "m1"})]
    second = [span(b, 3, 2, 12, **{IN: 20, OUT: 2, TOTAL: 0.01, RESPONSE_MODEL: "m3"})]
    again = [*first, *second, span(b, 4, 1, 13, **{OI_IN: 1, OI_OUT: 1, REQUEST_MODEL: "m1"})]
    orphans = [span(c, 2, 1, 11, **{IN: 3, OUT: 4, REQUEST_MODEL: "m9"}), span(c, 3, 2, 12, **{COST_IN: 1})]
    parent = [agent(c, 1, None, 10, **{"user.id": "c-user"})]
    return [first, second, again, orphans, parent]


def stored(store: Store) -> tuple[dict, dict]:
    inv, used = t.invocations, t.turn_usage
    with store.engine.connect() as conn:
        turns = {r[0]: tuple(r[1:]) for r in conn.execute(
            select(inv.c.invocation_id, inv.c.input_tokens, inv.c.output_tokens, inv.c.user_id))}  # fmt: skip
        rows = {(r.invocation_id, r.model, r.reported): (r.calls, r.input_tokens, r.output_tokens, r.cost)
                for r in conn.execute(select(used))}  # fmt: skip
    return turns, rows


def refreshed(store: Store) -> tuple[dict, dict]:
    """What the SQL refresh over the stored spans makes of every stored turn."""
    with store.engine.begin() as conn:
        ids = list(conn.execute(select(t.invocations.c.invocation_id)).scalars())
        SQL_REFRESH(conn, ids)  # not the write path's: the fixture below counts those
    return stored(store)


def assert_same(kept: tuple[dict, dict], expected: tuple[dict, dict]) -> None:
    assert kept[0] == expected[0]
    assert kept[1].keys() == expected[1].keys()
    for key, (calls, tokens_in, tokens_out, cost) in expected[1].items():
        assert kept[1][key] == (calls, tokens_in, tokens_out, cost if cost is None else pytest.approx(cost, rel=1e-12))


@pytest.fixture
def refreshes(monkeypatch) -> list[str]:
    """The turns the write path left to the SQL refresh."""
    called: list[str] = []

    def refresh(conn, invocation_ids, *args) -> None:
        called.extend(invocation_ids)
        SQL_REFRESH(conn, invocation_ids, *args)

    monkeypatch.setattr(turn_usage, "refresh", refresh)
    return called


def test_a_whole_trace_ingested_keeps_what_the_refresh_computes(store, refreshes):
    assert store.ingest(whole_trace(), rebuild, is_run_span) == 2
    kept = stored(store)
    turn = invocation_key("a" * 32, f"{1:016x}")
    assert kept[0][turn] == (1000 + 100 + 7 + 5 + 4, 100 + 10 + 3 + 2, "earliest-child")
    assert kept[0][invocation_key("a" * 32, f"{20:016x}")] == (0, 0, None)
    assert refreshes == []  # every turn's usage computed from its spans
    assert_same(kept, refreshed(store))
    assert {key[1:]: value[:3] for key, value in kept[1].items()} == {
        ("m1", 0): (1, 100, 10), ("m1", 1): (2, 0, 2), ("m2", 1): (2, 12, 3), ("", 0): (1, 4, 0), ("m3", 1): (1, 1000, 100)
    }  # fmt: skip


def test_spans_that_come_late_or_before_their_parent_keep_what_the_refresh_computes(store, refreshes):
    for request in late_spans():
        store.ingest(request, rebuild, is_run_span)
        assert_same(stored(store), refreshed(store))
    assert refreshes == []
    kept = stored(store)[0]
    assert kept[invocation_key("b" * 32, f"{1:016x}")] == (71, 3, "u" * 256)
    assert kept[invocation_key("c" * 32, f"{1:016x}")] == (3, 4, "c-user")


def test_turns_written_with_their_spans_keep_what_the_refresh_computes(store, refreshes):
    spans, invocations = two_turns()
    store.write(invocations, spans)
    assert refreshes == []
    assert_same(stored(store), refreshed(store))
    store.write(invocations, spans)  # the trace is stored now: read back from the spans
    assert sorted(refreshes) == sorted(i.invocation_id for i in invocations)


@pytest.mark.parametrize(
    "attributes",
    [{IN: 1.5}, {IN: 2**60}, {RESPONSE_MODEL: 5, IN: 1}, {"user.id": 7}, {RESPONSE_MODEL: {"a": [1, True]}, OUT: 1}],
    ids=["fraction", "past 2**53", "number model", "number user", "object model"],
)
def test_a_value_read_differently_by_each_database_is_left_to_the_refresh(store, refreshes, attributes):
    spans = [agent("d", 1, None, 1), span("d", 2, 1, 2, **attributes), span("d", 3, 1, 3, **{IN: 1})]
    store.ingest(spans, rebuild, is_run_span)
    assert refreshes == [invocation_key("d" * 32, f"{1:016x}")]
    assert turn_usages(spans, [Invocation(invocation_id=refreshes[0], session_id="s", trace_id="d" * 32)]) == {}


def test_a_whole_number_written_as_a_float_counts_as_tokens():
    spans = [agent("e", 1, None, 1), span("e", 2, 1, 2, **{IN: 2.0, OUT: 3, REQUEST_MODEL: "m"})]
    turn = Invocation(invocation_id=invocation_key("e" * 32, f"{1:016x}"), session_id="s", trace_id="e" * 32)
    [usage] = turn_usages(spans, [turn]).values()
    assert (usage.rows, usage.input_tokens, usage.output_tokens, usage.user) == ((("m", 0, 1, 2, 3, None),), 2, 3, None)
