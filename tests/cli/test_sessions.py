"""`toolpath sessions` and `toolpath watch`: recorded sessions listed and shown, as JSON and as tables, and the
online scores of recorded invocations."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import toolpath
from tests.helpers.cli import run_cli
from tests.helpers.weather import bot


def test_sessions_list_and_show_json(demo_dir):
    listed = run_cli(demo_dir, "sessions", "list", "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert Counter(s["agent_name"] for s in sessions) == {
        "smart_home_assistant": 24,
        "smart_home_langgraph": 24,
        "smart_home_app": 24,
    }
    shown = run_cli(demo_dir, "sessions", "show", sessions[0]["session_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    session = json.loads(shown.stdout)
    [inv] = session["invocations"]
    assert set(inv) >= {"prompt", "response", "predicted_trajectory", "latency_seconds", "failure"}
    db = sqlite3.connect(demo_dir / "toolpath.db")
    [(session_id,)] = db.execute(
        "select session_id from invocations where prompt like '%Fahrenheit%' and agent_name = 'smart_home_assistant'"
    ).fetchall()
    fahrenheit = json.loads(run_cli(demo_dir, "sessions", "show", session_id, "--json").stdout)["invocations"]
    assert fahrenheit[0]["predicted_trajectory"] == [
        {"tool_name": "set_temperature", "tool_input": {"location": "bedroom", "temperature": 70.0}}
    ]


def test_sessions_human_output(demo_dir):
    result = run_cli(demo_dir, "sessions", "list")
    assert result.returncode == 0 and "smart_home_assistant" in result.stdout


def test_watch_once_prints_scored_invocations(tmp_path):
    store_url = f"sqlite:///{tmp_path / 'w.db'}"
    tracing = toolpath.init(store=store_url, online={"metrics": ["tool_call_count"], "poll_seconds": 0.05})
    bot("Weather in Paris?")
    toolpath.flush()
    assert tracing.online.drain(20)
    toolpath.shutdown()
    result = run_cli(tmp_path, "watch", "--once", "--store", store_url)
    assert result.returncode == 0, result.stderr
    assert "Weather in Paris?" in result.stdout and "tool_call_count" in result.stdout and "1.00" in result.stdout


def test_sessions_show_names_the_agent_of_each_call_and_answer(tmp_path):
    """ADK's own spans of a multi-agent app (a transfer, an ``AgentTool``) posted to the collector: the sub-agents'
    calls and the transferred turn's answer are theirs, in the JSON and in the table."""
    from tests.helpers import SPANS
    from tests.helpers.collector import TOKEN, post_traces, serving
    from toolpath.store.store import Store

    store = Store(f"sqlite:///{tmp_path / 'toolpath.db'}")
    with serving(store, token=TOKEN) as service:
        body = (SPANS / "adk-v2.scenarios.otlp.pb").read_bytes()
        assert post_traces(f"http://127.0.0.1:{service.options.http_port}", body)[0] == 200
    shown = run_cli(tmp_path, "sessions", "show", "home-session-0002", "--json")
    assert shown.returncode == 0, shown.stderr
    turns = {t["prompt"]: t for t in json.loads(shown.stdout)["invocations"]}
    transfer = turns["Let the thermostat expert set the office to 20 degrees."]
    assert (transfer["agent_name"], transfer["answered_by"]) == ("smart_home_assistant", "thermostat_expert")
    assert [(c["name"], c["agent_name"]) for c in transfer["tool_calls"]] == [
        ("transfer_to_agent", "smart_home_assistant"),
        ("set_temperature", "thermostat_expert"),
    ]
    [advised] = [t for t in turns.values() if t["tool_calls"] and t["tool_calls"][0]["name"] == "energy_advisor"]
    assert [c["agent_name"] for c in advised["tool_calls"]] == ["smart_home_assistant", *["energy_advisor"] * 2]
    assert advised["answered_by"] == "smart_home_assistant"
    table = run_cli(tmp_path, "sessions", "show", "home-session-0002")
    assert "[thermostat_expert] set_temperature(" in table.stdout
    assert "[thermostat_expert] The office is now set to 20" in table.stdout
    assert "[smart_home_assistant]" not in table.stdout  # the turn's own agent goes without saying


def test_sessions_list_says_how_many_it_left_out(demo_dir):
    """72 sessions, 50 listed by default: the rest are counted, with the option that shows them; a full list says
    nothing; the JSON stays a list, the note goes beside it."""
    cut = run_cli(demo_dir, "sessions", "list")
    assert cut.returncode == 0, cut.stderr
    assert "50 of 72 sessions shown, newest first; --limit 72 lists them all" in cut.stdout
    whole = run_cli(demo_dir, "sessions", "list", "--limit", "72")
    assert "sessions shown" not in whole.stdout + whole.stderr
    as_json = run_cli(demo_dir, "sessions", "list", "--json", "--limit", "10")
    assert len(json.loads(as_json.stdout)) == 10 and "10 of 72 sessions shown" in as_json.stderr
    agent = run_cli(demo_dir, "sessions", "list", "--agent-name", "smart_home_app", "--limit", "20")
    assert "20 of 24 sessions shown" in agent.stdout


def test_sessions_show_holds_each_turns_online_scores(tmp_path):
    """The scores the online evaluator stored with a turn are in `sessions show`, table and JSON: metric, score,
    label and, for a failed one, why."""
    store_url = f"sqlite:///{tmp_path / 'w.db'}"
    online = {"metrics": ["tool_call_count", "tool_error_rate"], "poll_seconds": 0.05, "thresholds": {}}
    tracing = toolpath.init(store=store_url, online=online)
    bot("Weather in Paris?", session_id="chat-1")
    toolpath.flush()
    assert tracing.online.drain(20)
    toolpath.shutdown()
    shown = run_cli(tmp_path, "sessions", "show", "chat-1", "--store", store_url, "--json")
    assert shown.returncode == 0, shown.stderr
    [turn] = json.loads(shown.stdout)["invocations"]
    by_metric = {s["metric"]: s for s in turn["online_scores"]}
    assert set(by_metric) == {"tool_call_count", "tool_error_rate"}
    assert by_metric["tool_call_count"]["score"] == 1.0 and by_metric["tool_error_rate"]["score"] == 0.0
    table = run_cli(tmp_path, "sessions", "show", "chat-1", "--store", store_url)
    assert "online" in table.stdout and "tool_call_count 1.000" in " ".join(table.stdout.split())


def test_sessions_list_shows_ids_as_stored(tmp_path):
    """An id or agent name that looks like rich's markup or an emoji code is printed as it is: it is what a user
    copies into `sessions show`."""
    from toolpath.model import Invocation
    from toolpath.store.store import Store

    odd = "chat-[red]x[/red]-:smile:"
    store = Store(f"sqlite:///{tmp_path / 'toolpath.db'}")
    store.write([Invocation(invocation_id="odd-1", session_id=odd, agent_name="[b]bot[/b]", trace_id="a" * 32)])
    store.close()
    listed = run_cli(tmp_path, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert odd in listed.stdout and "[b]bot[/b]" in listed.stdout
    shown = run_cli(tmp_path, "sessions", "show", odd, "--json")
    assert json.loads(shown.stdout)["session_id"] == odd
