"""`toolpath replay`, `export` and `report`: record sessions from one agent version, replay them against a changed
one, export recorded traffic as eval data, and look at the HTML report in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.chromium import chromium_dom
from tests.helpers.cli import run_cli, run_script

AGENTS = """
import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny", "temp": 20}

@toolpath.tool
def book_table(city: str, people: int) -> dict:
    return {"city": city, "people": people, "booked": True}

def plan(prompt: str, *, v2: bool) -> str:
    city = prompt.split()[-1].strip("?.")
    if "book" in prompt:
        people = 4 if v2 else 2          # v2 books for four: an argument changed
        book_table(city, people)
        return f"Booked in {city}."
    if "weather" in prompt:
        if v2 and city == "Oslo":         # v2 checks Oslo twice: a call added
            get_weather(city)
        get_weather(city)
        return f"Sunny in {city}."
    return "Hello!"

@toolpath.agent(name="concierge")
def v1(prompt: str) -> str:
    return plan(prompt, v2=False)

@toolpath.agent(name="concierge")
def v2(prompt: str) -> str:
    return plan(prompt, v2=True)
"""

RECORD = """
import sys, toolpath
from agents import v1
toolpath.init(store=sys.argv[1])
conversations = {
    "s-paris": ["hello", "weather in Paris"],
    "s-oslo": ["weather in Oslo", "hello"],
    "s-book": ["book a table in Rome", "weather in Rome"],
    "s-lisbon": ["weather in Lisbon"],
}
for session, prompts in conversations.items():
    for prompt in prompts:
        v1(prompt, session_id=session)
