"""Eval sets run against agents of every accepted kind, judged by criteria, saved in the store."""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda

import toolpath
from tests.helpers import ADK_FIXTURES
from tests.helpers.weather import get_weather, good_agent
from toolpath.errors import ConfigError
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set, load_eval_sets
from toolpath.store.store import Store
from toolpath.testing import assert_evalset


def wrong_city_agent(prompt: str) -> str:
    if "weather" in prompt:
        get_weather("London")
        return "The weather in London is sunny, 20C."
    return "Hello! I can tell you the weather."


class TestEvaluateEvalSets:
    def test_passing_agent_on_adk_files(self, tracing):
        result = evaluate_eval_sets(load_eval_sets(ADK_FIXTURES), good_agent)
        assert result.passed
        assert [c.status for c in result.cases] == ["PASSED", "PASSED"]
        metrics = result.cases[0].metrics
        assert metrics["tool_trajectory_avg_score"].score == 1.0
        assert metrics["tool_trajectory_avg_score"].per_invocation == [1.0, 1.0]
        assert metrics["response_match_score"].score == 1.0
        assert result.summary_metrics["row_count"] == 2

    def test_failing_case_names_invocation_and_difference(self, tracing):
        [case] = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], wrong_city_agent).cases
        trajectory = case.metrics["tool_trajectory_avg_score"]
        assert case.status == "FAILED"
        assert (trajectory.score, trajectory.status, trajectory.per_invocation) == (0.5, "FAILED", [1.0, 0.0])
        assert trajectory.explanation == 'invocation 2: call 1: get_weather city: expected "Paris", got "London"'
        response = case.metrics["response_match_score"]
        # "the weather in london is sunny 20c" vs "... paris ...": 6 of 7 unigrams each way; turn 1 exact
        assert response.per_invocation == pytest.approx([1.0, 6 / 7])
        assert response.status == "PASSED"

    def test_turns_share_one_session_per_run(self, tracing, store_url):
        seen: list[tuple[str, str]] = []

        def remembering(prompt: str, session_id: str | None = None) -> str:
            seen.append((session_id, prompt))
            return good_agent(prompt)

        [case] = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], remembering, runs=2).cases
        assert len({s for s, _ in seen}) == 2 and len(seen) == 4
        assert [p for _, p in seen[:2]] == ["hi", "what is the weather in Paris?"]
        toolpath.flush()
        store = Store(store_url)
        for session_id in case.sessions:
            stored = store.get_session(session_id)
            assert [i.prompt for i in stored.invocations] == ["hi", "what is the weather in Paris?"]

    def test_runs_average_and_flaky_agent(self, tracing):
        calls = {"n": 0}

        def flaky(prompt: str) -> str:
            calls["n"] += 1
            return wrong_city_agent(prompt) if calls["n"] > 2 else good_agent(prompt)

        [case] = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], flaky, runs=2).cases
        assert case.metrics["tool_trajectory_avg_score"].score == pytest.approx((1.0 + 0.5) / 2)
        assert case.metrics["tool_trajectory_avg_score"].per_invocation == [1.0, 0.5]

    def test_match_type_options_and_other_criteria(self, tracing):
        def extra_call_agent(prompt: str) -> str:
            get_weather("Oslo")
            return good_agent(prompt)

        eval_set = load_eval_set(ADK_FIXTURES / "weather.test.json")
        criteria = {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
            "trajectory_precision": 0.4,
        }
        [case] = evaluate_eval_sets([eval_set], extra_call_agent, criteria=criteria).cases
        assert case.metrics["tool_trajectory_avg_score"].status == "PASSED"
        assert case.metrics["trajectory_precision"].score == pytest.approx((0 + 0.5) / 2)
        assert case.metrics["trajectory_precision"].status == "FAILED"
        assert case.status == "FAILED"

    def test_judge_criteria_without_credentials_is_a_clear_error(self, tracing, monkeypatch):
        for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
            monkeypatch.delenv(name, raising=False)
        eval_set = load_eval_set(ADK_FIXTURES / "weather.test.json")
        with pytest.raises(ConfigError, match="GOOGLE_API_KEY"):
            evaluate_eval_sets([eval_set], good_agent, criteria={"hallucinations_v1": {"threshold": 0.8}})

    def test_missing_expected_response_scores_zero_as_adk(self, tracing, tmp_path):
        path = tmp_path / "x.evalset.json"
        turn = {"user_content": {"parts": [{"text": "hi"}]}}  # no final_response
        path.write_text(json.dumps({"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [turn]}]}))
        [case] = evaluate_eval_sets([load_eval_set(path)], good_agent, criteria={"response_match_score": 0.5}).cases
        response = case.metrics["response_match_score"]
        assert (case.status, response.score, response.per_invocation_status) == ("FAILED", 0.0, ["FAILED"])

    def test_case_without_invocations_is_not_evaluated_and_the_rest_is_scored(self, tracing, tmp_path):
        path = tmp_path / "two.evalset.json"
        turn = {"user_content": {"parts": [{"text": "hi"}]}, "final_response": {"parts": [{"text": "Hello!"}]}}
        cases = [{"eval_id": "empty", "conversation": []}, {"eval_id": "hello", "conversation": [turn]}]
        path.write_text(json.dumps({"eval_set_id": "two", "eval_cases": cases}))
        result = evaluate_eval_sets([load_eval_set(path)], good_agent)
        empty, hello = result.cases
        assert empty.status == "NOT_EVALUATED" and hello.status == "FAILED"  # "Hello! I can tell ..." vs "Hello!"
        for metric in empty.metrics.values():
            assert (metric.score, metric.status, metric.per_invocation) == (None, "NOT_EVALUATED", [])
            assert metric.explanation == "the case has no invocations"
        assert hello.metrics["tool_trajectory_avg_score"].score == 1.0
        assert result.passed is False

    def test_agent_that_raises_is_a_failed_case_not_a_crash(self, tracing):
        def broken(prompt: str) -> str:
            raise RuntimeError("model down")

        [case] = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], broken).cases
        assert case.status == "FAILED"
        assert case.turns[0][0]["error"] == "RuntimeError: model down"

    def test_saved_in_the_store(self, tracing, store_url):
        store = Store(store_url)
        result = evaluate_eval_sets(load_eval_sets(ADK_FIXTURES), wrong_city_agent, store=store)
        [run] = store.list_eval_runs()
        assert (run["run_id"], run["kind"], run["row_count"], run["failed_count"]) == (result.run_id, "evalset", 2, 2)
        assert run["agent"].endswith(":wrong_city_agent")
        saved = store.get_eval_run(result.run_id)
        assert [r["status"] for r in saved["results"]] == ["FAILED", "FAILED"]
        assert saved["results"][0]["scores"]["tool_trajectory_avg_score"] == 0.5


class QueryableApp:
    """A Vertex-style Queryable: .query(input=...) returning {"output": ...}."""

    def __init__(self) -> None:
        self.configs: list = []

    def query(self, *, input: str, config: dict | None = None) -> dict:
        self.configs.append(config)
        return {"input": input, "output": good_agent(input)}


class TestAgentKinds:
    def test_queryable(self, tracing):
        app = QueryableApp()
        result = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], app)
        assert result.passed
        assert app.configs[0]["configurable"]["thread_id"].startswith("eval-")

    def test_langchain_runnable_string_in_string_out(self, tracing):
        chain = RunnableLambda(good_agent)
        assert evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], chain).passed

    def test_langchain_chat_model_chain(self, tracing):
        model = GenericFakeChatModel(
            messages=iter([AIMessage(content="Hello! I can tell you the weather."), AIMessage(content="No idea.")])
        )
        chain = ChatPromptTemplate.from_messages([("user", "{input}")]) | model
        [case] = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], chain).cases
        response = case.metrics["response_match_score"]
        assert response.per_invocation[0] == 1.0 and response.per_invocation[1] < 0.5
        assert case.turns[0][1]["response"] == "No idea."


