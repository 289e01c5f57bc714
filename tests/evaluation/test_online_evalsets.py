"""An ADK eval set as online scoring's reference_dataset: production turns that replay a golden conversation are
scored by its criteria at its thresholds, each turn as the live eval-set run scores that invocation."""

from __future__ import annotations

import json

import pytest

import toolpath
from tests.helpers import ADK_FIXTURES
from toolpath.errors import ConfigError
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_sets
from toolpath.evaluation.online import OnlineConfig, OnlineEvaluator
from toolpath.store.online_reads import latest_scored
from toolpath.store.store import Store

WEATHER = toolpath.tool(name="get_weather")(lambda city: {"city": city, "sky": "sunny", "temp": 20})


@toolpath.agent(name="weather_bot")
def wrong_city(prompt: str) -> str:
    """Answers the weather fixture's questions, looking up London where Paris is expected."""
    if "weather" in prompt:
        WEATHER(city="London")
        return "The weather in London is sunny, 20C."
    return "Hello! I can tell you the weather."


@pytest.fixture
def golden(tmp_path):
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    return tmp_path / "weather.evalset.json"


def test_production_turns_are_scored_by_the_eval_sets_criteria_as_a_live_run(tmp_path, golden):
    config = {"reference_dataset": str(golden), "poll_seconds": 0.05}  # no 'metrics': the criteria are
    tracing = toolpath.init(store=f"sqlite:///{tmp_path / 'agent.db'}", online=config)
    try:
        for prompt in ("hi", "What is the weather in Paris?", "Tell me a joke"):
            wrong_city(prompt)
        toolpath.flush()
        assert tracing.online.drain(20)
        by_prompt = {r["prompt"]: r["scores"] for r in latest_scored(tracing.store)}
        [eval_set] = load_eval_sets(golden)
        live = evaluate_eval_sets([eval_set], wrong_city).cases[0].metrics
    finally:
        toolpath.shutdown()
    criteria = json.loads((tmp_path / "test_config.json").read_text())["criteria"]
    assert set(by_prompt["hi"]) == set(criteria) == set(live)
    for name in criteria:  # each turn's score and pass/fail is the live run's for that invocation
        online = [by_prompt[p][name] for p in ("hi", "What is the weather in Paris?")]
        assert [o["score"] for o in online] == live[name].per_invocation
        labels = {"PASSED": "pass", "FAILED": "fail"}
        assert [o["label"] for o in online] == [labels[s] for s in live[name].per_invocation_status]
    assert by_prompt["What is the weather in Paris?"]["tool_trajectory_avg_score"]["label"] == "fail"
    # a turn that replays no golden conversation has no reference to be scored against
    assert {s["label"] for s in by_prompt["Tell me a joke"].values()} == {"error"}


def test_an_eval_set_reference_brings_its_thresholds_and_metrics_add_to_them(tmp_path, golden):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    config = {
        "reference_dataset": str(golden),
        "metrics": ["tool_call_count"],
        "thresholds": {"response_match_score": 0.5},
    }
    evaluator = OnlineEvaluator(store, config)
    (unit,) = evaluator.units.values()
    assert [m.name for m in unit.metrics] == [
        "tool_call_count",
        "tool_trajectory_avg_score",
        "response_match_score",
    ]
    assert unit.rules["tool_trajectory_avg_score"]["threshold"] == 1.0  # the eval set's test_config.json
    assert unit.rules["response_match_score"]["threshold"] == 0.5  # online.toml's thresholds win
    with pytest.raises(ConfigError, match="both in 'metrics' and a criterion"):
        OnlineEvaluator(store, {"reference_dataset": str(golden), "metrics": ["response_match_score"]})
    with pytest.raises(ConfigError, match="'metrics' names no metric"):
        OnlineConfig.load({"reference_dataset": str(tmp_path / "golden.jsonl"), "metrics": []})
