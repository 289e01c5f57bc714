"""``toolpath collect --spool``: SIGTERM drains for at most its deadline, even when another process holds the
store's write lock, says what it left, and the next start writes that once."""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import time

import pytest
from sqlalchemy import text

from tests.helpers import SPANS
from tests.helpers.builders import otlp_json
from tests.helpers.collector import TOKEN, Collector, hold_write_lock, http_get, release_write_lock
from toolpath.config import SPOOL_DRAIN_SECONDS
from toolpath.store.writelock import LOCK_SUFFIX

BODY = SPANS / "otel-genai-langchain.shared.otlp.pb"
"""13 spans: two invocations of session ``home-session-0001``."""
MARGIN = 5.0
"""What stopping may take past the drain's deadline: the servers' stop before it, the process's exit after."""


def _wait_for(predicate, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("workers", ["1", "2"], ids=["one-process", "two-workers"])
def test_sigterm_stops_by_the_deadline_while_another_process_holds_the_write_lock(tmp_path, workers):
    """With two workers each drains its own spool, and they queue for the store's write lock between them."""
    spool = str(tmp_path / "spool")
    collector = Collector(tmp_path, None, "--workers", workers, "--spool", spool).start()
    holder = hold_write_lock(collector.db)
    try:
        assert collector.post(BODY.read_bytes())[0] == 200
        assert collector.post(otlp_json("cd" * 16, 3), "application/json")[0] == 200
        time.sleep(1.0)  # the drain is waiting for the write lock when the signal comes
        collector.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        out, err = collector.process.communicate(timeout=3 * SPOOL_DRAIN_SECONDS)
        took = time.monotonic() - signalled
    finally:
        collector.stop()  # a failed step leaves no collector running
        release_write_lock(holder)
    assert collector.process.returncode == 0, err
    # it went on trying until its deadline, and no further
    assert SPOOL_DRAIN_SECONDS - 1 <= took <= SPOOL_DRAIN_SECONDS + MARGIN, (took, err)
    said = " ".join(out.split())  # the console wraps long lines
    assert "stopped; 0 span(s) stored; 17 span(s) left in the spool, written at the next start" in said
    store = collector.store()
    assert store.counts()["spans"] == 0

    restarted = Collector(tmp_path, None, "--workers", "1", "--spool", spool).start()
    try:
        _wait_for(lambda: store.counts()["invocations"] == 3)
        _wait_for(lambda: b"toolpath_spool_spans 0.0" in http_get(f"{restarted.url}/metrics", TOKEN)[1])
    finally:
        restarted.stop()
    said = " ".join(restarted.process.communicate()[0].split())
    assert "stopped; 17 span(s) stored" in said and "left in the spool" not in said
    with sqlite3.connect(collector.db) as conn:  # each span once, each run rebuilt once
        assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT trace_id || span_id) FROM spans").fetchone() == (17, 17)
    assert store.counts()["invocations"] == 3
    assert [len(i.tool_calls) for i in store.get_session("home-session-0001").invocations] == [2, 3]


def test_sigterm_stops_by_the_deadline_while_another_postgresql_writer_holds_the_trace(postgres_url, tmp_path):
    """On PostgreSQL a write waits for the lock of each trace it writes (held here by another transaction, as
    another collector's write would hold it): that wait ends by the deadline too."""
    trace = "dd" * 16
    spool = str(tmp_path / "spool")
    collector = Collector(tmp_path, postgres_url, "--workers", "1", "--spool", spool).start()
    store = collector.store()
    holder = store.engine.connect()
    try:
        holder.begin()
        holder.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": trace})
        assert collector.post(otlp_json(trace, 2), "application/json")[0] == 200
        time.sleep(1.0)  # the drain is waiting for the trace's lock when the signal comes
        collector.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        out, err = collector.process.communicate(timeout=3 * SPOOL_DRAIN_SECONDS)
        took = time.monotonic() - signalled
    finally:
        collector.stop()
        holder.rollback()
        holder.close()
    assert SPOOL_DRAIN_SECONDS - 1 <= took <= SPOOL_DRAIN_SECONDS + MARGIN, (took, err)
    assert "stopped; 0 span(s) stored; 3 span(s) left in the spool" in " ".join(out.split())
    assert store.spans_of_trace(trace) == []
    restarted = Collector(tmp_path, postgres_url, "--workers", "1", "--spool", spool).start()
    try:
        _wait_for(lambda: len(store.spans_of_trace(trace)) == 3)
    finally:
        restarted.stop()
    assert "stopped; 3 span(s) stored" in " ".join(restarted.process.communicate()[0].split())
    assert len(store.spans_of_trace(trace)) == 3
    store.close()


def test_a_write_waiting_for_another_process_turn_is_left_to_the_exit(tmp_path):
    """Another toolpath process's turn at the SQLite store's write lock (its lock file, held here) is a wait the
    drain cannot bound: it stops waiting for that write shortly after its deadline and exits, counting its spans as
    left; the next start writes them."""
    spool = str(tmp_path / "spool")
    collector = Collector(tmp_path, None, "--workers", "1", "--spool", spool).start()
    turn = os.open(f"{collector.db}{LOCK_SUFFIX}", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(turn, fcntl.LOCK_EX)
        assert collector.post(BODY.read_bytes())[0] == 200
        time.sleep(1.0)  # the drain waits for its turn when the signal comes
        collector.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        out, err = collector.process.communicate(timeout=3 * SPOOL_DRAIN_SECONDS)
        took = time.monotonic() - signalled
    finally:
        collector.stop()
        os.close(turn)  # lets the lock go
    assert collector.process.returncode == 0, err
    assert SPOOL_DRAIN_SECONDS <= took <= SPOOL_DRAIN_SECONDS + MARGIN, (took, err)
    assert "stopped; 0 span(s) stored; 13 span(s) left in the spool" in " ".join(out.split())
    assert "a write of spooled spans still runs 2 s past the drain time" in " ".join(err.split())
    store = collector.store()
    restarted = Collector(tmp_path, None, "--workers", "1", "--spool", spool).start()
    try:
        _wait_for(lambda: store.counts()["invocations"] == 2)
    finally:
        restarted.stop()
    assert "stopped; 13 span(s) stored" in " ".join(restarted.process.communicate()[0].split())
    assert store.counts()["spans"] == 13
