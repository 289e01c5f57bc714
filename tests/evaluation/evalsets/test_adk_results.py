"""ADK's records both ways: results ADK's own manager saved, scored again without running anything; toolpath's
runs written as ADK eval history and read back by ADK; ADK custom metrics run as ADK runs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES
from tests.helpers.adk_records import (
    HELLO,
    LONDON,
    PARIS,
    WEATHER_PROMPT,
    case_result,
    expected_invocation,
    save_history,
    weather_turns,
)
from tests.helpers.weather import get_weather, good_agent
from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.evaluation.evalsets.history import score_recorded, write_adk_history
from toolpath.evaluation.evalsets.result_files import load_results

pytest.importorskip("google.adk.evaluation.local_eval_set_results_manager")

from google.adk.evaluation import _efficiency_evaluators as adk_efficiency
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager


@pytest.fixture
def history(tmp_path) -> Path:
    """ADK's eval history of app ``weather_app``: one failing case (London for Paris) and one whose inference
    failed (ADK records it without invocations)."""
    failed = case_result("weather", "crashed", [])
    return save_history(tmp_path, "weather_app", "weather", [case_result("weather", "paris", weather_turns()), failed])


class TestFromResults:
    def test_recorded_invocations_scored_against_the_recorded_expectations(self, history):
        result = score_recorded(load_results(history))
        paris, crashed = result.cases
        assert (paris.eval_set_id, paris.eval_id, paris.status) == ("weather", "paris", "FAILED")
        trajectory = paris.metrics["tool_trajectory_avg_score"]
        assert (trajectory.score, trajectory.per_invocation, trajectory.per_invocation_status) == (
            0.5,
            [1.0, 0.0],
            ["PASSED", "FAILED"],
        )
        assert trajectory.explanation == 'invocation 2: call 1: get_weather city: expected "Paris", got "London"'
        response = paris.metrics["response_match_score"]
        assert response.per_invocation == pytest.approx([1.0, 6 / 7]) and response.status == "PASSED"
        assert paris.sessions == ["adk-eval-session-paris"]
        assert crashed.status == "FAILED"
        assert crashed.metrics["tool_trajectory_avg_score"].explanation == (
            "the recorded run has no invocations (the agent failed)"
        )

    def test_efficiency_figures_are_adks(self, history):
        [recorded] = [c for c in load_results(history) if c.eval_id == "paris"]
        paris = score_recorded([recorded]).cases[0]
        manager = LocalEvalSetResultsManager(agents_dir=str(history.parents[2]))
        [name] = manager.list_eval_set_results("weather_app")
        [theirs] = [
            c for c in manager.get_eval_set_result("weather_app", name).eval_case_results if c.eval_id == "paris"
        ]
        actual = [p.actual_invocation for p in theirs.eval_metric_result_per_invocation]
        adk = {
            "tool_call_count_v1": adk_efficiency._ToolCallCountV1Evaluator().evaluate_invocations(actual),
            "inference_call_count_v1": adk_efficiency._InferenceCallCountV1Evaluator().evaluate_invocations(actual),
            "token_usage_v1": adk_efficiency._TokenUsageV1Evaluator().evaluate_invocations(actual),
            "invocation_duration_v1": adk_efficiency._InvocationDurationV1Evaluator().evaluate_invocations(actual),
        }
        ours = paris.efficiency
        for name, evaluation in adk.items():
            assert ours[name] == evaluation.overall_score, name
            assert [f[name] for f in ours["per_invocation"]] == [r.score for r in evaluation.per_invocation_results]
        assert ours["token_usage_details"] == adk["token_usage_v1"].overall_token_usage_details.model_dump()
        assert ours["duration_details"] == adk["invocation_duration_v1"].overall_duration_details.model_dump()
        assert (ours["tool_call_count_v1"], ours["inference_call_count_v1"], ours["token_usage_v1"]) == (
            0.5,
            1.5,
            332.5,
        )

    def test_against_the_eval_set_given(self, history, tmp_path):
        """The eval set's expectations, not the recorded ones: here it expects London."""
        turns = weather_turns()
        turns[1].expected_calls, turns[1].expected_response = [("get_weather", {"city": "London"})], LONDON
        from google.adk.evaluation.eval_case import EvalCase
        from google.adk.evaluation.eval_set import EvalSet

        eval_set = EvalSet(
            eval_set_id="weather",
            eval_cases=[
                EvalCase(eval_id="paris", conversation=[expected_invocation(t, i) for i, t in enumerate(turns)]),
                EvalCase(eval_id="crashed", conversation=[expected_invocation(turns[0], 0)]),
            ],
        )
        path = tmp_path / "weather.evalset.json"
        path.write_text(eval_set.model_dump_json())
        paris, _ = score_recorded(load_results(history), eval_sets=[load_eval_set(path)]).cases
        assert paris.status == "PASSED" and paris.metrics["tool_trajectory_avg_score"].score == 1.0

    def test_a_recorded_case_missing_from_the_eval_set_is_an_error(self, history):
        fixture = load_eval_set(ADK_FIXTURES / "weather.evalset.json")
        with pytest.raises(DatasetError, match=r"eval case 'paris' of eval set 'weather': not in the eval set"):
            score_recorded(load_results(history), eval_sets=[fixture])

    def test_older_double_encoded_files(self, history):
        [path] = history.iterdir()
        path.write_text(json.dumps(path.read_text()))  # ADK's older files: the JSON as a JSON string
        assert [c.eval_id for c in load_results(history)] == ["paris", "crashed"]

    def test_a_broken_result_file_names_file_and_path(self, tmp_path):
        path = tmp_path / "x.evalset_result.json"
        path.write_text(json.dumps({"eval_set_result_id": "r", "eval_set_id": "s", "eval_case_results": [{}]}))
        with pytest.raises(
            DatasetError, match=r"x.evalset_result.json: \$.eval_case_results\[0\].final_eval_status: missing"
        ):
            load_results(tmp_path)
        (tmp_path / "empty").mkdir()
        with pytest.raises(DatasetError, match=r"empty: no \*.evalset_result.json files"):
            load_results(tmp_path / "empty")


