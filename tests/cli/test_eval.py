"""The `toolpath` command, run as users run it: a subprocess in a fresh working directory."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES
from tests.helpers.cli import run_process


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("demo")
    result = run_process(cwd, "demo")
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
    assert "The store now holds 72 invocations with 96 tool calls" in out  # three wrappings of one planner
    assert "One planner, three wrappings" in out
    assert "Partial credit: exact match says 0" in out
    assert "set_temperature.temperature (0.00)" in out  # the Fahrenheit case: right tool, wrong number


def test_sessions_list_and_show_json(demo_dir):
    listed = run_process(demo_dir, "sessions", "list", "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert Counter(s["agent_name"] for s in sessions) == {
        "smart_home_assistant": 24,
        "smart_home_langgraph": 24,
        "smart_home_app": 24,
    }
    shown = run_process(demo_dir, "sessions", "show", sessions[0]["session_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    session = json.loads(shown.stdout)
    [inv] = session["invocations"]
    assert set(inv) >= {"prompt", "response", "predicted_trajectory", "latency_seconds", "failure"}
    db = sqlite3.connect(demo_dir / "toolpath.db")
    [(session_id,)] = db.execute(
        "select session_id from invocations where prompt like '%Fahrenheit%' and agent_name = 'smart_home_assistant'"
    ).fetchall()
    fahrenheit = json.loads(run_process(demo_dir, "sessions", "show", session_id, "--json").stdout)["invocations"]
    assert fahrenheit[0]["predicted_trajectory"] == [
        {"tool_name": "set_temperature", "tool_input": {"location": "bedroom", "temperature": 70.0}}
    ]


def test_sessions_human_output(demo_dir):
    result = run_process(demo_dir, "sessions", "list")
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
    result = run_process(
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
    result = run_process(
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
    result = run_process(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith(message), result.stderr
    assert "Traceback" not in result.stderr


WEATHER_AGENT = """
import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny", "temp": 20}

def good(prompt):
    if "weather" in prompt:
        w = get_weather("Paris")
        return f"The weather in Paris is {w['sky']}, {w['temp']}C."
    return "Hello! I can tell you the weather."

def wrong(prompt):
    if "weather" in prompt:
        get_weather("London")
        return "The weather in London is sunny, 20C."
    return "Hello! I can tell you the weather."
