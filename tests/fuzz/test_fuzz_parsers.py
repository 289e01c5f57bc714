"""Fuzzing the parsers that read untrusted input: the OTLP/HTTP protobuf and JSON decoders (directly and through
the receiver, with a real SQLite store) and the dataset and eval-set loaders. No input may raise anything but
the documented error, crash the process, or change what is stored when it is refused. Bounded by example
counts so CI time stays fixed."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import SPANS
from toolpath.collector import otlp
from toolpath.collector.ingestor import Ingestor
from toolpath.datasets import load_rows
from toolpath.errors import DatasetError, ToolpathError
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.store.store import Store

VALID_PB = (SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes()
VALID_JSON = json.loads((SPANS / "otel-genai-langchain.shared.otlp.json").read_text())
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)


def mutated(data: bytes, draw_positions: list[int], draw_bytes: list[int]) -> bytes:
    out = bytearray(data)
    for position, value in zip(draw_positions, draw_bytes, strict=False):
        out[position % len(out)] = value
    return bytes(out)


@FUZZ
@given(st.binary(max_size=2048))
def test_protobuf_decoder_on_random_bytes(body):
    try:
        records = otlp.decode(body, "application/x-protobuf")
    except otlp.OtlpDecodeError:
        return
    assert isinstance(records, list)


@FUZZ
@given(
    st.lists(st.integers(min_value=0), min_size=1, max_size=8), st.lists(st.integers(0, 255), min_size=1, max_size=8)
)
def test_protobuf_decoder_on_mutated_real_exports(positions, values):
    with contextlib.suppress(otlp.OtlpDecodeError):
        otlp.decode(mutated(VALID_PB, positions, values), "application/x-protobuf")


@FUZZ
@given(json_values)
def test_json_decoder_on_arbitrary_json(value):
    with contextlib.suppress(otlp.OtlpDecodeError):
        otlp.decode(json.dumps(value).encode(), "application/json")


@FUZZ
@given(st.sampled_from(["traceId", "spanId", "parentSpanId", "startTimeUnixNano", "attributes", "kind", "status"]),
       json_values)  # fmt: skip
def test_json_decoder_on_real_exports_with_one_field_replaced(field, value):
    body = json.loads(json.dumps(VALID_JSON))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0][field] = value
    with contextlib.suppress(otlp.OtlpDecodeError):
        otlp.decode(json.dumps(body).encode(), "application/json")


@pytest.fixture(scope="module")
def ingestor(tmp_path_factory) -> Ingestor:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}")
    return Ingestor(store)


@FUZZ
@given(st.binary(max_size=1024), st.sampled_from(["application/x-protobuf", "application/json"]))
def test_receiver_refuses_garbage_without_storing_it(ingestor, body, content_type):
    before = ingestor.store.counts()
    headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
    reply = ingestor.handle_http("/v1/traces", headers, lambda n: body[:n])
    assert reply.status in (200, 400)
    if reply.status == 400:
        assert ingestor.store.counts() == before


@FUZZ
@given(st.lists(st.one_of(json_values.map(json.dumps), st.text(max_size=40)), max_size=6))
def test_jsonl_loader(tmp_path, lines):
    path = Path(tmp_path) / "data.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        rows = load_rows(path)
    except DatasetError as exc:
        assert "data.jsonl" in str(exc)
        return
    assert all(isinstance(row, dict) for row in rows)


@FUZZ
@given(st.text(max_size=300))
def test_csv_loader(tmp_path, content):
    path = Path(tmp_path) / "data.csv"
    path.write_text(content, encoding="utf-8")
    try:
        load_rows(path)
    except DatasetError as exc:
        assert "data.csv" in str(exc)


@FUZZ
@given(json_values)
def test_eval_set_loader(tmp_path, value):
    path = Path(tmp_path) / "x.evalset.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    try:
        load_eval_set(path)
    except ToolpathError as exc:
        assert "x.evalset.json" in str(exc)
