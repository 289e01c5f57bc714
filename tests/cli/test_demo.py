"""`toolpath demo`: the bundled demo fills the default SQLite store and says what it did."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys


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
    assert "set_temperature.temperature (0.00)" in out  # the Fahrenheit case: right tool, wrong number


def test_demo_without_langgraph_says_so(tmp_path):
    code = (
        "import sys; sys.modules['langgraph'] = None; sys.modules['langgraph.prebuilt'] = None\n"
        "from toolpath.cli import cli\n"
        "cli(['demo', '--store', 'sqlite:///t.db'])\n"
    )
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "Skipping the LangGraph and Agent Engine-style versions" in result.stdout
    assert "pip install 'toolpath[langgraph]'" in result.stdout
    assert "The store now holds 24 invocations" in result.stdout
