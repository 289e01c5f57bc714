"""`toolpath collect --retain-spans … --retain-invocations …`: a real collector prunes in the background while it
goes on ingesting; bad retention settings are one error line before anything is opened."""

from __future__ import annotations

import json
import time

from tests.helpers.builders import otlp_json
from tests.helpers.cli import run_cli
from tests.helpers.collector import Collector


def shifted(trace: str, by_ns: int) -> bytes:
    """``otlp_json(trace, 2)`` with every time moved by ``by_ns`` (its own times are in January 1970)."""
    export = json.loads(otlp_json(trace, 2))
    for span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            span[key] = str(int(span[key]) + by_ns)
    return json.dumps(export).encode()


def test_collector_prunes_in_the_background(tmp_path):
    collector = Collector(
        tmp_path, None, "--retain-spans", "1d", "--retain-invocations", "2d", "--prune-every", "1s"
    ).start()
    try:
        old, new = "1" * 32, "2" * 32
        assert collector.post(shifted(old, 0), "application/json")[0] == 200
        assert collector.post(shifted(new, time.time_ns()), "application/json")[0] == 200
        store = collector.store()
        deadline = time.monotonic() + 20
        while (store.counts()["invocations"], store.counts()["spans"]) != (1, 3) and time.monotonic() < deadline:
            time.sleep(0.2)
        counts = store.counts()
        assert (counts["spans"], counts["invocations"], counts["tool_calls"], counts["sessions"]) == (3, 1, 2, 1)
        assert store.spans_of_trace(old) == [] and len(store.spans_of_trace(new)) == 3
        assert collector.post(shifted("3" * 32, time.time_ns()), "application/json")[0] == 200  # ingest goes on
        assert store.counts()["invocations"] == 2
    finally:
        collector.stop()
    assert collector.process.returncode == 0


def test_bad_retention_settings_are_one_line_and_create_nothing(tmp_path):
    cases = {
        ("--retain-spans", "7days"): "error: --retain-spans '7days': not a duration",
        ("--retain-spans", "7d", "--prune-every", "often"): "error: --prune-every 'often': not a duration",
        ("--retain-spans", "7d", "--retain-invocations", "1d"): "error: --retain-invocations is shorter than",
        ("--retain-invocations", "1d",): "error: --retain-invocations needs --retain-spans",
    }  # fmt: skip
    for args, message in cases.items():
        result = run_cli(
            tmp_path, "collect", "--store", "sqlite:///c.db", "--http-port", "0", "--grpc-port", "0", *args
        )
        assert result.returncode == 2 and result.stderr.startswith(message), result.stderr
        assert result.stderr.count("\n") == 1
    assert not (tmp_path / "c.db").exists()
