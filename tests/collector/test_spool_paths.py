"""``toolpath collect --spool`` on every path an export takes: a batch written again after a crash, the drain
through spool errors, the spool's refusals as replies, gRPC traces and GenAI events from the real exporters,
online scoring of spooled spans, and PostgreSQL through an outage."""

from __future__ import annotations

import sqlite3
import time

from tests.helpers import SPANS
from tests.helpers.collector import post_traces, serving
from toolpath.collector import otlp
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.spool_drain import SpoolDrain
from toolpath.evaluation.online import OnlineEvaluator
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


def _what_is_stored(store: Store) -> tuple:
    with store.engine.connect() as conn:
        jobs = sorted((j.invocation_id, j.status) for j in conn.execute(t.eval_jobs.select()))
        results = sorted((r.invocation_id, r.metric) for r in conn.execute(t.online_results.select()))
    session = store.get_session("home-session-0001")
    calls = [[(c.name, c.args, c.result) for c in i.tool_calls] for i in session.invocations]
    return store.counts(), jobs, results, calls


def _stored_once(tmp_path) -> tuple:
    store = Store(f"sqlite:///{tmp_path / 'once.db'}")
    online = OnlineEvaluator(store, ONLINE).start()
    Ingestor(store).store_records(_records())
    assert online.drain(30)
    online.stop()
    stored = _what_is_stored(store)
    store.close()
    return stored


def test_a_batch_written_again_after_a_crash_stores_what_once_does(tmp_path):
    """The drain wrote a batch and the process died before removing it from the spool: the next start writes it
    again. Spans, invocations, sessions, online jobs and scores are those of one write."""
    store = Store(f"sqlite:///{tmp_path / 'twice.db'}")
    online = OnlineEvaluator(store, ONLINE).start()
    spool = Spool(tmp_path / "spool")
    ingestor = Ingestor(store, spool=spool)
    assert ingestor.store_records(_records()) == 0 and store.counts()["spans"] == 0  # spooled, not stored
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
    store.close()


def test_a_value_the_spool_cannot_hold_is_written_to_the_store_at_once(tmp_path):
    class Label(str):  # what no decoder makes, and marshal refuses
        pass

    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    spool = Spool(tmp_path / "spool")
    records = _records()
    records[0].attributes["label"] = Label("odd")
    ingestor = Ingestor(store, spool=spool)
    assert ingestor.store_records(records) == 0
    assert (spool.pending_spans, store.counts()["spans"], store.counts()["invocations"]) == (0, 13, 2)
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
    with serving(store, spool=tmp_path / "spool") as service:
        service.ingestor.spool._own.conn.execute("PRAGMA max_page_count = 2")  # as a full disk answers
        url = f"http://127.0.0.1:{service.options.http_port}"
        status, body, headers = post_traces(url, BODY.read_bytes(), token=None)
        assert status == 503 and "Retry-After" in headers and b"the spool cannot be written" in body
    assert not [r for r in caplog.records if r.exc_info]
    store.close()