class TestAdkHistory:
    def test_toolpath_runs_as_adk_eval_history(self, tracing, tmp_path):
        wrong_second_turn = {"n": 0}

        def agent(prompt: str) -> str:
            wrong_second_turn["n"] += 1
            if "weather" in prompt and wrong_second_turn["n"] > 2:
                get_weather("London")
                return LONDON
            return good_agent(prompt)

        result = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], agent, runs=2)
        app = tmp_path / "weather_app"
        [written] = write_adk_history(result, app)
        manager = LocalEvalSetResultsManager(agents_dir=str(tmp_path))
        assert manager.list_eval_set_results("weather_app") == [written.name.removesuffix(".evalset_result.json")]
        loaded = manager.get_eval_set_result("weather_app", written.name.removesuffix(".evalset_result.json"))
        assert loaded.eval_set_id == "weather"
        first, second = loaded.eval_case_results  # one per run, as ADK records runs
        assert [r.final_eval_status for r in (first, second)] == [EvalStatus.PASSED, EvalStatus.FAILED]
        assert [r.session_id for r in (first, second)] == result.cases[0].sessions
        written_runs = json.loads(written.read_text())["eval_case_results"]
        assert [r["repetition_index"] for r in written_runs] == [0, 1]  # the runs numbered, as google-adk 2.14 does
        if "repetition_index" in type(first).model_fields:  # and the installed ADK reads them so, if it knows them
            assert [r.repetition_index for r in (first, second)] == [0, 1]
        overall = {m.metric_name: m for m in second.overall_eval_metric_results}
        assert (overall["tool_trajectory_avg_score"].score, overall["tool_trajectory_avg_score"].eval_status) == (
            0.5,
            EvalStatus.FAILED,
        )
        assert overall["tool_call_count_v1"].eval_status == EvalStatus.INFORMATIONAL
        assert overall["tool_call_count_v1"].score == 0.5
        turn = second.eval_metric_result_per_invocation[1]
        assert [(c.name, c.args) for c in turn.actual_invocation.intermediate_data.tool_uses] == [
            ("get_weather", {"city": "London"})
        ]
        assert turn.actual_invocation.intermediate_data.tool_responses[0].response == {
            "city": "London",
            "sky": "sunny",
            "temp": 20,
        }
        assert [(c.name, c.args) for c in turn.expected_invocation.intermediate_data.tool_uses] == [
            ("get_weather", {"city": "Paris"})
        ]
        statuses = {m.metric_name: m.eval_status for m in turn.eval_metric_results}
        assert statuses["tool_trajectory_avg_score"] == EvalStatus.FAILED
        assert turn.actual_invocation.duration is not None and turn.actual_invocation.duration > 0

        # and scored again from what was written, the history gives back the run's scores
        again = score_recorded(load_results(app / ".adk" / "eval_history"))
        assert [c.metrics["tool_trajectory_avg_score"].score for c in again.cases] == [1.0, 0.5]
        assert [c.status for c in again.cases] == ["PASSED", "FAILED"]


