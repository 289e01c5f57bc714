"""A session page in real headless Chromium shows what online evaluation said of it: the session's scores as a
whole at its current revision, the superseded ones apart (a late turn reopened the session), and each turn's
scores with the evaluator that gave them (two evaluators may score one metric of one turn)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from tests.helpers.ui import serve_ui, watched_page
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store

CONFIG = {"poll_seconds": 0.02, "evaluator": [
    {"name": "turns", "metrics": ["tool_call_count"]},
    {"name": "audit", "version": "7", "metrics": ["tool_call_count"]},
    {"name": "conversations", "version": "2", "target": "session", "idle_seconds": 0.3,
     "metrics": ["tool_call_count"], "aggregate": {"tool_call_count": ["mean", "last"]}},
]}  # fmt: skip


def turn(n: int, calls: int) -> Invocation:
    return Invocation(
        invocation_id=f"{n:016x}", session_id="chat-9", trace_id=f"{n:032x}", agent_name="bot", prompt=f"ask {n}",
        response="ok", tool_calls=[ToolCall(name="lookup", args={"k": k}) for k in range(calls)],
        started_at=datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=n), latency_seconds=1.0,
    )  # fmt: skip


def revisions(store: Store) -> set[int]:
    with store.engine.connect() as conn:
        return {r[0] for r in conn.execute(text("SELECT revision FROM session_results"))}


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def test_the_session_page_shows_its_scores_as_a_whole_and_each_turns_evaluators(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'ui.db'}")
    online = OnlineEvaluator(store, CONFIG).start()
    try:
        store.write([turn(1, 3), turn(2, 1)])
        wait_for(lambda: revisions(store) == {1})
        store.write([turn(3, 5)])  # the user came back
        wait_for(lambda: revisions(store) == {1, 2})
        assert online.drain(30)
    finally:
        online.stop()
    with serve_ui(store, tmp_path / "sets") as url, watched_page() as page:
        page.goto(f"{url}/session?id=chat-9")
        current = [r.inner_text().split("\t") for r in page.locator("tr.session-score").all()]
        assert [(c[0], c[1], c[2], c[3], c[4]) for c in current] == [
            ("conversations v2", "2", "3", "tool_call_count:last", "5.000"),
            ("conversations v2", "2", "3", "tool_call_count:mean", "3.000"),
        ]
        assert "2 earlier result(s), superseded" in page.locator("#superseded-scores summary").inner_text()
        page.locator("#superseded-scores summary").click()
        older = [r.inner_text().split("\t")[:5] for r in page.locator("tr.superseded-score").all()]
        assert sorted(older) == [
            ["conversations v2", "1", "2", "tool_call_count:last", "1.000"],
            ["conversations v2", "1", "2", "tool_call_count:mean", "2.000"],
        ]
        first = page.locator("#turn-1 table.scores .evaluator")
        assert first.all_inner_texts() == ["audit v7", "turns v1"]  # one metric, two evaluators
    store.close()
