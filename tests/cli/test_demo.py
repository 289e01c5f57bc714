"""`toolpath demo`: the bundled demo fills the default SQLite store and says what it did (the `demo_dir` fixture
runs it as a real process), and says what it skips without LangGraph."""

from __future__ import annotations

import sqlite3
import sys

from tests.helpers.cli import run_cli


def test_demo_fills_the_default_sqlite_store(demo_dir):
    db = sqlite3.connect(demo_dir / "toolpath.db")
    invocations = db.execute("select count(*) from invocations").fetchone()[0]
    with_calls = db.execute("select count(distinct invocation_id) from tool_calls").fetchone()[0]
    assert invocations >= 20
    assert with_calls >= 20
    out = (demo_dir / "stdout.txt").read_text()
    assert "trajectory_precision" in out and "Worst" in out
    assert "The store now holds 72 invocations with 96 tool calls" in out  # three wrappings of one planner
    assert "One planner, three wrappings" in out
    assert "Partial credit: exact match says 0" in out
    assert "set_temperature: temperature 21.1 → 70.0" in out  # the Fahrenheit case: right tool, wrong number
    # two ids sharing a long prefix show where they differ, not two identical truncated prefixes
    assert 'set_device_info: device_id "…hallway-2" →' in out and '"…hallway-1"' in out


def test_demo_without_langgraph_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "langgraph", None)  # not importable, as where it is not installed
    monkeypatch.setitem(sys.modules, "langgraph.prebuilt", None)
    monkeypatch.delitem(sys.modules, "toolpath.demo.langgraph_home", raising=False)  # imported again, and fails
    result = run_cli(tmp_path, "demo", "--store", "sqlite:///t.db")
    assert result.returncode == 0, result.stderr
    assert "Skipping the LangGraph and Agent Engine-style versions" in result.stdout
    assert "pip install 'toolpath[langgraph]'" in result.stdout
    assert "The store now holds 24 invocations" in result.stdout