CUSTOM_METRIC = '''
from google.adk.evaluation.evaluator import EvalStatus, EvaluationResult, PerInvocationResult


def short_answers(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    """1 when the final response has at most `max_words` words (an option of the criterion)."""
    limit = eval_metric.criterion.model_extra["max_words"]
    per = []
    for actual in actual_invocations:
        text = " ".join(p.text for p in actual.final_response.parts if p.text)
        score = 1.0 if len(text.split()) <= limit else 0.0
        status = EvalStatus.PASSED if score >= eval_metric.criterion.threshold else EvalStatus.FAILED
        per.append(PerInvocationResult(actual_invocation=actual, score=score, eval_status=status))
    overall = sum(r.score for r in per) / len(per)
    status = EvalStatus.PASSED if overall >= eval_metric.criterion.threshold else EvalStatus.FAILED
    return EvaluationResult(overall_score=overall, overall_eval_status=status, per_invocation_results=per)


async def always_fails(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    assert eval_metric.threshold is None and expected_invocations is not None
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.FAILED)


def odd_status(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    """An EvaluationResult look-alike whose status ADK does not have."""
    from types import SimpleNamespace

    return SimpleNamespace(overall_score=1.0, overall_eval_status="MAYBE", per_invocation_results=[])
'''


class TestCustomMetrics:
    @pytest.fixture
    def config(self, tmp_path, monkeypatch) -> Path:
        (tmp_path / "my_metrics.py").write_text(CUSTOM_METRIC)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "my_metrics", raising=False)
        path = tmp_path / "test_config.json"
        path.write_text(
            json.dumps(
                {
                    "criteria": {"short": {"threshold": 0.5, "max_words": 6}, "strict": 0.5},
                    "custom_metrics": {
                        "short": {"code_config": {"name": "my_metrics.short_answers"}},
                        "strict": {"code_config": {"name": "my_metrics.always_fails"}},
                    },
                }
            )
        )
        return path

    def test_run_with_adks_types_and_their_own_verdict(self, tracing, config):
        eval_set = load_eval_set(ADK_FIXTURES / "weather.evalset.json", config)
        [case] = evaluate_eval_sets([eval_set], good_agent).cases
        short = case.metrics["short"]
        # "Hello! I can tell you the weather." is 7 words, "The weather in Paris is sunny, 20C." 7 words
        assert (short.score, short.per_invocation, short.status) == (0.0, [0.0, 0.0], "FAILED")
        strict = case.metrics["strict"]
        assert (strict.score, strict.status) == (1.0, "FAILED")  # the function's verdict, not score >= threshold
        assert case.status == "FAILED"

    def test_a_status_adk_does_not_have_is_said_not_passed_on(self, tracing, config):
        config.write_text(
            json.dumps(
                {
                    "criteria": {"odd": 0.5},
                    "custom_metrics": {"odd": {"code_config": {"name": "my_metrics.odd_status"}}},
                }
            )
        )
        eval_set = load_eval_set(ADK_FIXTURES / "weather.evalset.json", config)
        [case] = evaluate_eval_sets([eval_set], good_agent).cases
        odd = case.metrics["odd"]
        assert (odd.score, odd.status) == (None, "NOT_EVALUATED")
        assert "my_metrics.odd_status returned the status 'MAYBE', not an ADK EvalStatus" in (odd.explanation or "")

    def test_on_recorded_results(self, history, config):
        from toolpath.evaluation.evalsets.files import load_config

        [paris, _] = score_recorded(load_results(history), config=load_config(config)).cases
        assert paris.metrics["short"].per_invocation == [0.0, 0.0]
        assert paris.metrics["short"].per_invocation_status == ["FAILED", "FAILED"]


def test_turns_of_the_recorded_weather_case_are_what_adk_recorded(history):
    [paris, crashed] = load_results(history)
    assert [a.prompt for a in paris.actual] == ["hi", WEATHER_PROMPT]
    assert [a.response for a in paris.actual] == [HELLO, LONDON]
    assert [[(c.name, c.args, c.result) for c in a.tool_calls] for a in paris.actual] == [
        [],
        [("get_weather", {"city": "London"}, {"sky": "sunny"})],
    ]
    assert paris.expected is not None and [e.reference for e in paris.expected] == [HELLO, PARIS]
    assert (crashed.actual, crashed.expected, crashed.recorded_status) == ([], None, "FAILED")
