"""A collector killed (kill -9) while its worker judges a quiet session: nothing is lost and nothing is scored
twice — once the dead worker's lease runs out, another collector on the store judges the session, and its
results are the session's only ones."""

from __future__ import annotations

import json
import signal
import threading
import time

from sqlalchemy import text

from tests.helpers.builders import otlp_json
from tests.helpers.collector import Collector
from tests.helpers.fake_gemini import Reply, json_reply, serving_gemini

ONLINE = """poll_seconds = 0.05
lease_seconds = 15
[judge]
timeout = 60
max_attempts = 1
[[evaluator]]
name = "conversations"
target = "session"
idle_seconds = 0.5
metrics = ["multi_turn_task_success_v1"]
"""


def test_a_session_judged_by_a_killed_collector_is_judged_once_by_another(tmp_path, monkeypatch):
    (tmp_path / "online.toml").write_text(ONLINE)
    asked = threading.Event()

    def judge(prompt: str, seen: int) -> Reply:
        asked.set()
        if seen == 1:  # the first collector's request: it dies waiting
            return Reply(json_reply(rubrics=[{"rubric": "r", "verdict": "no"}]).text, delay=20)
        return json_reply(rubrics=[{"rubric": "helps", "verdict": "yes"}, {"rubric": "asks", "verdict": "no"}])

    with serving_gemini(monkeypatch, judge) as fake:
        options = ("--workers", "1", "--online", str(tmp_path / "online.toml"))  # one process: kill -9 ends it all
        first = Collector(tmp_path, None, *options).start()
        second = Collector(tmp_path, first.store_url, *options)
        try:
            turns = [json.loads(otlp_json(f"{n:032x}", tool_calls=1, session="chat-1")) for n in (1, 2)]
            body = {"resourceSpans": [spans for turn in turns for spans in turn["resourceSpans"]]}
            assert first.post(json.dumps(body).encode(), "application/json")[0] == 200  # one conversation
            assert asked.wait(30)  # quiet, claimed, being judged
            first.stop(signal.SIGKILL)
            second.start()
            store = second.store()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not _results(store):
                time.sleep(0.1)
            time.sleep(1.0)  # a second scoring would show by now
            results = _results(store)
            with store.engine.connect() as conn:
                job = conn.execute(text("SELECT status, revision, attempts, claimed_by FROM session_jobs")).one()
        finally:
            second.stop()
            first.stop(signal.SIGKILL)
    assert results == [("chat-1", 1, "multi_turn_task_success_v1", 0.5, "fail", 2)]  # the second judge's verdict
    # claimed again once the dead claim's lease ran out (more than once only if a scoring outlived a lease), and
    # scored once: one revision's results, stored by the second collector
    assert job.status == "done" and job.revision == 1 and job.attempts >= 2
    assert job.claimed_by.split("-")[-2] == str(second.process.pid)  # by the second collector
    assert fake.requests >= 2


def _results(store) -> list[tuple]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT session_id, revision, metric, score, label, turns FROM session_results"))
        return [tuple(r) for r in rows]
