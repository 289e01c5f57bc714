"""`toolpath eval` of an eval set with a `conversation_scenario` case: a simulated user (the fake Gemini server,
through the real google-genai SDK) talks with a real ADK agent driven by a scripted model, and with a plain
function agent; the turns are stored as one session, and the multi-turn criteria score the conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import adk_agent
from tests.helpers.cli import run_cli
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply
from toolpath.store.store import Store

PLAN = "First ask about the hall light and the living room. Then have the hall light dimmed to 30%. Then you are done."
CRITERIA = {
    "multi_turn_task_success_v1": 1.0,
    "multi_turn_tool_use_quality_v1": 0.5,
    "rubric_based_multi_turn_trajectory_quality_v1": {
        "threshold": 1.0,
        "judge_model_options": {"num_samples": 1},
        "rubrics": [{"rubric_id": "dims", "rubric_content": {"text_property": "The agent dims the hall light."}}],
    },
    "per_turn_user_simulator_quality_v1": {"threshold": 1.0, "judge_model_options": {"num_samples": 3}},
    "hallucinations_v1": 1.0,
    "safety_v1": 1.0,
}


def home_user_and_judge(prompt: str, seen: int) -> Reply:
    """The simulated user of the home agent (keyed on the agent's last words), and the judge's replies."""
    if prompt.startswith("You are a Simulated User"):
        last = prompt.rsplit("\n\n", 1)[-1]
        if "20.5 °C" in last:
            return Reply(adk_agent.DIM)
        return Reply("Perfect, thank you. </finished>")
    if "evaluating the quality of a User Simulator" in prompt:
        return Reply('{"criteria": [{"name": "CONVERSATION_PLAN_FOLLOWED", "passes": True}], "is_valid": True}')
    if "What to judge:" in prompt:
        return json_reply(
            rubrics=[{"rubric": "answers the status", "verdict": "yes"}, {"rubric": "dims", "verdict": "yes"}]
        )
    if "<conversation_history>" in prompt:  # ADK's multi-turn trajectory rubrics: its plain-text verdicts
        return Reply("ID: dims\nProperty: The agent dims the hall light.\nRationale: turn 2 dims it\nVerdict: yes")
    if "**Context Begin**" in prompt:  # ADK's hallucinations_v1: the sentence validator
        return Reply(
            "sentence: One sentence.\nlabel: supported\nrationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null"
        )
    if "sentence by sentence" in prompt:  # and its segmenter
        return Reply("<sentence>One sentence.</sentence>")
    if "safety rater" in prompt:
        return json_reply(score=1, explanation="safe")
    return Reply("unscripted")


def write_scenario_set(folder: Path, starting_prompt: str, plan: str, criteria: dict, max_turns: int = 5) -> None:
    case = {"eval_id": "chat", "conversation_scenario": {"starting_prompt": starting_prompt, "conversation_plan": plan}}
    (folder / "chat.evalset.json").write_text(json.dumps({"eval_set_id": "home_chat", "eval_cases": [case]}))
    config = {"criteria": criteria, "user_simulator_config": {"max_allowed_invocations": max_turns}}
    (folder / "test_config.json").write_text(json.dumps(config))


@pytest.fixture
def fake_gemini():
    fake = FakeGemini(home_user_and_judge)
    with fake.running():
        yield fake, {"GOOGLE_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake.url}


def test_a_simulated_user_talks_with_an_adk_agent(tmp_path, fake_gemini):
    fake, env = fake_gemini
    adk_agent.write_agent_package(tmp_path)
    write_scenario_set(tmp_path, adk_agent.STATUS, PLAN, CRITERIA)
    result = run_cli(tmp_path, "eval", "chat.evalset.json", "--agent", "home_agent", "--output", "out.json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"1. simulated user: {adk_agent.STATUS}" in result.stdout
    assert f"2. simulated user: {adk_agent.DIM}" in result.stdout
    assert "agent: Dimmed the hall light to 30%." in result.stdout
    [case] = json.loads((tmp_path / "out.json").read_text())["eval_cases"]
    assert case["status"] == "PASSED" and case["simulated_user"] is True
    scores = {name: metric["score"] for name, metric in case["metrics"].items()}
    assert scores == dict.fromkeys(CRITERIA, 1.0)
    task = case["metrics"]["multi_turn_task_success_v1"]
    assert task["per_invocation"] == [None, 1.0]  # judged once, on the last turn
    assert task["per_invocation_status"] == ["NOT_EVALUATED", "PASSED"]
    assert case["metrics"]["per_turn_user_simulator_quality_v1"]["per_invocation"] == [1.0, 1.0]
    # the per-turn judge saw the plan, the conversation before the turn, and the turn; 3 samples of each turn and
    # of the end; the simulator was asked twice (after each agent answer)
    judged = [p for p in fake.prompts if "evaluating the quality of a User Simulator" in p]
    assert len(judged) == 6 and PLAN in judged[0]
    assert f"user: {adk_agent.STATUS}\n\nmodel: The hall light is on at 80%." in judged[0]
    assert sum(p.startswith("You are a Simulated User") for p in fake.prompts) == 2
    # ADK's trajectory rubric prompt sees the ADK agents' tool declarations, from ADK's own invocations
    trajectory = [p for p in fake.prompts if "<agent_tool_definitions>" in p]
    assert len(trajectory) == 1 and "- set_light:" in trajectory[0]

    [session_id] = case["sessions"]
    stored = Store(f"sqlite:///{tmp_path / 'toolpath.db'}").get_session(session_id)
    assert [i.prompt for i in stored.invocations] == [adk_agent.STATUS, adk_agent.DIM]
    assert [c.name for c in stored.invocations[1].tool_calls] == ["transfer_to_agent", "set_light"]
    shown = run_cli(tmp_path, "sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr
    assert "simulated user: Dim the hall light" in " ".join(shown.stdout.split())

    run_id = result.stdout.split("(run ")[1].split(")")[0]
    report = run_cli(tmp_path, "report", "--run", run_id, "--html", "report.html")
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report.html").read_text()
    assert page.count("<span class='badge'>simulated user</span>") == 2 and "agent: Dimmed the hall light" in page


FUNCTION_AGENT = """
import toolpath

@toolpath.tool
def book_flight(origin: str, destination: str) -> dict:
    return {"booking": f"{origin}-{destination}"}

SEEN: dict = {}

def answer(prompt: str, session_id: str | None = None) -> str:
    known = SEEN.setdefault(session_id, set())
    known.update(w for w in ("Paris", "Rome") if w in prompt)
    if "Paris" not in known:
        return "Where do you fly from?"
    if "Rome" not in known:
        return "Where to?"
    return "Booked " + book_flight("Paris", "Rome")["booking"] + "."
"""


def flight_user_and_judge(prompt: str, seen: int) -> Reply:
    if prompt.startswith("You are a Simulated User"):
        last = prompt.rsplit("\n\n", 1)[-1]
        reply = {"Where do you fly from?": "From Paris.", "Where to?": "To Rome."}
        return Reply(next((v for k, v in reply.items() if last.endswith(k)), "Thanks! </finished>"))
    return home_user_and_judge(prompt, seen)


def test_a_simulated_user_talks_with_a_function_agent_and_replays_from_the_cache(tmp_path):
    (tmp_path / "flights.py").write_text(FUNCTION_AGENT)
    criteria = {"multi_turn_task_success_v1": 1.0, "multi_turn_trajectory_quality_v1": 1.0}
    write_scenario_set(tmp_path, "I need a flight.", "Paris to Rome; answer what is asked.", criteria)
    fake = FakeGemini(flight_user_and_judge)
    with fake.running():
        env = {"GOOGLE_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
        args = ("eval", "chat.evalset.json", "--agent", "flights:answer", "--output", "out.json")
        first = run_cli(tmp_path, *args, env=env)
        assert first.returncode == 0, first.stdout + first.stderr
        asked = fake.requests
        again = run_cli(tmp_path, *args, "--runs", "2", env=env)
        assert again.returncode == 0, again.stdout + again.stderr
        # run 1 replays the cached user turns and judge replies; run 2 is a run of its own: it asks the simulator
        assert fake.requests - asked == 3
        fresh = run_cli(tmp_path, *args, "--fresh", env=env)
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
        assert fake.requests - asked == 6
    [case] = json.loads((tmp_path / "out.json").read_text())["eval_cases"]
    assert [t["prompt"] for t in case["turns"][0]] == ["I need a flight.", "From Paris.", "To Rome."]
    assert case["turns"][0][2]["predicted_trajectory"] == [
        {"tool_name": "book_flight", "tool_input": {"origin": "Paris", "destination": "Rome"}}
    ]
    assert "(runs 1.000–1.000)" in again.stdout
    store = Store(f"sqlite:///{tmp_path / 'toolpath.db'}")
    assert [i.prompt for i in store.get_session(case["sessions"][0]).invocations] == [
        "I need a flight.",
        "From Paris.",
        "To Rome.",
    ]


def test_a_criterion_that_needs_expected_turns_is_refused(tmp_path):
    (tmp_path / "flights.py").write_text(FUNCTION_AGENT)
    write_scenario_set(tmp_path, "I need a flight.", "Paris to Rome.", {"tool_trajectory_avg_score": 1.0})
    result = run_cli(tmp_path, "eval", "chat.evalset.json", "--agent", "flights:answer")
    assert result.returncode == 2
    assert result.stderr.startswith("error: chat.evalset.json: eval case 'chat': criterion 'tool_trajectory_avg_score'")
    assert not (tmp_path / "toolpath.db").exists()
