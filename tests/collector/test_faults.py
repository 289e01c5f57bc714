"""Faults: PostgreSQL stopped in the middle of a load, and a judge that is down during online evaluation. The
collector answers 503 while it cannot commit, recovers by itself, and loses nothing it acknowledged; ingestion
never waits for a judge."""

from __future__ import annotations

import time

import pytest

from tests.helpers.builders import otlp_json
from tests.helpers.collector import Collector
from tests.helpers.pgserver import postgres_server
from toolpath.store.online_reads import latest_scored


@pytest.fixture
def cluster():
    with postgres_server().controlled() as running:
        yield running


def test_postgresql_stopped_mid_load_gives_503_then_recovers(tmp_path, cluster):
    collector = Collector(tmp_path, cluster.url).start()
    try:
        acknowledged = []
        for n in range(3):
            trace = f"{n + 1:032x}"
            assert collector.post(otlp_json(trace, tool_calls=2), "application/json")[0] == 200
            acknowledged.append(trace)
        cluster.stop()
        refused = collector.post(otlp_json(f"{9:032x}", tool_calls=2), "application/json")
        assert refused[0] == 503 and int(refused[2]["Retry-After"]) > 0
        cluster.start()
        deadline = time.monotonic() + 30
        while True:  # what an OTLP exporter does with a 503: retry after a while
            status = collector.post(otlp_json(f"{9:032x}", tool_calls=2), "application/json")[0]
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 200
        acknowledged.append(f"{9:032x}")
        stored = {inv.trace_id: len(inv.tool_calls) for inv in collector.store().list_invocations()}
        assert stored == {trace: 2 for trace in acknowledged}
    finally:
        collector.stop()
    assert collector.process.returncode == 0


def test_a_judge_that_is_down_never_blocks_ingestion(tmp_path, monkeypatch):
    (tmp_path / "online.toml").write_text(
        'metrics = ["tool_call_count", "fluency"]\npoll_seconds = 0.05\n[judge]\ntimeout = 0.5\nmax_attempts = 2\n'
    )
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    collector = Collector(tmp_path, None, "--online", str(tmp_path / "online.toml")).start()
    try:
        started = time.monotonic()
        for n in range(5):
            assert collector.post(otlp_json(f"{n + 1:032x}", tool_calls=1), "application/json")[0] == 200
        assert time.monotonic() - started < 5  # answered at once: scoring happens elsewhere
        store = collector.store()
        assert len(store.list_invocations()) == 5
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(latest_scored(store)) < 5:
            time.sleep(0.1)
        scored = latest_scored(store)
        assert len(scored) == 5
        assert all(r["scores"]["tool_call_count"]["score"] == 1.0 for r in scored)
        assert all(r["scores"]["fluency"]["label"] == "error" for r in scored)  # recorded as errors, not scores
        assert "unavailable" in scored[0]["scores"]["fluency"]["explanation"]
    finally:
        collector.stop()
