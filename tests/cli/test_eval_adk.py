"""`toolpath eval` and `toolpath replay` of a real ADK agent folder, with no glue code and no environment variable:
the stored trajectories are what the tools received, the answers are joined as ADK joins them, the run says that
ADK's own tool spans carried no arguments, and an object toolpath cannot run is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import SPANS, adk_agent
from tests.helpers.builders import load_spans
from tests.helpers.cli import run_cli
from toolpath.collector.reconstruct import build_invocations
from toolpath.store.store import Store

NO_CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": None}
"""ADK's default: its tool spans carry no arguments."""


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    """A working directory with the ``home_agent`` folder and ``home.evalset.json``."""
    adk_agent.write_agent_package(tmp_path)
    adk_agent.RECEIVED.clear()
    return tmp_path


@pytest.mark.parametrize("agent", ["home_agent.agent:root_agent", "home_agent"])  # a path is refused: test_bad_input
def test_eval_set_against_an_adk_agent(agent_dir, agent):
    result = run_cli(agent_dir, "eval", "home.evalset.json", "--agent", agent, "--output", "out.json", env=NO_CONTENT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 case(s): 2 passed, 0 failed" in result.stdout
    cases = json.loads((agent_dir / "out.json").read_text())["eval_cases"]
    assert [(c["eval_id"], c["status"]) for c in cases] == [("status", "PASSED"), ("home_then_dim", "PASSED")]
    store = Store(f"sqlite:///{agent_dir / 'toolpath.db'}")
    invocations = [inv for case in cases for inv in store.get_session(case["sessions"][0]).invocations]
    calls = [c for inv in invocations for c in inv.tool_calls if c.name != "transfer_to_agent"]
    assert [(c.name, c.args, c.call_id) for c in calls] == [(r["name"], r["args"], r["id"]) for r in adk_agent.RECEIVED]
    assert [inv.response for inv in invocations] == [
        "The hall light is on at 80%.\nThe living room is at 20.5 °C.",
        "This is flat 7.",
        "Dimmed the hall light to 30%.",
    ]
    assert [r["state"] for r in adk_agent.RECEIVED[2:]] == [{"home": "flat 7", "owner": "ana"}] * 2
    assert all(inv.attributes.get("toolpath.content_missing") for inv in invocations)

    shown = run_cli(agent_dir, "sessions", "show", cases[0]["sessions"][0])
    assert shown.returncode == 0, shown.stderr
    assert "get_device(device_id='light-hall')" in shown.stdout
    note = "⚠ #1: the tool spans recorded no arguments; the arguments shown come from the agent's own record"
    assert note in " ".join(shown.stdout.split())


def test_report_and_replay_of_an_adk_run(agent_dir):
    ran = run_cli(agent_dir, "eval", "home.evalset.json", "--agent", "home_agent", "--output", "out.json")
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.split("(run ")[1].split(")")[0]
    report = run_cli(agent_dir, "report", "--run", run_id, "--html", "report.html")
    assert report.returncode == 0, report.stderr
    page = (agent_dir / "report.html").read_text()
    assert page.count("content-missing") == 3 and "agent&#x27;s own record" in page
    session = json.loads((agent_dir / "out.json").read_text())["eval_cases"][1]["sessions"][0]
    replayed = run_cli(agent_dir, "replay", "--agent", "home_agent", "--session", session, "--output", "replay.json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    replay = json.loads((agent_dir / "replay.json").read_text())
    assert replay["changed_sessions"] == []
    [turns] = [s["turns"] for s in replay["sessions"]]
    assert [[(c["tool_name"], c["tool_input"]) for c in t["predicted_trajectory"]] for t in turns] == [
        [("get_home", {})],
        [("transfer_to_agent", {"agent_name": "lights"}), ("set_light", {"device_id": "light-hall", "brightness": 30})],
    ]
    # each call as the agent made it: its result, its id, and the agent that made it (a transfer hands over)
    assert [[c["agent_name"] for c in t["predicted_trajectory"]] for t in turns] == [["home"], ["home", "lights"]]
    assert all(c["id"] for t in turns for c in t["predicted_trajectory"])


def test_sessions_show_flags_a_content_less_trace(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'toolpath.db'}")
    spans = load_spans("adk-v2-nocontent")
    store.write(build_invocations(spans), spans)
    shown = run_cli(tmp_path, "sessions", "show", "home-session-0001")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "⚠ #1: 2 tool call(s) recorded without their arguments (stored as {})" in text
    assert "⚠ #2: 3 tool call(s) recorded without their arguments" in text
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in text
    expected = json.loads((SPANS / "adk-v2-nocontent.shared.expected.json").read_text())
    assert len(expected["invocations"]) == 2


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("home_agent.agent:DEVICES", "error: --agent 'home_agent.agent:DEVICES': cannot run a dict as an agent: give "),
        ("json", "error: --agent 'json': module json exposes no root_agent"),
        ("home_agent.agent:LlmAgent", "error: --agent 'home_agent.agent:LlmAgent': cannot run the class LlmAgent"),
    ],
)
def test_what_cannot_be_run_is_one_error_line(agent_dir, agent, message):
    (agent_dir / "home_agent" / "agent.py").write_text(
        "from google.adk.agents import LlmAgent\nfrom tests.helpers.adk_agent import DEVICES\n"
    )
    result = run_cli(agent_dir, "eval", "home.evalset.json", "--agent", agent)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (agent_dir / "toolpath.db").exists()
    replay = run_cli(agent_dir, "replay", "--agent", agent)
    assert replay.returncode == 2 and replay.stderr.startswith(message.replace("eval", "replay"))
