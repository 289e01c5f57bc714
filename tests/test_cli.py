"""The `toolpath` command, run as users run it: a subprocess in a fresh working directory."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop("TOOLPATH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "toolpath.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
    )


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("demo")
    result = run(cwd, "demo")
    assert result.returncode == 0, result.stderr
    (cwd / "stdout.txt").write_text(result.stdout)
    return cwd


def test_demo_fills_the_default_sqlite_store(demo_dir):
    db = sqlite3.connect(demo_dir / "toolpath.db")
    invocations = db.execute("select count(*) from invocations").fetchone()[0]
    with_calls = db.execute("select count(distinct invocation_id) from tool_calls").fetchone()[0]
    assert invocations >= 20
    assert with_calls >= 20
    out = (demo_dir / "stdout.txt").read_text()
    assert "trajectory_precision" in out and "Worst" in out
    assert "The store now holds 24 invocations" in out


def test_sessions_list_and_show_json(demo_dir):
    listed = run(demo_dir, "sessions", "list", "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 24 and all(s["agent_name"] == "smart_home_assistant" for s in sessions)
    shown = run(demo_dir, "sessions", "show", sessions[0]["session_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    session = json.loads(shown.stdout)
    [inv] = session["invocations"]
    assert set(inv) >= {"prompt", "response", "predicted_trajectory", "latency_seconds", "failure"}
    db = sqlite3.connect(demo_dir / "toolpath.db")
    [(session_id,)] = db.execute("select session_id from invocations where prompt like '%Fahrenheit%'").fetchall()
    fahrenheit = json.loads(run(demo_dir, "sessions", "show", session_id, "--json").stdout)["invocations"]
    assert fahrenheit[0]["predicted_trajectory"] == [
        {"tool_name": "set_temperature", "tool_input": {"location": "bedroom", "temperature": 70.0}}
    ]


def test_sessions_human_output(demo_dir):
    result = run(demo_dir, "sessions", "list")
    assert result.returncode == 0 and "smart_home_assistant" in result.stdout


def test_eval_writes_results(tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text(
        json.dumps(
            {
                "prompt": "a",
                "predicted_trajectory": [{"tool_name": "x", "tool_input": {}}],
                "reference_trajectory": [{"tool_name": "x", "tool_input": {}}],
            }
        )
        + "\n"
        + json.dumps({"prompt": "b", "predicted_trajectory": "[]", "reference_trajectory": [{"tool_name": "x"}]})
        + "\n"
    )
    result = run(
        tmp_path,
        "eval",
        str(data),
        "--metrics",
        "trajectory_exact_match,trajectory_single_tool_use(tool_name=x)",
        "--output",
        "out.json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["summary_metrics"]["row_count"] == 2
    assert out["summary_metrics"]["trajectory_exact_match/mean"] == 0.5
    assert [r["trajectory_single_tool_use/score"] for r in out["metrics_table"]] == [1.0, 0.0]


def test_eval_with_agent(tmp_path):
    (tmp_path / "my_agent.py").write_text(
        "import toolpath\n"
        "@toolpath.tool\n"
        "def add(a: int, b: int) -> int:\n    return a + b\n"
        "def answer(prompt):\n    return str(add(2, 3))\n"
    )
    data = tmp_path / "cases.jsonl"
    data.write_text(
        json.dumps({"prompt": "2+3?", "reference_trajectory": [{"tool_name": "add", "tool_input": {"a": 2, "b": 3}}]})
        + "\n"
    )
    result = run(
        tmp_path,
        "eval",
        "cases.jsonl",
        "--metrics",
        "trajectory_exact_match",
        "--agent",
        "my_agent:answer",
        "--output",
        "o.json",
        "--store",
        "sqlite:///s.db",
    )
    assert result.returncode == 0, result.stderr
    row = json.loads((tmp_path / "o.json").read_text())["metrics_table"][0]
    assert row["response"] == "5" and row["trajectory_exact_match/score"] == 1.0
    assert sqlite3.connect(tmp_path / "s.db").execute("select count(*) from tool_calls").fetchone()[0] == 1


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["eval", "missing.jsonl", "--metrics", "trajectory_exact_match"], None, "error: missing.jsonl: no such file"),
        (
            ["eval", "bad.jsonl", "--metrics", "trajectory_exact_match"],
            '{"a": 1}\n{oops\n',
            "error: bad.jsonl:2: not valid JSON",
        ),
        (
            ["eval", "bad.jsonl", "--metrics", "trajectory_exact_matsch"],
            '{"a": 1}\n',
            "error: unknown metric 'trajectory_exact_matsch'",
        ),
        (
            ["eval", "bad.jsonl", "--metrics", "trajectory_recall", "--agent", "nomodule:fn"],
            '{"a": 1}\n',
            "error: --agent 'nomodule:fn': cannot import",
        ),
        (["sessions", "list"], None, "error: store toolpath.db does not exist"),
        (["sessions", "show", "nope", "--store", "sqlite:///empty.db"], "", "error: no session 'nope' in the store"),
    ],
)
def test_errors_are_one_clear_line_and_exit_2(tmp_path, args, content, message):
    if content is not None:
        (tmp_path / ("empty.db" if "empty.db" in " ".join(args) else "bad.jsonl")).write_text(content)
    result = run(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith(message), result.stderr
    assert "Traceback" not in result.stderr
