"""``toolpath.init`` never gets in the agent's way: a store that is down or locked costs a warning and counters,
not an exception or a wait; the store is opened later on the collector's worker."""

from __future__ import annotations

import socket
import sqlite3
import time

import pytest

import toolpath
from toolpath.collector import in_process as processor


@toolpath.agent(name="bot")
def bot(prompt: str) -> str:
    return "ok"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_store_costs_counters_not_exceptions(caplog):
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://nobody@127.0.0.1:{closed_port()}/toolpath"
    started = time.monotonic()
    tracing = toolpath.init(store=url)
    assert time.monotonic() - started < 10  # 2 s at most, with room for a loaded machine
    assert tracing.store is None and tracing.collector.store_pending
    assert "store is unavailable" in caplog.text
    assert bot("hello") == "ok"  # the agent runs and is not raised into
    assert toolpath.flush(timeout=5) is False
    assert toolpath.stats()["invocations_lost"] == 1


def test_a_locked_store_is_opened_later_and_then_written(tmp_path, monkeypatch):
    monkeypatch.setattr(processor, "_REOPEN_SECONDS", 0.1)
    path = tmp_path / "locked.db"
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")  # another process holds the database
    started = time.monotonic()
    tracing = toolpath.init(store=f"sqlite:///{path}")
    assert time.monotonic() - started < 10  # init waits 2 s at most; not the 30 s SQLite busy timeout
    assert tracing.collector.store_pending
    lock.execute("ROLLBACK")
    lock.close()
    deadline = time.monotonic() + 60
    while tracing.collector.store_pending and time.monotonic() < deadline:
        bot("retry")
        toolpath.flush(timeout=5)
        time.sleep(0.2)
    assert not tracing.collector.store_pending
    bot("written")
    assert toolpath.flush(timeout=10)
    prompts = [inv.prompt for inv in tracing.collector.store.list_invocations()]
    assert "written" in prompts


def test_a_run_traced_while_the_store_opens_slowly_is_written_once_it_opens(tmp_path):
    """A store whose first opening outlasts ``init``'s 2 s (another process holds it; a slow first migration on a
    loaded machine): the agent is not held up, and the run it made meanwhile is written once the store opens,
    not lost."""
    import threading

    path = tmp_path / "slow.db"
    lock = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    lock.execute("BEGIN EXCLUSIVE")
    tracing = toolpath.init(store=f"sqlite:///{path}")
    assert tracing.collector.store_pending
    started = time.monotonic()
    assert bot("early") == "ok"
    assert time.monotonic() - started < 1  # the agent's thread does not wait for the store
    release = threading.Timer(3.0, lambda: (lock.execute("ROLLBACK"), lock.close()))
    release.start()
    assert toolpath.flush(timeout=60)  # truthful: written
    release.join()
    assert toolpath.stats()["invocations_lost"] == 0
    assert [inv.prompt for inv in tracing.collector.store.list_invocations()] == ["early"]


def test_online_evaluation_starts_once_a_slow_store_opens_and_scores_what_came_before(tmp_path):
    """Online evaluation asked of ``init`` while the store is still opening starts as it opens, before anything is
    written to it: the run traced meanwhile is scored, not left out (it was switched off with a warning)."""
    import threading

    path = tmp_path / "slow.db"
    lock = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    lock.execute("BEGIN EXCLUSIVE")
    tracing = toolpath.init(store=f"sqlite:///{path}", online={"metrics": ["tool_call_count"], "poll_seconds": 0.05})
    assert tracing.collector.store_pending and tracing.online is None
    assert bot("early") == "ok"
    release = threading.Timer(1.0, lambda: (lock.execute("ROLLBACK"), lock.close()))
    release.start()
    assert toolpath.flush(timeout=60)
    release.join()
    assert tracing.online is not None
    assert tracing.online.drain(30)
    assert tracing.online.stats.scored == 1


def test_a_bad_online_config_is_an_error_even_while_the_store_opens(tmp_path):
    path = tmp_path / "slow.db"
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(toolpath.ToolpathError, match="no_such_metric"):
            toolpath.init(store=f"sqlite:///{path}", online={"metrics": ["no_such_metric"]})
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def test_a_malformed_store_url_is_still_an_error_now():
    with pytest.raises(toolpath.ConfigError):
        toolpath.init(store="nosuchdialect://x")
