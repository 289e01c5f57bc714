"""`toolpath eval` of an agent whose first turn raises: the case is FAILED with no scores and the command exits 1;
the error is in the results table, the JSON output, the HTML report and ADK's eval history, and the failing call
is shown with its arguments and error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import crashing
from tests.helpers.cli import run_cli

CRASHED = f"turn 1: the agent failed: {crashing.ERROR}"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """``crash.evalset.json`` and its ``test_config.json``, and ``crash_agents.py`` exposing an agent of each kind."""
    crashing.crash_evalset(tmp_path)
    (tmp_path / "crash_agents.py").write_text(
        "from tests.helpers import crashing\n\n"
        "function = crashing.build('function')\nlanggraph = crashing.build('langgraph')\n"
        "agent_engine = crashing.build('agent_engine')\nadk = crashing.build('adk')\n"
    )
    return tmp_path


@pytest.mark.parametrize("kind", ["function", "langgraph", "agent_engine", "adk"])
def test_a_crashing_agent_fails_its_case_and_the_command(workdir, kind):
    result = run_cli(workdir, "eval", "crash.evalset.json", "--agent", f"crash_agents:{kind}", "--output", "out.json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 case(s): 0 passed, 1 failed" in result.stdout
    table = result.stdout.split("1 case(s)")[0]
    assert "error" in table and CRASHED in " ".join(table.split())
    assert f"actual tools: crash_tool(level=3) ✗ {crashing.ERROR}" in result.stdout
    [case] = json.loads((workdir / "out.json").read_text())["eval_cases"]
    assert (case["status"], case["error"]) == ("FAILED", CRASHED)
    assert {name: m["score"] for name, m in case["metrics"].items()} == dict.fromkeys(crashing.CRITERIA)


def test_runs_two_with_one_crash_fail_the_command(workdir):
    (workdir / "flaky.py").write_text(
        "from tests.helpers import crashing\n\nturns = []\n\n"
        "def agent(prompt):\n"
        "    turns.append(prompt)\n"
        "    return crashing.crashing_agent(prompt) if len(turns) == 3 else crashing.ANSWER\n"
    )
    result = run_cli(
        workdir, "eval", "crash.evalset.json", "--agent", "flaky:agent", "--runs", "2", "--output", "o.json"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    [case] = json.loads((workdir / "o.json").read_text())["eval_cases"]
    assert (case["status"], case["error"]) == ("FAILED", f"run 2: {CRASHED}")
    assert case["metrics"]["tool_trajectory_avg_score"]["runs"][1]["score"] is None


def test_the_report_and_adk_history_show_the_crash(workdir):
    ran = run_cli(workdir, "eval", "crash.evalset.json", "--agent", "crash_agents:function", "--adk-history", "app")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    run_id = ran.stdout.split("(run ")[1].split(")")[0]
    report = run_cli(workdir, "report", "--run", run_id, "--html", "report.html")
    assert report.returncode == 0, report.stderr
    page = (workdir / "report.html").read_text()
    assert f"<p class='fail case-error'>error: {CRASHED}</p>" in page
    assert "level=3" in page and f"error: {crashing.ERROR}" in page
    [history] = (workdir / "app" / ".adk" / "eval_history").iterdir()
    [written] = json.loads(history.read_text())["eval_case_results"]
    assert (written["final_eval_status"], written["overall_eval_metric_results"]) == (2, [])
