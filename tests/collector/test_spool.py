"""``toolpath collect --spool``: exports answered once their prepared spans are synced to the spool, written to the
store from there, kept through a store outage and a kill -9, bounded; and the spool itself."""

from __future__ import annotations

import math
import signal
import sqlite3
import time

import pytest

from tests.helpers import SPANS
from tests.helpers.cli import run_cli
from tests.helpers.collector import TOKEN, Collector, http_get
from toolpath.collector import otlp
from toolpath.collector.ingestor import Ingestor
from toolpath.redact import Redactor
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.spool import Spool, SpoolFull, TooBigToSpool
from toolpath.store.store import Store

BODY = SPANS / "otel-genai-langchain.shared.otlp.pb"
"""13 spans: two invocations of session ``home-session-0001``."""


def _record(span_id: str, **attributes: object) -> SpanRecord:
    return SpanRecord("ab" * 16, span_id, None, "execute_tool t", 1, 1, 2, attributes=dict(attributes))


def _wait_for(predicate, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _spooled_bytes(tmp_path) -> int:
    """What :data:`BODY`'s spans take in a spool."""
    probe = Spool(tmp_path / "probe")
    records = otlp.decode(BODY.read_bytes(), "application/x-protobuf")
    Ingestor(Store("sqlite://"), spool=probe, redactor=Redactor.build()).store_records(records)
    size = probe.pending_bytes
    probe.close()
    return size


# --- the spool ------------------------------------------------------------------------------------------------


def test_records_come_back_exactly_in_arrival_order(tmp_path):
    spool = Spool(tmp_path / "spool")
    odd = _record("01" * 8, nan=math.nan, big=2**70, raw=b"\x00\xff", nested={"a": [1, 2.5, None, True]})
    spool.put([odd])
    spool.put([_record("02" * 8), _record("03" * 8)])
    assert (spool.pending_spans, spool.arrived.is_set()) == (3, True)
    batch = spool.take(10)
    assert batch is not None and [r.span_id for r in batch.records] == ["01" * 8, "02" * 8, "03" * 8]
    back = batch.records[0]
    assert math.isnan(back.attributes["nan"]) and back.attributes["big"] == 2**70
    assert back.attributes["raw"] == b"\x00\xff" and back.attributes["nested"] == {"a": [1, 2.5, None, True]}
    assert spool.take(10) is not None  # taken is not removed: only done() removes
    spool.done(batch)
    assert (spool.take(10), spool.pending_spans, spool.pending_bytes) == (None, 0, 0)


def test_take_stops_at_max_spans_but_always_takes_one_batch(tmp_path):
    spool = Spool(tmp_path / "spool")
    for n in range(3):
        spool.put([_record(f"{n:016x}"), _record(f"{n + 10:016x}")])
    first = spool.take(3)
    assert first is not None and len(first.records) == 2  # a second batch would pass 3
    spool.done(first)
    assert len(spool.take(1).records) == 2  # one batch over the limit is still taken


def test_full_spool_refuses_and_a_batch_over_the_bound_alone_is_never_spooled(tmp_path):
    probe = Spool(tmp_path / "probe")
    probe.put([_record("01" * 8, text="x" * 100)])
    size = probe.pending_bytes
    probe.close()
    spool = Spool(tmp_path / "spool", max_bytes=size + 10)
    spool.put([_record("01" * 8, text="x" * 100)])
    with pytest.raises(SpoolFull, match=f"its bound is {size + 10:,}"):
        spool.put([_record("02" * 8)])
    assert spool.pending_spans == 1
    spool.done(spool.take(10))
    with pytest.raises(TooBigToSpool, match=f"over the spool's bound of {size + 10:,}"):
        spool.put([_record("03" * 8, text="x" * 200)])  # empty, and still refused: it would never fit
    assert (spool.pending_spans, spool.pending_bytes, spool.take(10)) == (0, 0, None)
    spool.put([_record("04" * 8)])


def test_each_process_claims_its_own_file_and_left_files_are_drained_then_removed(tmp_path):
    folder = tmp_path / "spool"
    first, second = Spool(folder), Spool(folder)
    first.put([_record("01" * 8)])
    second.put([_record("02" * 8)])
    assert sorted(p.name for p in folder.glob("*.sqlite")) == ["spool-0.sqlite", "spool-1.sqlite"]
    first.close()
    second.close()
    heir = Spool(folder)  # claims both (nobody holds them), adds to the first
    assert heir.pending_spans == 2
    taken = []
    while (batch := heir.take(100)) is not None:
        taken += [r.span_id for r in batch.records]
        heir.done(batch)
    assert taken == ["02" * 8, "01" * 8]  # what another left first: the file it adds to may not empty soon
    assert sorted(p.name for p in folder.glob("*.sqlite")) == ["spool-0.sqlite"]  # the other one drained, removed


def test_a_batch_that_cannot_be_read_back_is_left_out_and_counted(tmp_path):
    spool = Spool(tmp_path / "spool")
    spool.put([_record("01" * 8)])
    with sqlite3.connect(tmp_path / "spool" / "spool-0.sqlite") as conn:
        conn.execute("INSERT INTO batches (spans, body) VALUES (4, x'00ff00')")
    spool.close()
    spool = Spool(tmp_path / "spool")
    batch = spool.take(100)
    assert batch is not None and [r.span_id for r in batch.records] == ["01" * 8] and batch.unreadable == 4


# --- the service ----------------------------------------------------------------------------------------------


@pytest.fixture(params=["1", "2"], ids=["one-process", "two-workers"])
def workers(request):
    return request.param


def test_spooled_exports_reach_the_store(tmp_path, workers):
    collector = Collector(tmp_path, None, "--workers", workers, "--spool", str(tmp_path / "spool")).start()
    try:
        assert collector.post(BODY.read_bytes())[0] == 200
        store = collector.store()
        _wait_for(lambda: store.counts()["invocations"] == 2)
        assert [len(i.tool_calls) for i in store.get_session("home-session-0001").invocations] == [2, 3]
        assert store.counts()["spans"] == 13
        _wait_for(lambda: b"toolpath_spool_spans 0.0" in http_get(f"{collector.url}/metrics", TOKEN)[1])
    finally:
        collector.stop()
    assert "13 span(s) stored" in collector.process.communicate()[0]


def test_store_outage_then_kill_9_loses_nothing_answered(tmp_path, workers):
    """The store is locked: exports are still answered (spooled). The collector is killed; the next one, given the
    same spool, writes them once the store is back."""
    spool = str(tmp_path / "spool")
    collector = Collector(tmp_path, None, "--workers", workers, "--spool", spool).start()
    blocker = sqlite3.connect(collector.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # no one else writes, nor reads, the store
    try:
        assert collector.post(BODY.read_bytes())[0] == 200
        metrics = http_get(f"{collector.url}/metrics", TOKEN)[1].decode()
        assert "toolpath_spool_spans 13.0" in metrics
        collector.stop(signal.SIGKILL)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    store = collector.store()
    assert store.counts()["spans"] == 0  # nothing reached the store: it was all in the spool
    restarted = Collector(tmp_path, None, "--workers", workers, "--spool", spool).start()
    try:
        _wait_for(lambda: store.counts()["invocations"] == 2)
        assert store.counts()["spans"] == 13
        assert [len(i.tool_calls) for i in store.get_session("home-session-0001").invocations] == [2, 3]
    finally:
        restarted.stop()


def test_a_full_spool_answers_503_with_retry_after(tmp_path):
    bound = 3 * _spooled_bytes(tmp_path) // 2  # room for one export, not two
    collector = Collector(
        tmp_path, None, "--workers", "1", "--spool", str(tmp_path / "spool"), "--spool-max-bytes", str(bound)
    ).start()
    try:
        blocker = sqlite3.connect(collector.db, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")  # the drain cannot empty the spool
        try:
            assert collector.post(BODY.read_bytes())[0] == 200
            status, body, headers = collector.post(BODY.read_bytes())
            assert status == 503 and "Retry-After" in headers
            assert b"the spool holds" in body and f"its bound is {bound:,}".encode() in body
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        store = collector.store()
        _wait_for(lambda: store.counts()["invocations"] == 2)
    finally:
        collector.stop()  # a failed assertion leaves no collector running


def test_sigterm_writes_what_waits_before_it_stops(tmp_path):
    collector = Collector(tmp_path, None, "--workers", "1", "--spool", str(tmp_path / "spool")).start()
    try:
        blocker = sqlite3.connect(collector.db, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        assert collector.post(BODY.read_bytes())[0] == 200
        collector.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # stopping, the store still locked: the drain keeps trying
        blocker.execute("ROLLBACK")
        blocker.close()
        out, _ = collector.process.communicate(timeout=60)
    finally:
        collector.stop()  # a failed step leaves no collector running
    assert "13 span(s) stored" in out and "left in the spool" not in out
    assert collector.store().counts()["invocations"] == 2


def test_spooled_spans_are_redacted_on_disk(tmp_path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    secret = "sk-live-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    request = ExportTraceServiceRequest()
    request.ParseFromString(BODY.read_bytes())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.add(key="api_key", value={"string_value": secret})
    collector = Collector(tmp_path, None, "--workers", "1", "--spool", str(tmp_path / "spool")).start()
    blocker = sqlite3.connect(collector.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # kept in the spool
    try:
        assert collector.post(request.SerializeToString())[0] == 200
        on_disk = b"".join(p.read_bytes() for p in (tmp_path / "spool").iterdir())
        assert b"home-session-0001" in on_disk and secret.encode() not in on_disk
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        collector.stop()


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["--spool-max-bytes", "100"], "error: --spool-max-bytes needs --spool"),
        (["--spool", "notes.txt"], "error: --spool notes.txt: not a folder"),
        (["--spool", "no/such/spool"], "error: --spool no/such/spool: its parent folder no/such does not exist"),
    ],
    ids=["max-bytes-alone", "a-file", "no-parent"],
)
def test_bad_spool_options_are_one_error_line_and_create_nothing(tmp_path, args, first):
    (tmp_path / "notes.txt").write_text("notes\n")
    result = run_cli(tmp_path, "collect", "--store", "c.db", "--http-port", "0", "--grpc-port", "0", *args)
    assert result.returncode == 2 and result.stderr.splitlines() == [first]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_spool_comes_from_the_config_file(tmp_path):
    (tmp_path / "collector.toml").write_text("spool_max_bytes = 5\n")
    result = run_cli(tmp_path, "collect", "--config", "collector.toml", "--store", "c.db", "--http-port", "0")
    assert result.returncode == 2 and result.stderr.splitlines() == ["error: --spool-max-bytes needs --spool"]
