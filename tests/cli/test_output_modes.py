"""Every file a command writes is its user's alone: the store it records into, `eval --output`, `export --output`
(each format), `report --html`, `replay --output`, ADK eval history, created 0600 whatever the umask, through a
temporary file renamed into place (none is left behind); an output that exists keeps its mode, and is named in a
warning when other users may read it."""

from __future__ import annotations

import json
import logging

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.file_modes import UMASKS, mode_of, umask

AGENT = """
import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny"}

@toolpath.agent(name="forecaster")
def answer(prompt: str) -> str:
    city = prompt.split()[-1]
    get_weather(city)
    return f"Sunny in {city}."
"""
CASES = [
    {
        "prompt": "weather in Oslo",
        "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Oslo"}}],
    }
]
STORE = ("--store", "sqlite:///runs.db")


def _ok(cwd, *args: str) -> None:
    result = run_cli(cwd, *args)
    assert result.returncode in (0, 1), result.stderr  # 1: a case failed its pass mark; the files are written
    assert "error:" not in result.stderr, result.stderr


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_every_file_a_command_writes_is_0600(tmp_path, mask):
    (tmp_path / "weather_agent.py").write_text(AGENT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / "app").mkdir()
    before = {p.name for p in tmp_path.iterdir()}
    with umask(mask):
        metrics = ("--metrics", "trajectory_exact_match")
        _ok(
            tmp_path,
            "eval",
            "cases.jsonl",
            *metrics,
            "--agent",
            "weather_agent:answer",
            *STORE,
            "--output",
            "eval.json",
        )
        for fmt, name in (("evalset", "cases.evalset.json"), ("jsonl", "rows.jsonl"), ("agent_data", "agent.jsonl")):
            _ok(tmp_path, "export", "--format", fmt, *STORE, "--output", name)
        _ok(tmp_path, "report", *STORE, "--html", "report.html")
        _ok(tmp_path, "replay", "--agent", "weather_agent:answer", *STORE, *metrics, "--output", "replay.json")
        recorded = ("--from-store", *STORE, "--output", "recorded.json", "--adk-history", "app")
        _ok(tmp_path, "eval", "cases.evalset.json", *recorded)
    written = sorted(p.name for p in tmp_path.iterdir() if p.name not in before)
    assert [n for n in written if not n.startswith("runs.db")] == [
        "agent.jsonl",
        "cases.evalset.json",
        "eval.json",
        "recorded.json",
        "replay.json",
        "report.html",
        "rows.jsonl",
    ]
    history = list((tmp_path / "app" / ".adk" / "eval_history").iterdir())
    assert len(history) == 1 and history[0].name.endswith(".evalset_result.json")
    files = [tmp_path / n for n in written] + history
    assert "runs.db" in written
    assert {f.name: oct(mode_of(f)) for f in files} == {f.name: oct(0o600) for f in files}
    assert json.loads((tmp_path / "recorded.json").read_text())["pairings"][0]["sessions"]  # a real output


def test_an_output_that_exists_keeps_its_mode_and_is_named_when_others_may_read_it(tmp_path, caplog):
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({**c, "predicted_trajectory": []}) + "\n" for c in CASES))
    shared = tmp_path / "eval.json"
    shared.write_text("old results")
    shared.chmod(0o644)
    caplog.set_level(logging.WARNING, logger="toolpath.private_files")
    _ok(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--output", "eval.json")
    assert json.loads(shared.read_text())["summary_metrics"]["row_count"] == 1
    assert mode_of(shared) == 0o644
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolpath.private_files"]
    assert len(warnings) == 1 and "may read eval.json (mode 0644), which holds prompts, answers" in warnings[0], (
        warnings
    )
