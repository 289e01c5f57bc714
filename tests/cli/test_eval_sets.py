"""`toolpath eval` of ADK eval sets against an agent: exit codes, expected vs actual, configs, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES
from tests.helpers.cli import run_cli

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
    result = run_cli(
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
    run = {"score": 1.0, "status": "PASSED", "per_invocation": [1.0, 1.0], "per_invocation_status": ["PASSED"] * 2}
    assert case["metrics"]["tool_trajectory_avg_score"] == {
        "score": 1.0,
        "threshold": 1.0,
        "status": "PASSED",
        "per_invocation": [1.0, 1.0],
        "per_invocation_status": ["PASSED", "PASSED"],
        "explanation": None,
        "runs": [run, run],
    }
    assert len(case["sessions"]) == 2


def test_eval_set_failing_exits_1_with_expected_vs_actual(evalset_dir):
    result = run_cli(evalset_dir, "eval", ".", "--agent", "weather_agent:wrong")
    assert result.returncode == 1, result.stderr
    assert "2 case(s): 0 passed, 2 failed" in result.stdout
    assert "expected tools: get_weather(city='Paris')" in result.stdout
    assert "actual tools:   get_weather(city='London')" in result.stdout
    listed = run_cli(evalset_dir, "runs", "list", "--json")
    [saved] = json.loads(listed.stdout)
    assert saved["kind"] == "evalset" and saved["failed_count"] == 2


def test_eval_set_config_override(evalset_dir):
    (evalset_dir / "lenient.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    result = run_cli(
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
    result = run_cli(evalset_dir, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(message), result.stderr
