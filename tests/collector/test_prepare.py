"""The collector's span preparation: its fast path leaves a span exactly as cleaning, redaction and clipping one by
one would, on every span the recorded instrumentations emit and on spans built to trip each rule in one value
among many plain ones (the joined tests must never let one through)."""

from __future__ import annotations

import copy
import math

import pytest

from tests.helpers import SPANS
from toolpath.collector.clean import MAX_TIME, clean_span
from toolpath.collector.limits import Limits
from toolpath.collector.otlp import decode
from toolpath.collector.prepare import SpanPreparer
from toolpath.redact import Redactor
from toolpath.store.spanrecord import SpanRecord

KEY = b"k" * 32
TRIPS = {  # attribute key -> a value some rule must change (or the key itself is the trip)
    "email": "write to jane.doe@example.com today",
    "api_key_text": "key sk-abcdefghijklmnopqrstuvwxyz012345",
    "bearer_mixed_case": "Authorization: BeArEr abcdefghijklmnop",
    "password_long_s": "paſſword=hunter22",
    "fullwidth_card": "card ４１１１１１１１１１１１１１１１ ok",
    "card": "4111 1111 1111 1111",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4eXoifQ.c2lnbmF0dXJlMTIz",
    "url_password": "postgresql://me:s3cret@db/x",
    "json_secret_key": '{"password": "hunter2", "q": 1}',
    "nul": "a\x00b",
    "surrogate": "a\ud800b",
}


def plain_span(n: int, **attributes: object) -> SpanRecord:
    return SpanRecord(
        trace_id=f"{n:032x}",
        span_id=f"{n + 1:016x}",
        parent_span_id=f"{n:016x}",
        name=f"execute_tool tool_{n}",
        kind=1,
        start_time=1_700_000_000_000_000_000 + n,
        end_time=1_700_000_000_000_000_100 + n,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": f"tool_{n}",
            "gen_ai.tool.call.arguments": '{"city": "Paris", "days": 3}',
            "gen_ai.usage.input_tokens": 12,
            "toolpath.flag": True,
            "ratio": 0.5,
            "gen_ai.response.finish_reasons": ["stop"],
            **attributes,
        },
        resource={"service.name": "agent"},
        scope="toolpath",
    )


def slow(records: list[SpanRecord], limits: Limits) -> list[SpanRecord]:
    """Cleaning, redaction and clipping one span at a time: what the fast path must equal."""
    redactor = Redactor(pseudonym_key=KEY)
    out = []
    for record in records:
        clean_span(record)
        out.append(limits.clip(redactor.span(record)))
    return out


def fast(records: list[SpanRecord], limits: Limits) -> tuple[list[SpanRecord], int]:
    preparer = SpanPreparer(Redactor(pseudonym_key=KEY), limits)
    return preparer.prepare(records), preparer.fast


def assert_same(records: list[SpanRecord], *, max_attribute_length: int | None = 64) -> int:
    expected = slow(copy.deepcopy(records), Limits(max_attribute_length=max_attribute_length))
    got, taken = fast(copy.deepcopy(records), Limits(max_attribute_length=max_attribute_length))
    assert [r.to_row() for r in got] == [r.to_row() for r in expected]
    return taken


def test_plain_spans_take_the_fast_path_unchanged() -> None:
    records = [plain_span(n) for n in range(50)]
    assert assert_same(records) == 50


@pytest.mark.parametrize("key", sorted(TRIPS))
def test_one_value_a_rule_changes_is_prepared_fully_and_its_neighbours_stay_fast(key: str) -> None:
    records = [plain_span(n) for n in range(20)]
    records[7] = plain_span(7, **{key: TRIPS[key]})
    taken = assert_same(records)
    assert taken == 19
    prepared, _ = fast(copy.deepcopy(records), Limits(max_attribute_length=64))
    assert prepared[7].attributes[key] != TRIPS[key]  # the rule did fire


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r: r.attributes.update({"api_key": "abc"}), id="secret-key"),
        pytest.param(lambda r: r.attributes.update({"bad\x00key": "x"}), id="nul-in-key"),
        pytest.param(lambda r: r.attributes.update({"n": 4111111111111111}), id="card-as-number"),
        pytest.param(lambda r: r.attributes.update({"x": math.nan}), id="nan"),
        pytest.param(lambda r: r.attributes.update({"x": ["ok", "mail me: a.b@example.com"]}), id="list-email"),
        pytest.param(lambda r: r.attributes.update({"x": {"nested": "a@example.com"}}), id="dict-value"),
        pytest.param(lambda r: r.attributes.update({"long": "y" * 100}), id="over-length"),
        pytest.param(lambda r: setattr(r, "parent_span_id", "xyz"), id="bad-parent"),
        pytest.param(lambda r: setattr(r, "end_time", MAX_TIME + 1), id="time-past-limit"),
        pytest.param(lambda r: setattr(r, "status_message", "token ghp_" + "a" * 36), id="status-token"),
        pytest.param(lambda r: setattr(r, "scope", "s" * 300), id="long-scope"),
        pytest.param(lambda r: setattr(r, "name", "call jane@example.com"), id="name-email"),
        pytest.param(lambda r: setattr(r, "events", [{"name": "e", "attributes": {"password": "p"}}]), id="event"),
        pytest.param(lambda r: setattr(r, "resource", {"owner": "jane@example.com"}), id="resource-email"),
        pytest.param(lambda r: r.attributes.update({"session.id": "chat-jane@example.com"}), id="identifier"),
    ],
)
def test_whatever_a_step_would_change_is_not_taken_fast(change: object) -> None:
    records = [plain_span(n) for n in range(10)]
    change(records[4])  # type: ignore[operator]
    assert assert_same(records) == 9


def test_a_custom_pattern_takes_the_full_path() -> None:
    records = [plain_span(n, note="order ZX-9921") for n in range(5)]
    redactor = Redactor.build(patterns={"order": r"\bZX-\d+\b"})
    preparer = SpanPreparer(redactor, Limits())
    prepared = preparer.prepare(copy.deepcopy(records))
    assert preparer.fast == 0
    assert all(r.attributes["note"] == "order [REDACTED]" for r in prepared)


@pytest.mark.parametrize("path", sorted(SPANS.glob("*.otlp.pb")), ids=lambda p: p.name.split(".otlp")[0])
def test_every_recorded_instrumentations_spans_prepare_as_one_by_one(path: object) -> None:
    records = decode(path.read_bytes(), "application/x-protobuf")  # type: ignore[attr-defined]
    assert_same(records, max_attribute_length=200)


@pytest.mark.parametrize("field", ["name", "scope"])
@pytest.mark.parametrize("at", [-20, -4, 0, 3])
def test_a_secret_across_the_columns_cut_is_redacted_before_it_is_cut(field, at):
    """Names and scopes are shortened to their column only once redacted: a token straddling the cut (or glued
    to the word before it) leaves no part of itself in what is stored."""
    limit = 1024 if field == "name" else 256
    token = "ghp_" + "Q" * 36
    record = plain_span(7)
    setattr(record, field, "n" * (limit + at - 2) + token + " tail")
    [ready] = SpanPreparer(Redactor(pseudonym_key=KEY), Limits()).prepare([record])
    value = getattr(ready, field)
    assert len(value) <= limit
    assert "ghp" not in value and "QQQQ" not in value
    if at >= 0:  # still over the column once redacted: shortened, and marked so
        assert field in ready.attributes["toolpath.cleaned"]