"""


@pytest.fixture
def evalset_dir(tmp_path) -> Path:
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "weather_agent.py").write_text(WEATHER_AGENT)
    return tmp_path


def test_eval_set_passing_exits_0_and_writes_eval_cases(evalset_dir):
    result = run_process(
        evalset_dir,
        "eval",
        "weather.evalset.json",
        "--agent",
        "weather_agent:good",
        "--output",
        "r.json",
        "--runs",
        "2",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 case(s): 1 passed, 0 failed" in result.stdout
    [case] = json.loads((evalset_dir / "r.json").read_text())["eval_cases"]
    assert case["eval_id"] == "legacy/weather.test.json" and case["status"] == "PASSED"
    assert case["metrics"]["tool_trajectory_avg_score"] == {
        "score": 1.0,
        "threshold": 1.0,
        "status": "PASSED",
        "per_invocation": [1.0, 1.0],
        "explanation": None,
    }
    assert len(case["sessions"]) == 2


def test_eval_set_failing_exits_1_with_expected_vs_actual(evalset_dir):
    result = run_process(evalset_dir, "eval", ".", "--agent", "weather_agent:wrong")
    assert result.returncode == 1, result.stderr
    assert "2 case(s): 0 passed, 2 failed" in result.stdout
    assert "expected tools: get_weather(city='Paris')" in result.stdout
    assert "actual tools:   get_weather(city='London')" in result.stdout
    listed = run_process(evalset_dir, "runs", "list", "--json")
    [saved] = json.loads(listed.stdout)
    assert saved["kind"] == "evalset" and saved["failed_count"] == 2


def test_eval_set_config_override(evalset_dir):
    (evalset_dir / "lenient.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    result = run_process(
        evalset_dir, "eval", "weather.test.json", "--agent", "weather_agent:wrong", "--config", "lenient.json"
    )
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "weather.test.json"], "error: --agent module:attr is required"),
        (
            ["eval", "weather.test.json", "--agent", "weather_agent:good", "--metrics", "bleu"],
            "error: eval sets are judged",
        ),
        (["eval", "broken.evalset.json", "--agent", "weather_agent:good"], "error: broken.evalset.json:1:"),
        (
            ["eval", "weather.test.json", "--agent", "weather_agent:good", "--config", "nope.json"],
            "error: nope.json: no such file",
        ),
    ],
)
def test_eval_set_bad_input_exits_2(evalset_dir, args, message):
    (evalset_dir / "broken.evalset.json").write_text("{")
    result = run_process(evalset_dir, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(message), result.stderr


def test_csv_dataset_with_json_cells_and_runs_show(tmp_path):
    (tmp_path / "cases.csv").write_text(
        "prompt,response,reference,predicted_trajectory,reference_trajectory\n"
        'a,the cat sat,the cat sat,"[{""tool_name"": ""x"", ""tool_input"": {""k"": 1}}]","[{""tool_name"": ""x"", ""tool_input"": {""k"": 1.0}}]"\n'
        'b,hello,goodbye,[],"[{""tool_name"": ""x""}]"\n'
        "c,,,,\n"
    )
    result = run_process(
        tmp_path,
        "eval",
        "cases.csv",
        "--metrics",
        "trajectory_exact_match,rouge_1,exact_match",
        "--output",
        "o.json",
        "--store",
        "sqlite:///s.db",
    )
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "o.json").read_text())["metrics_table"]
    assert [r["trajectory_exact_match/score"] for r in table] == [1.0, 0.0, None]
    assert [r["rouge_1/score"] for r in table] == [1.0, 0.0, None]
    assert table[2]["exact_match/explanation"] == "row has no 'response'"
    run_id = result.stdout.split("run ")[1].split(":")[0].strip()
    shown = json.loads(run_process(tmp_path, "runs", "show", run_id, "--json", "--store", "sqlite:///s.db").stdout)
    assert shown["kind"] == "dataset" and [r["scores"]["rouge_1"] for r in shown["results"]] == [1.0, 0.0, None]


def test_eval_from_store_scores_recorded_traffic(demo_dir):
    result = run_process(
        demo_dir,
        "eval",
        "--from-store",
        "--metrics",
        "tool_call_count,redundant_tool_calls,tool_error_rate,error_recovery",
        "--agent-name",
        "smart_home_assistant",
        "--output",
        "recorded.json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads((demo_dir / "recorded.json").read_text())
    summary = out["summary_metrics"]
    assert summary["row_count"] == 24
    assert summary["tool_call_count/mean"] == pytest.approx(32 / 24)
    assert summary["redundant_tool_calls/mean"] == pytest.approx(1 / 24)  # the weather checked twice
    # two failing calls (70 °C out of range, the garage without thermostat) among 23 runs that called tools
    assert summary["tool_error_rate/mean"] == pytest.approx(2 / 23)
    assert summary["error_recovery/mean"] == 0.0
    failing = [r for r in out["metrics_table"] if r["tool_error_rate/score"]]
    assert {r["predicted_trajectory"][0]["error"] for r in failing} == {
        "toolpath.demo.smart_home.DeviceError: 70.0 °C is outside the safe range 5-30 °C",
        "toolpath.demo.smart_home.DeviceError: garage has no thermostat",
    }


def test_eval_from_store_errors(demo_dir, tmp_path):
    result = run_process(demo_dir, "eval", "--from-store", "--metrics", "tool_call_count", "--agent-name", "nobody")
    assert result.returncode == 2 and "no recorded invocations" in result.stderr
    result = run_process(demo_dir, "eval", "x.jsonl", "--from-store", "--metrics", "tool_call_count")
    assert result.returncode == 2 and "give no DATASET" in result.stderr
