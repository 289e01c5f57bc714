"""Online scoring against an ADK eval set keeps an evaluation run of the set: a real `toolpath collect --online`
(one process, and two `--workers` sharing a run) receives an agent's spans over OTLP, and `toolpath runs show` of
its online run gives each turn the score and status `toolpath eval SET --from-store` gives it from the same
traffic; `runs list` names the run as online, and `report --run` renders it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import toolpath
from tests.helpers import ADK_FIXTURES
from tests.helpers.cli import run_cli
from tests.helpers.collector import TOKEN, Collector
from tests.helpers.weather import WEATHER_AGENT_MODULE
from toolpath.store.online_reads import latest_scored
from toolpath.store.store import Store
from toolpath.ui import create_app
from toolpath.ui.compare import compare_view


def online_runs(store: Store) -> list[dict]:
    return [r for r in store.list_eval_runs(limit=None) if r["dataset"].startswith("online ")]


def played_through(collector: Collector, cwd: Path, turns: int) -> dict:
    """The live `toolpath eval SET --agent` run of the agent, its spans sent over OTLP/HTTP to ``collector``;
    the online run once ``turns`` turns are in it."""
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{collector.url}/v1/traces",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"authorization=Bearer%20{TOKEN}",
    }
    env.pop("TOOLPATH_STORE", None)
    live = subprocess.run(
        [sys.executable, "-m", "toolpath.cli", "eval", "weather.evalset.json", "--agent", "weather_agent:wrong",
         "--store", "agent.db", "--output", "live.json"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert live.returncode == 1, live.stdout + live.stderr  # the wrong city fails the trajectory criterion
    store = collector.store()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = online_runs(store)
        run = store.get_eval_run(runs[0]["run_id"]) if runs else None
        if run and sum(len(r["row"]["online"]["scored_turns"]) for r in run["results"]) >= turns:
            break
        time.sleep(0.2)
    store.close()
    assert run and sum(len(r["row"]["online"]["scored_turns"]) for r in run["results"]) == turns, runs
    return json.loads((cwd / "live.json").read_text())


@pytest.mark.parametrize("workers", [1, 2])
def test_online_run_of_an_eval_set_scores_as_the_recorded_run(tmp_path, workers):
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "weather_agent.py").write_text(WEATHER_AGENT_MODULE)
    (tmp_path / "online.toml").write_text('reference_dataset = "weather.evalset.json"\npoll_seconds = 0.05\n')
    extra = ("--workers", str(workers)) if workers > 1 else ()
    collector = Collector(tmp_path, None, "--online", str(tmp_path / "online.toml"), *extra).start()
    try:
        live = played_through(collector, tmp_path, turns=2)
    finally:
        collector.stop()
    db = f"sqlite:///{collector.db}"

    listed = run_cli(tmp_path, "runs", "list", "--store", db, "--json")
    [run] = [r for r in json.loads(listed.stdout) if r["dataset"].startswith("online ")]  # one run, any workers
    [case] = live["eval_cases"]
    assert run["kind"] == "evalset" and run["dataset"].startswith(f"online {case['eval_set_id']} ")
    shown = run_cli(tmp_path, "runs", "show", run["run_id"], "--store", db, "--json")
    assert shown.returncode == 0, shown.stderr
    online = json.loads(shown.stdout)

    again = run_cli(tmp_path, "eval", "weather.evalset.json", "--from-store", "--store", db, "--output", "again.json")
    assert again.returncode == 1, again.stdout + again.stderr
    [recorded] = json.loads((tmp_path / "again.json").read_text())["eval_cases"]
    assert recorded["sessions"] and recorded["metrics"].keys() == case["metrics"].keys()

    [result] = online["results"]  # the session's two turns, scored one at a time, are one case
    assert result["case_id"] == f"{case['eval_set_id']}/{case['eval_id']}"
    assert result["row"]["sessions"] == recorded["sessions"]
    assert result["row"]["online"]["scored_turns"] == [1, 2]
    turns = result["row"]["turns"][0]
    assert [t["prompt"].casefold() for t in turns] == ["hi", "what is the weather in paris?"]
    assert {t["session_id"] for t in turns} == set(recorded["sessions"])
    assert result["invocation_id"] in {t["invocation_id"] for t in turns}
    for name, criterion in recorded["metrics"].items():  # the recorded run's scores and statuses, turn and case
        mine = result["row"]["metrics"][name]
        assert result["scores"][name] == pytest.approx(criterion["score"])
        assert mine["per_invocation"] == criterion["per_invocation"]
        assert mine["per_invocation_status"] == criterion["per_invocation_status"]
        assert (mine["status"], mine["threshold"]) == (criterion["status"], criterion["threshold"])
        assert online["summary"][f"{name}/mean"] == pytest.approx(criterion["score"])
    assert result["status"] == recorded["status"] == "FAILED"  # London is not Paris
    assert run["failed_count"] == 1 and run["row_count"] == 1

    # the UI's comparison of the online run with the recorded run of the same traffic: one case, nothing changed
    store = Store(db)
    [saved] = [r for r in store.list_eval_runs(limit=None) if "against recorded sessions" in r["dataset"]]
    compared = compare_view(store.get_eval_run(saved["run_id"]), online)
    store.close()
    [row] = compared["rows"]
    assert row["a"] is not None and row["b"] is not None and row["status_a"] == row["status_b"] == "failed"
    assert not row["changed"] and not row["calls"], row
    assert {s["change"] for s in row["scores"]} == {"same"}

    report = run_cli(tmp_path, "report", "--run", run["run_id"], "--store", db, "--html", "online.html")
    assert report.returncode == 0, report.stderr
    assert "weather in Paris?" in (tmp_path / "online.html").read_text()


@toolpath.agent(name="weather_bot")
def right_city(prompt: str) -> str:
    if "weather" in prompt:
        toolpath.tool(name="get_weather")(lambda city: {"city": city, "sky": "sunny"})(city="Paris")
        return "The weather in Paris is sunny, 20C."
    return "Hello! I can tell you the weather."


def test_each_session_is_a_case_and_a_turn_scored_again_replaces_its_own(tmp_path):
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    config = {"reference_dataset": str(tmp_path / "weather.evalset.json"), "poll_seconds": 0.05}
    tracing = toolpath.init(store=f"sqlite:///{tmp_path / 'agent.db'}", online=config)
    try:
        for session in ("s-1", "s-2"):
            for prompt in ("hi", "what is the weather in Paris?"):
                right_city(prompt, session_id=session)
        toolpath.flush()
        assert tracing.online.drain(20)
        evaluator, store = tracing.online, tracing.store
        [run] = online_runs(store)
        before = store.get_eval_run(run["run_id"])
        # the turns scored again, as after their invocations were rebuilt from more spans
        turns = store.turns_by_id([t["invocation_id"] for r in before["results"] for t in r["row"]["turns"][0]])
        scored = {r["invocation_id"]: [{"metric": m, **s} for m, s in r["scores"].items()]
                  for r in latest_scored(store)}  # fmt: skip
        write = evaluator.run.writer(store, turns, scored)
        with store.redoable_write() as conn:
            write(conn, {t.invocation_id for t in turns})
        after = store.get_eval_run(run["run_id"])
        pages = TestClient(create_app(store, evalsets=tmp_path), base_url="http://127.0.0.1")
        listed, shown = pages.get("/runs"), pages.get(f"/runs/{run['run_id']}")
    finally:
        toolpath.shutdown()
    assert sorted(r["row"]["sessions"][0] for r in before["results"]) == ["s-1", "s-2"]
    assert {r["status"] for r in before["results"]} == {"PASSED"}
    assert [r["scores"] for r in after["results"]] == [r["scores"] for r in before["results"]]
    assert after["row_count"] == 2 and after["failed_count"] == 0
    for name in before["results"][0]["scores"]:
        assert after["summary"][f"{name}/count"] == 2
        assert after["summary"][f"{name}/mean"] == pytest.approx(before["summary"][f"{name}/mean"])
    explanation = after["results"][0]["row"]["metrics"]["tool_trajectory_avg_score"]["explanation"]
    assert explanation == before["results"][0]["row"]["metrics"]["tool_trajectory_avg_score"]["explanation"]
    assert listed.status_code == shown.status_code == 200
    assert run["dataset"] in listed.text  # the UI's runs list names it as online
    for result in after["results"]:  # each case links to its turns' traces
        assert all(t["invocation_id"] in shown.text for t in result["row"]["turns"][0])
