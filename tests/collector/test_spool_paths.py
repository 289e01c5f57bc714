"""``toolpath collect --spool`` on every path an export takes: a batch written again after a crash, the drain
through spool errors, the spool's refusals as replies, gRPC traces and GenAI events from the real exporters,
online scoring of spooled spans, and PostgreSQL through an outage."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from tests.helpers import SPANS
from tests.helpers.builders import otlp_json
from tests.helpers.collector import TOKEN, Collector, free_port, http_get, post_traces, serving
from tests.helpers.pgserver import postgres_server
from toolpath.collector import otlp, spool_drain
from toolpath.collector.health import readiness
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.otlp_replies import LeftOut
from toolpath.collector.spool_drain import SpoolDrain
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.redact import Redactor
from toolpath.store import schema as t
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.spool import Spool
from toolpath.store.store import Store

BODY = SPANS / "otel-genai-langchain.shared.otlp.pb"
"""13 spans: two invocations of session ``home-session-0001``."""
ONLINE = {"metrics": ["tool_call_count"], "thresholds": {"tool_call_count": 2}, "poll_seconds": 0.05}


def _wait_for(predicate, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _records() -> list[SpanRecord]:
    return otlp.decode(BODY.read_bytes(), "application/x-protobuf")


def _genai_event_logs() -> bytes:
    """An OTLP logs export of one GenAI event, under a span of :data:`BODY`."""
    record = _records()[0]
    request = ExportLogsServiceRequest()
    event = request.resource_logs.add().scope_logs.add().log_records.add(event_name="gen_ai.user.message")
    event.trace_id, event.span_id = bytes.fromhex(record.trace_id), bytes.fromhex(record.span_id)
    event.body.string_value = "hi " * 4000  # more than the page a full file has left
    return request.SerializeToString()


def _what_is_stored(store: Store) -> tuple:
    with store.engine.connect() as conn:
        jobs = sorted((j.invocation_id, j.status) for j in conn.execute(t.eval_jobs.select()))
        results = sorted((r.invocation_id, r.metric) for r in conn.execute(t.online_results.select()))
    session = store.get_session("home-session-0001")
    calls = [[(c.name, c.args, c.result) for c in i.tool_calls] for i in session.invocations]
    counts = {table: n for table, n in store.counts().items() if table != "store_secrets"}  # made when first used
    return counts, jobs, results, calls


def _stored_once(tmp_path) -> tuple:
    store = Store(f"sqlite:///{tmp_path / 'once.db'}")
    online = OnlineEvaluator(store, ONLINE).start()
    Ingestor(store).store_records(_records())
    assert online.drain(30)
    online.stop()
    stored = _what_is_stored(store)
    store.close()
    return stored


def test_a_batch_written_again_after_a_crash_stores_what_once_does(tmp_path, store):
    """The drain wrote a batch and the process died before removing it from the spool: the next start writes it
    again. Spans, invocations, sessions, online jobs and scores are those of one write, on either store."""
    online = OnlineEvaluator(store, ONLINE).start()
    spool = Spool(tmp_path / "spool")
    ingestor = Ingestor(store, spool=spool)
    assert ingestor.store_records(_records()) == LeftOut() and store.counts()["spans"] == 0  # spooled, not stored
    batch = spool.take(10_000)
    assert batch is not None
    ingestor.write_prepared(batch.records)  # written; the crash comes before done()
    assert online.drain(30)  # and it was scored before the crash
    spool.close()
    heir = Spool(tmp_path / "spool")
    assert heir.pending_spans == 13
    drain = SpoolDrain(Ingestor(store, spool=heir), heir).start()
    _wait_for(lambda: heir.pending_spans == 0)
    assert drain.stop(5) == 0
    assert online.drain(30)
    online.stop()
    assert _what_is_stored(store) == _stored_once(tmp_path)


def test_a_value_the_spool_cannot_hold_is_written_to_the_store_at_once(tmp_path):
    class Label(str):  # what no decoder makes, and marshal refuses
        pass

    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    spool = Spool(tmp_path / "spool")
    records = _records()
    records[0].attributes["label"] = Label("odd")
    ingestor = Ingestor(store, spool=spool)
    assert ingestor.store_records(records).rejected == 0
    assert (spool.pending_spans, store.counts()["spans"], store.counts()["invocations"]) == (0, 13, 2)
    unspooled = ingestor.metrics.exports_unspooled
    assert (unspooled.labels("unspoolable_value")._value.get(), unspooled.labels("too_big")._value.get()) == (1, 0)
    spool.close()
    store.close()


def test_the_drain_goes_on_after_the_spool_fails_to_remove_a_batch(tmp_path, monkeypatch):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    spool = Spool(tmp_path / "spool")
    ingestor = Ingestor(store, spool=spool)
    real_done, failures = spool.done, []

    def done_once_failing(batch):
        if not failures:
            failures.append(batch.spans)
            raise sqlite3.OperationalError("disk I/O error")
        real_done(batch)

    monkeypatch.setattr(spool, "done", done_once_failing)
    drain = SpoolDrain(ingestor, spool).start()
    ingestor.store_records(_records())
    _wait_for(lambda: spool.pending_spans == 0)
    assert failures == [13] and drain._thread.is_alive()
    ingestor.store_records(_records()[:1])  # still draining
    _wait_for(lambda: spool.pending_spans == 0)
    assert drain.stop(5) == 0
    assert (store.counts()["spans"], store.counts()["invocations"]) == (13, 2)
    store.close()


def test_a_spool_that_cannot_be_written_answers_503_and_logs_no_traceback(tmp_path, caplog):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    with serving(store, spool=tmp_path / "spool", grpc_port=free_port()) as service:
        service.ingestor.spool._own.conn.execute("PRAGMA max_page_count = 2")  # as a full disk answers
        url = f"http://127.0.0.1:{service.options.http_port}"
        status, body, headers = post_traces(url, BODY.read_bytes(), token=None)
        assert status == 503 and "Retry-After" in headers and b"the spool cannot be written" in body
        with grpc.insecure_channel(f"127.0.0.1:{service.options.grpc_port}") as channel:
            for method in ("trace.v1.TraceService", "logs.v1.LogsService"):
                export = channel.unary_unary(f"/opentelemetry.proto.collector.{method}/Export")
                body = BODY.read_bytes() if method.startswith("trace") else _genai_event_logs()
                with pytest.raises(grpc.RpcError) as refused:
                    export(body, timeout=10)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
                assert "the spool cannot be written" in refused.value.details()
    assert not [r for r in caplog.records if r.exc_info]
    assert store.counts()["spans"] == 0
    store.close()


ROOT = Path(__file__).resolve().parents[2]
EVENT_ONLY = {
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
}


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_real_exporters_spans_and_genai_events_spooled_then_stored_and_scored_online(tmp_path, protocol):
    """The SDK's own OTLP exporters send an ADK run's spans and its GenAI events (the content, as logs) to a
    collector with --spool and --online: the run is stored whole, its content from the events, and scored."""
    (tmp_path / "online.toml").write_text('metrics = ["tool_call_count"]\npoll_seconds = 0.05\n')
    collector = Collector(
        tmp_path, None, "--workers", "1", "--spool", str(tmp_path / "spool"), "--online", str(tmp_path / "online.toml")
    ).start()
    endpoint = (
        {"OTLP_GRPC_ENDPOINT": f"127.0.0.1:{collector.grpc_port}"}
        if protocol == "grpc"
        else {"OTLP_ENDPOINT": collector.url}
    )
    environment = {**os.environ, **EVENT_ONLY, **endpoint, "OTLP_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, "-m", "tests.helpers.adk_log_events", str(tmp_path)], env=environment,
                              capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
        assert done.returncode == 0, done.stderr
        store = collector.store()

        def scored() -> bool:
            with store.engine.connect() as conn:
                return conn.execute(t.online_results.select()).first() is not None

        _wait_for(scored)
        metrics = http_get(f"{collector.url}/metrics", TOKEN)[1].decode()
    finally:
        collector.stop()
    assert "Exception" not in done.stderr  # no export was refused
    [invocation] = store.list_invocations()
    assert invocation.prompt == "Is the hall light on, and how warm is the living room?"
    assert [c.args for c in invocation.tool_calls] == [{"device_id": "light-hall"}, {"device_id": "thermostat-living"}]
    assert all(c.result is not None for c in invocation.tool_calls)  # from the events
    with store.engine.connect() as conn:
        jobs = [(j.invocation_id, j.status) for j in conn.execute(t.eval_jobs.select())]
        results = [(r.invocation_id, r.metric, r.score) for r in conn.execute(t.online_results.select())]
    assert jobs == [(invocation.invocation_id, "done")]
    assert results == [(invocation.invocation_id, "tool_call_count", 2.0)]
    assert "toolpath_spool_spans 0.0" in metrics
    store.close()


@pytest.fixture
def cluster():
    with postgres_server().controlled() as running:
        yield running


def test_postgresql_outage_exports_answered_from_the_spool_and_stored_once_it_is_back(cluster, tmp_path):
    """With PostgreSQL stopped (immediate shutdown: connections cut) the collector goes on answering 200, the
    spans wait in the spool, and they are stored once the server is back, by the same process, nothing refused."""
    collector = Collector(tmp_path, cluster.url, "--workers", "1", "--spool", str(tmp_path / "spool")).start()
    store = collector.store()
    try:
        assert collector.post(otlp_json(f"{1:032x}", tool_calls=1), "application/json")[0] == 200
        _wait_for(lambda: store.counts()["invocations"] == 1)
        store.engine.dispose()
        cluster.stop()
        assert collector.post(otlp_json(f"{2:032x}", tool_calls=2), "application/json")[0] == 200
        assert collector.post(BODY.read_bytes())[0] == 200
        _wait_for(lambda: scrape_metrics(collector)["toolpath_store_errors_total"] >= 1)  # the drain tried
        down = scrape_metrics(collector)
        ready = http_get(f"{collector.url}/readyz")  # exports are answered: a load balancer keeps sending them
        cluster.start()
        _wait_for(lambda: store.counts()["invocations"] == 4)
        _wait_for(lambda: scrape_metrics(collector)["toolpath_spool_spans"] == 0)
        up = scrape_metrics(collector)
    finally:
        collector.stop()
    assert down["toolpath_spool_spans"] == 3 + 13
    assert ready[0] == 200 and json.loads(ready[1])["store"].startswith("store unreachable: ")
    assert json.loads(ready[1])["spool_spans"] == 3 + 13
    assert up.get('toolpath_spans_rejected_total{reason="store_error"}', 0) == 0
    assert up["toolpath_spans_stored_total"] == 2 + 3 + 13
    assert [len(i.tool_calls) for i in store.get_session("home-session-0001").invocations] == [2, 3]
    assert store.counts()["spans"] == 2 + 3 + 13
    store.close()


def scrape_metrics(collector: Collector) -> dict[str, float]:
    """``/metrics`` as ``{'name{labels}': value}`` (the text format's sample lines as they are)."""
    text = http_get(f"{collector.url}/metrics", TOKEN)[1].decode()
    samples = (line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {name: float(value) for name, value in samples}


def test_the_bound_is_the_folders_whatever_the_number_of_workers(tmp_path):
    """--spool-max-bytes is what may wait in the folder: two workers share it, rather than each taking it all."""
    probe = Spool(tmp_path / "probe")
    Ingestor(Store("sqlite://"), spool=probe, redactor=Redactor.build()).store_records(_records())
    one_export = probe.pending_bytes
    probe.close()
    bound = 3 * one_export  # 1.5 exports a worker: each takes one, then refuses
    collector = Collector(tmp_path, None, "--workers", "2", "--spool", str(tmp_path / "spool"),
                          "--spool-max-bytes", str(bound)).start()  # fmt: skip
    blocker = sqlite3.connect(collector.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # the drains cannot empty the spool
    try:
        statuses = [collector.post(BODY.read_bytes())[0] for _ in range(8)]  # dealt to the workers in turn
        waiting = scrape_metrics(collector)["toolpath_spool_spans"]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        collector.stop()
    assert sorted(statuses) == [200] * 2 + [503] * 6
    assert waiting == 2 * 13


def test_three_workers_killed_with_a_backlog_then_one_writes_it_all_and_keeps_one_file(tmp_path):
    spool = tmp_path / "spool"
    collector = Collector(tmp_path, None, "--workers", "3", "--spool", str(spool)).start()
    blocker = sqlite3.connect(collector.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        statuses = [
            collector.post(otlp_json(f"{n:032x}", tool_calls=1), "application/json")[0] for n in range(1, 7)
        ]  # dealt to the three workers in turn: each spools some
        held = sorted({p.name.split(".")[0] for p in spool.iterdir()})
        collector.stop(signal.SIGKILL)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert statuses == [200] * 6 and len(held) == 3
    restarted = Collector(tmp_path, None, "--workers", "1", "--spool", str(spool)).start()
    store = restarted.store()
    try:
        _wait_for(lambda: store.counts()["invocations"] == 6)
        _wait_for(lambda: len({p.name.split(".")[0] for p in spool.iterdir()}) == 1)
    finally:
        restarted.stop()
    assert store.counts()["spans"] == 6 * 2
    assert len({p.name.split(".")[0] for p in spool.iterdir()}) == 1
    store.close()


def test_ready_with_an_unreachable_store_only_while_the_spool_has_room(tmp_path):
    unreachable = Store(f"postgresql+psycopg://toolpath@127.0.0.1:{free_port()}/toolpath", create=False)
    assert readiness(unreachable)[0] is False
    probe = Spool(tmp_path / "probe")
    probe.put(_records())
    spool = Spool(tmp_path / "spool", max_bytes=probe.pending_bytes)
    probe.close()
    ready, body = readiness(unreachable, None, spool)
    assert ready and body["store"].startswith("store unreachable: ") and body["spool_spans"] == 0
    spool.put(_records())  # the bound exactly: now it is full
    ready, body = readiness(unreachable, None, spool)
    assert not ready and body["reason"].endswith(", and the spool is full")
    spool.close()


def test_the_drain_takes_up_what_a_collector_stopped_since_left_in_its_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(spool_drain, "CLAIM_EVERY", 0.1)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    running, other = Spool(tmp_path / "spool"), Spool(tmp_path / "spool")
    drain = SpoolDrain(Ingestor(store, spool=running), running).start()
    Ingestor(store, spool=other).store_records(_records())
    other.close()  # its collector stopped with the store down, and is not started again
    _wait_for(lambda: store.counts()["invocations"] == 2)
    assert drain.stop(5) == 0
    assert sorted({p.name.split(".")[0] for p in (tmp_path / "spool").iterdir()}) == ["spool-0"]
    store.close()


def test_workers_stopped_while_the_store_is_down_say_what_they_left(cluster, tmp_path):
    """SIGTERM with PostgreSQL down throughout: each worker tries for its drain time (not killed before it ends),
    and the last line adds up what they left, which the next start writes."""
    spool = str(tmp_path / "spool")
    collector = Collector(tmp_path, cluster.url, "--workers", "2", "--spool", spool).start()
    cluster.stop()
    try:
        assert [collector.post(BODY.read_bytes())[0] for _ in range(2)] == [200, 200]  # one to each worker
        collector.process.send_signal(signal.SIGTERM)
        out, _ = collector.process.communicate(timeout=120)
    finally:
        cluster.start()
    assert "stopped; 0 span(s) stored; 26 span(s) left in the spool, written at the next start" in " ".join(out.split())
    restarted = Collector(tmp_path, cluster.url, "--workers", "1", "--spool", spool).start()
    store = restarted.store()
    try:
        _wait_for(lambda: store.counts()["spans"] == 13 and scrape_metrics(restarted)["toolpath_spool_spans"] == 0)
    finally:
        restarted.stop()
    store.close()


def test_a_collector_of_another_store_never_writes_what_was_spooled_for_this_one(tmp_path):
    spool = str(tmp_path / "spool")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Collector(tmp_path / "a", None, "--workers", "1", "--spool", spool).start()
    blocker = sqlite3.connect(first.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        assert first.post(BODY.read_bytes())[0] == 200
        first.stop(signal.SIGKILL)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    other = Collector(tmp_path / "b", None, "--workers", "1", "--spool", spool).start()  # same folder, store b
    try:
        assert other.post(otlp_json(f"{7:032x}", tool_calls=1), "application/json")[0] == 200
        other_store = other.store()
        _wait_for(lambda: other_store.counts()["spans"] == 2)
        time.sleep(1)
        assert other_store.counts()["spans"] == 2  # store a's spans stayed out of store b
    finally:
        other.stop()
    assert "holds spans for the store sqlite:///" in other.process.stderr.read()
    again = Collector(tmp_path / "a", None, "--workers", "1", "--spool", spool).start()
    store = again.store()
    try:
        _wait_for(lambda: store.counts()["invocations"] == 2)
    finally:
        again.stop()
    assert store.counts()["spans"] == 13
    other_store.close()
    store.close()


def test_a_backlog_left_by_an_earlier_run_shows_on_metrics_at_start(tmp_path):
    spool = str(tmp_path / "spool")
    first = Collector(tmp_path, None, "--workers", "1", "--spool", spool).start()
    blocker = sqlite3.connect(first.db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # through both runs: nothing can be written
    try:
        assert first.post(BODY.read_bytes())[0] == 200
        first.stop(signal.SIGKILL)
        second = Collector(tmp_path, None, "--workers", "1", "--spool", spool).start()
        try:
            assert scrape_metrics(second)["toolpath_spool_spans"] == 13
        finally:
            second.stop(signal.SIGKILL)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


class _FailingRedactor(Redactor):
    """The default rules, failing on one span (redaction is total; this stands for a bug in it)."""

    def span(self, record):
        if record.span_id == _records()[0].span_id:
            raise RuntimeError("redaction failed")
        return super().span(record)


@pytest.mark.parametrize("spooled", [False, True], ids=["direct", "spooled"])
def test_a_span_that_cannot_be_redacted_is_reported_and_counted(tmp_path, spooled):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    spool = Spool(tmp_path / "spool") if spooled else None
    ingestor = Ingestor(store, redactor=_FailingRedactor.build(), spool=spool)
    records = _records()
    records[0].attributes["api_key"] = "sk-not-a-plain-key"  # not proven plain: redacted span by span
    assert ingestor.store_records(records).quarantined == 1  # told back in partial_success
    rejected = ingestor.metrics.spans_rejected.labels("quarantined")._value.get()
    assert rejected == 1 and ingestor.limits.hits["spans_quarantined"] == 1
    if spool is not None:
        assert spool.pending_spans == 12
        spool.close()
    else:
        assert store.counts()["spans"] == 12
    store.close()