toolpath.shutdown()
"""


@pytest.fixture
def recorded(tmp_path) -> Path:
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "record.py").write_text(RECORD)
    run_script(tmp_path, "record.py", "sqlite:///traffic.db")
    return tmp_path


def test_replay_shows_exactly_the_sessions_whose_trajectory_changed(recorded):
    store = ["--store", "sqlite:///traffic.db"]
    result = run_cli(recorded, "replay", "--agent", "agents:v2", *store, "--threshold", "trajectory_exact_match=1.0",
                 "--output", "replay.json")  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    out = json.loads((recorded / "replay.json").read_text())
    assert sorted(out["changed_sessions"]) == ["s-book", "s-oslo"]
    assert out["failed_thresholds"] == {"trajectory_exact_match": pytest.approx(5 / 7)}
    by_session = {s["original_session_id"]: s for s in out["sessions"]}
    assert [len(s["turns"]) for s in by_session.values()] == [2, 2, 2, 1]  # replayed turn by turn
    oslo = by_session["s-oslo"]["turns"][0]["changes"]
    assert [(c["kind"], c["tool"]) for c in oslo] == [("added", "get_weather")]
    book = by_session["s-book"]["turns"][0]["changes"]
    assert [(c["kind"], c["tool"], c["args"]) for c in book] == [
        ("args_changed", "book_table", {"changed": ["people"]})
    ]
    assert "2 of 4 session(s) changed" in result.stdout and "FAILED trajectory_exact_match" in result.stdout
    assert "~ book_table arguments: changed people" in result.stdout

    # the replayed runs were traced into the store as new sessions
    sessions = json.loads(run_cli(recorded, "sessions", "list", "--json", *store).stdout)
    assert sum(s["session_id"].startswith("replay-") for s in sessions) == 4

    same = run_cli(recorded, "replay", "--agent", "agents:v1", *store, "--threshold", "trajectory_exact_match=1.0",
               "--quiet")  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr
    assert "0 changed" in same.stdout

    chosen = run_cli(recorded, "replay", "--agent", "agents:v2", *store, "--session", "s-paris", "--quiet")
    assert chosen.returncode == 0 and "1 session(s), 0 changed" in chosen.stdout
    missing = run_cli(recorded, "replay", "--agent", "agents:v2", *store, "--session", "nope")
    assert missing.returncode == 2 and "no recorded session 'nope'" in missing.stderr

    report = run_cli(recorded, "report", "--replay", out["run_id"], "--html", "replay.html", *store)
    assert report.returncode == 0, report.stderr
    page = (recorded / "replay.html").read_text()
    assert "http://" not in page and "https://" not in page  # self-contained: nothing fetched
    dom = chromium_dom(recorded / "replay.html", recorded / "replay.png")
    changed = set(re.findall(r"<tr class=\"replayed\" data-session=\"([^\"]+)\" data-changed=\"true\"", dom))
    assert changed == {"s-book", "s-oslo"}
    assert len(re.findall(r"<tr class=\"case\"[^>]*data-status=\"bad\"", dom)) == 2  # the two changed turns
    assert "key-changed" in dom and "call added" in dom


def test_replay_thresholds_follow_each_metric_s_direction(recorded):
    store = ["--store", "sqlite:///traffic.db", "--quiet"]
    # v2 calls the weather twice for Oslo: at most 1 redundant call per turn on average passes, at most 0 fails
    args = ["replay", "--agent", "agents:v2", *store, "--metrics", "redundant_tool_calls,tool_call_count"]
    assert run_cli(recorded, *args, "--threshold", "redundant_tool_calls=1").returncode == 0
    failed = run_cli(recorded, *args, "--threshold", "redundant_tool_calls=0", "--threshold", "tool_call_count=5")
    assert failed.returncode == 1
    assert "FAILED redundant_tool_calls: mean 0.143, needed at most 0" in failed.stdout
    assert "tool_call_count" not in failed.stdout.split("FAILED", 1)[1]  # 1 call a turn is well under 5


def test_exported_eval_set_scores_one_against_the_same_agent(recorded):
    store = ["--store", "sqlite:///traffic.db"]
    exported = run_cli(recorded, "export", "--format", "evalset", *store, "--output", "traffic.evalset.json")
    assert exported.returncode == 0, exported.stderr
    assert "wrote 4 session(s), 7 turn(s)" in exported.stdout
    (recorded / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    result = run_cli(recorded, "eval", "traffic.evalset.json", "--agent", "agents:v1", "--output", "ev.json")
    assert result.returncode == 0, result.stdout + result.stderr
    cases = json.loads((recorded / "ev.json").read_text())["eval_cases"]
    assert len(cases) == 4
    assert all(c["metrics"]["tool_trajectory_avg_score"]["score"] == 1.0 for c in cases)
    changed = run_cli(recorded, "eval", "traffic.evalset.json", "--agent", "agents:v2", "--output", "ev2.json")
    assert changed.returncode == 1  # the changed version fails the recorded trajectories
    failed = {
        c["eval_id"] for c in json.loads((recorded / "ev2.json").read_text())["eval_cases"] if c["status"] == "FAILED"
    }
    assert failed == {"s-oslo", "s-book"}

    rows = run_cli(recorded, "export", "--format", "jsonl", *store, "--output", "traffic.jsonl")
    assert rows.returncode == 0
    first = json.loads((recorded / "traffic.jsonl").read_text().splitlines()[0])
    assert set(first) == {"case_id", "session_id", "prompt", "reference", "reference_trajectory", "answered_by"}
    scored = run_cli(recorded, "eval", "traffic.jsonl", "--agent", "agents:v1", "--metrics", "trajectory_exact_match",
                 "--output", "rows.json")  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    table = json.loads((recorded / "rows.json").read_text())["metrics_table"]
    assert [r["trajectory_exact_match/score"] for r in table] == [1.0] * 7


def test_report_of_a_dataset_run_and_bad_ids(recorded):
    store = ["--store", "sqlite:///traffic.db"]
    scored = run_cli(recorded, "eval", "--from-store", "--metrics", "tool_call_count,redundant_tool_calls", *store)
    assert scored.returncode == 0, scored.stderr
    run_id = scored.stdout.split("run ")[-1].split()[0].strip(":")
    report = run_cli(recorded, "report", "--run", run_id, "--html", "run.html", *store)
    assert report.returncode == 0, report.stderr
    dom = chromium_dom(recorded / "run.html", recorded / "run.png")
    assert dom.count('<tr class="case"') == 7 and "tool_call_count" in dom
    missing = run_cli(recorded, "report", "--run", "nope", "--html", "x.html", *store)
    assert missing.returncode == 2 and "no run 'nope'" in missing.stderr
    both = run_cli(recorded, "report", "--run", run_id, "--replay", run_id, "--html", "x.html", *store)
    assert both.returncode == 2 and "give one of --run ID or --replay ID" in both.stderr
    not_replay = run_cli(recorded, "report", "--replay", run_id, "--html", "x.html", *store)
    assert not_replay.returncode == 2 and f"{run_id!r} is a dataset run, not a replay (use --run)" in not_replay.stderr
    latest = run_cli(recorded, "report", "--html", "latest.html", *store)
    assert latest.returncode == 0, latest.stderr
    assert latest.stdout.startswith(f"reporting the latest dataset run, {run_id}")
    assert f"toolpath dataset {run_id}" in (recorded / "latest.html").read_text()
