"""`toolpath eval` of ADK eval sets against an agent: exit codes, expected vs actual, configs, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES
from tests.helpers.cli import run_cli
from tests.helpers.weather import WEATHER_AGENT_MODULE


@pytest.fixture
def evalset_dir(tmp_path) -> Path:
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "weather_agent.py").write_text(WEATHER_AGENT_MODULE)
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


def test_case_selector_runs_only_the_named_cases(evalset_dir):
    result = run_cli(
        evalset_dir, "eval", "weather.evalset.json:legacy/weather.test.json", "--agent", "weather_agent:good"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 case(s): 1 passed, 0 failed" in result.stdout
    unknown = run_cli(evalset_dir, "eval", "weather.evalset.json:nope,legacy/weather.test.json", "--agent", "x:y")
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "error: weather.evalset.json: no eval case 'nope' (the file has: 'legacy/weather.test.json')\n"
    )


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        (
            {"tool_trajectory_avg_scor": 1.0},
            "criterion 'tool_trajectory_avg_scor': unknown criterion (did you mean 'tool_trajectory_avg_score'?); "
            "known criteria: bleu, coherence,",
        ),
        (
            {"tool_trajectory_avg_score": {"threshold": 1.0, "ignore_arg": True}},
            "criterion 'tool_trajectory_avg_score': unknown key 'ignore_arg'; it takes: threshold, ignore_args,",
        ),
    ],
)
def test_a_typo_in_test_config_exits_2_before_anything_runs(evalset_dir, criteria, message):
    (evalset_dir / "test_config.json").write_text(json.dumps({"criteria": criteria}))
    result = run_cli(evalset_dir, "eval", "weather.evalset.json", "--agent", "weather_agent:good")
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith(f"error: test_config.json: {message}"), result.stderr
    assert result.stderr.count("\n") == 1
    assert not (evalset_dir / "toolpath.db").exists()


def test_from_results_scores_what_adk_recorded(evalset_dir):
    pytest.importorskip("google.adk.evaluation.local_eval_set_results_manager")
    from tests.helpers.adk_records import case_result, save_history, weather_turns

    save_history(evalset_dir, "weather_app", "weather", [case_result("weather", "paris", weather_turns())])
    result = run_cli(evalset_dir, "eval", "--from-results", "weather_app/.adk/eval_history", "--output", "r.json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 case(s): 0 passed, 1 failed" in result.stdout
    assert "tool calls" in result.stdout and "model calls" in result.stdout
    assert "actual tools:   get_weather(city='London')" in result.stdout
    [case] = json.loads((evalset_dir / "r.json").read_text())["eval_cases"]
    assert case["metrics"]["tool_trajectory_avg_score"]["per_invocation_status"] == ["PASSED", "FAILED"]
    assert (case["efficiency"]["tool_call_count_v1"], case["efficiency"]["token_usage_v1"]) == (0.5, 332.5)
    assert [t["duration_details"]["framework_seconds"] for t in case["efficiency"]["per_invocation"]] == [0.1, 0.1]
    lenient = evalset_dir / "lenient.json"
    lenient.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.5}}))
    again = run_cli(evalset_dir, "eval", "--from-results", "weather_app", "--config", "lenient.json", "--quiet")
    assert again.returncode == 0, again.stdout + again.stderr
    wrong = run_cli(evalset_dir, "eval", "--from-results", "weather_app", "--agent", "weather_agent:good")
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "error: --from-results scores what ADK recorded: give no --agent, --metrics, --runs or --fresh\n",
    )


def test_adk_history_is_read_by_adks_own_manager(evalset_dir):
    pytest.importorskip("google.adk.evaluation.local_eval_set_results_manager")
    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager

    result = run_cli(
        evalset_dir, "eval", "weather.test.json", "--agent", "weather_agent:good", "--adk-history", "weather_app"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ADK eval history: weather_app/.adk/eval_history/weather_app_weather_" in result.stdout
    manager = LocalEvalSetResultsManager(agents_dir=str(evalset_dir))
    [name] = manager.list_eval_set_results("weather_app")
    [case] = manager.get_eval_set_result("weather_app", name).eval_case_results
    assert (case.eval_set_id, case.eval_id, case.final_eval_status) == (
        "weather",
        "weather.test.json",
        EvalStatus.PASSED,
    )
    names = [m.metric_name for m in case.overall_eval_metric_results]
    assert names == [
        "tool_trajectory_avg_score",
        "response_match_score",
        "tool_call_count_v1",
        "inference_call_count_v1",
        "token_usage_v1",
        "invocation_duration_v1",
    ]
    turn = case.eval_metric_result_per_invocation[1]
    assert turn.actual_invocation.final_response.parts[0].text == "The weather in Paris is sunny, 20C."
    assert [m.eval_status for m in turn.eval_metric_results][:2] == [EvalStatus.PASSED, EvalStatus.PASSED]