class TestAssertEvalset:
    def test_passes_silently(self):
        result = assert_evalset(good_agent, ADK_FIXTURES / "weather.test.json")
        assert result.passed

    def test_failure_message_names_case_metric_threshold_and_score(self):
        with pytest.raises(AssertionError) as info:
            assert_evalset(wrong_city_agent, ADK_FIXTURES, runs=1)
        message = str(info.value)
        assert "weather/weather.test.json: tool_trajectory_avg_score = 0.500 < threshold 1" in message
        assert 'expected "Paris", got "London"' in message

    def test_a_typo_in_the_criteria_raises_before_anything_runs(self, tmp_path):
        (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_scor": 1.0}}))
        calls: list[str] = []
        with pytest.raises(ConfigError, match=r"unknown criterion \(did you mean 'tool_trajectory_avg_score'\?\)"):
            assert_evalset(calls.append, ADK_FIXTURES / "weather.evalset.json", config=tmp_path / "test_config.json")
        assert calls == []

    def test_selects_cases(self):
        result = assert_evalset(good_agent, f"{ADK_FIXTURES / 'weather.evalset.json'}:legacy/weather.test.json")
        assert [case.eval_id for case in result.cases] == ["legacy/weather.test.json"]


class TestCasesToolpathCannotRun:
    def test_empty_conversation_is_not_evaluated_and_the_rest_runs(self, tracing, tmp_path):
        turn = {"user_content": {"parts": [{"text": "hi"}]}, "final_response": {"parts": [{"text": "Hello!"}]}}
        cases = [{"eval_id": "empty", "conversation": []}, {"eval_id": "one", "conversation": [turn]}]
        path = tmp_path / "x.evalset.json"
        path.write_text(json.dumps({"eval_set_id": "x", "eval_cases": cases}))
        empty, one = evaluate_eval_sets([load_eval_set(path)], good_agent).cases
        assert empty.status == "NOT_EVALUATED"
        assert {m.explanation for m in empty.metrics.values()} == {"the case has no invocations"}
        assert one.status in ("PASSED", "FAILED")

    @pytest.mark.parametrize(
        ("case", "message"),
        [
            (
                {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}},
                "eval case 'sim': criterion 'tool_trajectory_avg_score' needs the expected reference_trajectory of "
                "each turn, which a conversation_scenario does not give",
            ),
            (
                {
                    "eval_id": "image",
                    "conversation": [{"user_content": {"parts": [{"inline_data": {"data": "AA=="}}]}}],
                },
                "eval case 'image': invocation 1: the user content has no text to send to the agent",
            ),
        ],
    )
    def test_refused_before_anything_runs(self, tmp_path, case, message):
        path = tmp_path / "x.evalset.json"
        path.write_text(json.dumps({"eval_set_id": "x", "eval_cases": [case]}))
        eval_set = load_eval_set(path)  # ADK accepts the file, and so does the loader
        calls: list[str] = []
        with pytest.raises(toolpath.ToolpathError, match=re.escape(f"{path}: {message}")):
            evaluate_eval_sets([eval_set], calls.append)
        assert calls == []
