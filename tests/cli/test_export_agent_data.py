"""`toolpath export --format agent_data`: recorded sessions written as Google's agent traces, which Google's SDK
reads and `toolpath eval` scores; a malformed trace in a dataset is one `error:` line."""

from __future__ import annotations

import json

from tests.helpers.cli import run_cli, run_script

AGENT = """
import toolpath

@toolpath.tool
def get_weather(city: str) -> dict:
    return {"city": city, "sky": "sunny"}

@toolpath.tool
def book_table(city: str, people: int) -> dict:
    return {"booked": True}

@toolpath.agent(name="concierge")
def concierge(prompt: str) -> str:
    city = prompt.split()[-1]
    if "book" in prompt:
        get_weather(city)
        book_table(city, 2)
        return f"Booked in {city}."
    if "weather" in prompt:
        get_weather(city)
        return f"Sunny in {city}."
    return "Hello!"
"""

RECORD = """
import sys, toolpath
from agent import concierge
toolpath.init(store=sys.argv[1])
for session, prompts in {"s-rome": ["hello", "book in Rome"], "s-oslo": ["weather in Oslo"]}.items():
    for prompt in prompts:
        concierge(prompt, session_id=session)
toolpath.shutdown()
"""


def test_exported_agent_data_is_googles_format_and_scores_the_recorded_calls(tmp_path) -> None:
    from agentplatform._genai import _evals_data_converters

    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "record.py").write_text(RECORD)
    run_script(tmp_path, "record.py", "sqlite:///traffic.db")
    store = ["--store", "sqlite:///traffic.db"]
    exported = run_cli(tmp_path, "export", "--format", "agent_data", *store, "--output", "traffic.jsonl")
    assert exported.returncode == 0, exported.stderr
    assert "wrote 2 session(s), 3 turn(s)" in exported.stdout
    rows = [json.loads(line) for line in (tmp_path / "traffic.jsonl").read_text().splitlines()]
    cases = _evals_data_converters._FlattenEvalDataConverter().convert(rows).eval_cases
    rome = next(c for c, r in zip(cases, rows, strict=True) if r["session_id"] == "s-rome").agent_data
    assert [len(t.events) for t in rome.turns] == [2, 6]  # hello / answer; prompt, 2 calls and replies, answer
    assert [p.function_call.name for e in rome.turns[1].events for p in e.content.parts if p.function_call] == [
        "get_weather",
        "book_table",
    ]
    assert rome.agents["concierge"].tools[0].function_declarations[1].name == "book_table"

    scored = run_cli(tmp_path, "eval", "traffic.jsonl", "--metrics", "tool_call_count", "--output", "scores.json")
    assert scored.returncode == 0, scored.stderr
    table = json.loads((tmp_path / "scores.json").read_text())["metrics_table"]
    counts = {row["session_id"]: row["tool_call_count/score"] for row in table}
    assert counts == {"s-rome": 2.0, "s-oslo": 1.0}

    (tmp_path / "bad.jsonl").write_text(json.dumps({"agent_data": {"turns": [{"events": [{"author": 3}]}]}}) + "\n")
    bad = run_cli(tmp_path, "eval", "bad.jsonl", "--metrics", "tool_call_count")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "error: bad.jsonl:1: agent_data.turns[0].events[0].author: must be a non-empty string"
    ]
