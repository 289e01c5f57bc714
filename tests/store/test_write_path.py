"""The write path's shortcuts give what the plain way gives: JSON text as ``json.dumps`` writes it, each span's
outermost run as a walk of its own parents finds it, rows encoded ahead only for the invocations encoded."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from toolpath.model import Invocation, ToolCall
from toolpath.store import bulk
from toolpath.store.ingest import _outermost_run, _outermost_runs
from toolpath.store.spanrecord import SpanRecord

VALUES = [
    {},
    [],
    {"a": 1, "b": [1, 2.5, None, True, False], "c": {"d": 'é ✓ \n "q" \u2028'}},
    [{"x": []}, {}],
    "text",
    "",
    0,
    -3,
    2**70,
    1.5,
    None,
    True,
    {"1": 1, "key with spaces": "v"},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_dumps_writes_what_reads_back_as_json_dumps_would(value):
    assert json.loads(bulk._dumps(value)) == json.loads(json.dumps(value))


def test_non_finite_numbers_are_cleaned_before_they_reach_the_store():
    from toolpath.collector.clean import clean_value

    value, changed = clean_value({"x": float("nan"), "y": [float("-inf")]})
    assert changed and json.loads(bulk._dumps(value)) == {"x": "NaN", "y": ["-Infinity"]}


def test_dumps_fails_as_json_dumps_fails():
    with pytest.raises(TypeError, match="not JSON serializable"):
        bulk._dumps({"when": datetime(2024, 1, 1, tzinfo=UTC)})
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        bulk._dumps(cycle)
    assert json.loads(bulk._dumps({"after": "a failure"})) == {"after": "a failure"}  # nothing left behind


def _span(span_id: str, parent: str | None, *, run: bool, resource: dict | None = None) -> SpanRecord:
    return SpanRecord(
        trace_id="t",
        span_id=span_id,
        parent_span_id=parent,
        name="invoke_agent a" if run else "execute_tool x",
        kind=1,
        start_time=1,
        end_time=2,
        status_code=0,
        status_message=None,
        attributes={},
        events=[],
        resource=resource if resource is not None else {},
        scope=None,
    )


def _is_run(span: SpanRecord) -> bool:
    return span.name.startswith("invoke_agent")


@pytest.mark.parametrize("seed", range(300))
def test_outermost_runs_are_each_spans_own_walk(seed):
    """Random forests of spans with missing parents, runs at any depth, and cycles (with and without a run)."""
    rng = random.Random(seed)
    ids = [f"s{i}" for i in range(rng.randint(1, 12))]
    parents = {i: rng.choice([None, "gone", *ids]) for i in ids}
    spans = [_span(i, parents[i], run=rng.random() < 0.4) for i in ids]
    known = {(s.trace_id, s.span_id): s for s in spans}
    order = rng.sample(spans, len(spans))
    asked = order[: rng.randint(1, len(order))]
    expected = {(s.trace_id, s.span_id): _outermost_run(s, known, _is_run) for s in asked}
    assert _outermost_runs(asked, known, _is_run) == expected


def test_span_rows_encode_a_shared_resource_once_and_each_resource_right():
    shared, other = {"service.name": "a"}, {"service.name": "b"}
    spans = [
        _span("1", None, run=True, resource=shared),
        _span("2", "1", run=False, resource=other),
        _span("3", "1", run=False, resource=shared),
    ]
    spans[1].events.append({"name": "e", "attributes": {"k": 1}})
    rows = bulk.span_rows(spans)
    assert [json.loads(row[11]) for row in rows] == [shared, other, shared]
    assert [json.loads(row[10]) for row in rows] == [[], [{"name": "e", "attributes": {"k": 1}}], []]
    assert rows[0][11] is rows[2][11]


def _invocation(calls: int) -> Invocation:
    return Invocation(
        invocation_id="t-1",
        session_id="s",
        trace_id="t",
        prompt="p",
        response="r",
        tool_calls=[ToolCall(name=f"tool_{i}", args={"i": i}, result={"ok": i}) for i in range(calls)],
    )


def test_rows_encoded_ahead_serve_only_the_invocation_encoded():
    inv = _invocation(3)
    encoded = bulk.EncodedInvocations([inv])
    row, calls = encoded.rows(inv)
    assert row == bulk._invocation_row(inv) and calls == bulk._call_rows(inv)
    capped = inv.model_copy(update={"tool_calls": inv.tool_calls[:1], "attributes": {"capped": 2}})
    row, calls = encoded.rows(capped)  # another object (capped under the lock): encoded afresh
    assert json.loads(row[11]) == {"capped": 2}
    assert [c[2] for c in calls] == ["tool_0"]


ARRAY_TEXTS = [
    'a "quoted" word',
    "back\\slash \\\\ two",
    "{braces}, commas",
    "NULL",
    "",
    " spaced ",
    "é ✓ \n\t",
    "plain",
]


def test_array_literals_read_back_as_the_values_on_postgresql(postgres_url):
    from sqlalchemy import create_engine

    engine = create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            for values, kind in [
                (ARRAY_TEXTS, "text"),
                (["plain", "ids", "only"], "text"),  # the unescaped path
                ([None, "x", None], "text"),
                ([], "text"),
                ([0, -3, 2**62, None], "bigint"),
                ([1.5, 1e-05, -2.25e300, float("nan"), float("inf"), None], "double precision"),
                ([True, False], "integer"),
            ]:
                got = conn.exec_driver_sql(f"SELECT CAST(%s AS {kind}[])", (bulk.pg_array(values),)).scalar()
                want = [int(v) if isinstance(v, bool) else v for v in values]
                assert repr(got) == repr(want), kind  # repr: nan equals nan
    finally:
        engine.dispose()


def test_texts_that_need_escaping_go_through_the_write_path_unchanged(store):
    texts = iter(ARRAY_TEXTS)
    inv = _invocation(2).model_copy(
        update={
            "prompt": next(texts),
            "response": next(texts),
            "agent_name": next(texts),
            "session_id": next(texts),
            "error": next(texts),
            "attributes": {"k": next(texts)},
        }
    )
    store.write([inv])
    got = store.get_invocation(inv.invocation_id)
    assert got is not None
    assert (got.prompt, got.response, got.agent_name, got.session_id, got.error, got.attributes) == (
        inv.prompt, inv.response, inv.agent_name, inv.session_id, inv.error, inv.attributes)  # fmt: skip
