"""An eval set full of deliberate deviations, judged by toolpath and by ADK: every per-invocation score and
status, every per-run criterion score and status, every case status, and the verdict over several runs equal.

The agent's side is given as data (what it answered, which tools it called): toolpath judges it through
``score_case`` as ``evaluate_eval_sets`` does after running an agent; ADK through its own evaluators, on ADK
``Invocation`` objects built from the same data (:mod:`tests.helpers.adk_eval`)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("google.adk.evaluation.trajectory_evaluator")

from tests.helpers.adk_eval import adk_case_results, adk_verdict, outcome
from toolpath.evaluation.evalsets.evaluator import score_case
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.metrics.adk_args_rule import none_args_equal_empty


def turn(prompt, response=None, calls=()):
    """An expected invocation in the eval-set file's JSON; a call without args leaves the key out."""
    data = {"user_content": {"parts": [{"text": prompt}], "role": "user"}}
    if response is not None:
        data["final_response"] = {"parts": [{"text": response}], "role": "model"}
    data["intermediate_data"] = {
        "tool_uses": [{"name": name} if args is None else {"name": name, "args": args} for name, args in calls]
    }
    return data


PARIS = ("get_weather", {"city": "Paris"})
OSLO = ("get_weather", {"city": "Oslo"})
LIGHT_OFF = ("set_light", {"on": False, "level": 0.0})

# eval_id -> (expected turns, actual turns per run); an actual turn is (response, calls)
CASES = {
    "wrong_args": (
        [turn("Weather in Paris?", "It is sunny in Paris, 20 degrees.", [PARIS])],
        [
            [("It is sunny in London, 20 degrees.", [("get_weather", {"city": "London"})])],
            [("It is sunny in Paris, 20 degrees.", [PARIS])],
        ],
    ),
    "swapped_order": (
        [turn("Paris and Oslo?", "Paris is sunny and Oslo is cloudy.", [PARIS, OSLO])],
        [[("Oslo is cloudy and Paris is sunny.", [OSLO, PARIS])]] * 2,
    ),
    "extra_call": (
        [turn("What time is it?", "It is noon.", [("now", {})])],
        [[("It is noon, and sunny in Paris.", [("now", {}), PARIS])]] * 2,
    ),
    "missing_call": (
        [turn("Check Paris and turn the light on", "Sunny; the light is on.", [PARIS, ("set_light", {"on": True})])],
        [[("Sunny in Paris.", [PARIS])]] * 2,
    ),
    "zero_as_false": (
        [turn("Lights off", "The light is off.", [LIGHT_OFF])],
        [[("The light is off.", [("set_light", {"on": 0, "level": 0})])]] * 2,
    ),
    "call_without_args": (
        [turn("Time?", "Noon.", [("now", None)]), turn("And now?", "Still noon.", [("now", None)])],
        [[("Noon.", [("now", {})]), ("Still noon.", [("now", None)])]] * 2,
    ),
    "no_expected_response": (
        [turn("Turn the light off", None, [LIGHT_OFF])],
        [[("Done.", [LIGHT_OFF])]] * 2,
    ),
    "french": (
        [turn("Météo ?", "Il fait très beau à Paris aujourd'hui, 20 °C. Dégagé.")],
        [[("Aujourd'hui il fait très beau à Paris : 20 °C, ciel dégagé.", [])]] * 2,
    ),
    "chinese": (
        [turn("天气？", "北京今天晴天，气温二十度。")],
        [[("今天北京是晴天，二十度。", [])]] * 2,
    ),
    "japanese": (
        [turn("天気は？", "東京・大阪の天気は晴れです。")],
        [[("東京の天気は晴れ、大阪・京都は曇りです。", [])], [("東京・大阪の天気は晴れです。", [])]],
    ),
    "korean": (
        [turn("날씨?", "서울의 날씨는 맑고 기온은 20도입니다.")],
        [[("서울은 맑음, 기온 20도.", [])]] * 2,
    ),
    "thai": (
        [turn("อากาศ?", "อุณหภูมิวันนี้30องศา ท้องฟ้าแจ่มใส")],
        [[("วันนี้อุณหภูมิ 30 องศา", [])]] * 2,
    ),
    "full_width_digits": (
        [turn("気温は？", "気温は２０度、湿度は６５％です。")],
        [[("気温20度、湿度65%。", [])]] * 2,
    ),
    "multi_turn": (
        [
            turn("hi", "Hello! I can tell you the weather."),
            turn("Weather in Paris?", "Sunny in Paris, 20 degrees.", [PARIS]),
            turn("Lights off please", "Done, the light is off.", [LIGHT_OFF]),
        ],
        [
            [
                ("Hello! I can tell you the weather.", []),
                ("Sunny in Paris, 20 degrees.", [PARIS]),
                ("The light is now off.", [("set_light", {"on": False, "level": 0}), ("now", None)]),
            ],
            [
                ("Hi there!", []),
                ("Paris: sunny, 20 degrees.", [OSLO, PARIS]),
                ("Done, the light is off.", [("set_light", {"level": 0, "on": 0})]),
            ],
        ],
    ),
    "no_invocations": ([], [[], []]),
}

EVAL_SET = {
    "eval_set_id": "deviations",
    "eval_cases": [{"eval_id": eval_id, "conversation": turns} for eval_id, (turns, _) in CASES.items()],
}
ACTUAL = {eval_id: runs for eval_id, (_, runs) in CASES.items()}

CRITERIA = [
    {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
    {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER"}, "response_match_score": 0.5},
    {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "ANY_ORDER", "ignore_args": True}},
]


@pytest.fixture(scope="module")
def eval_set(tmp_path_factory):
    path = tmp_path_factory.mktemp("adk") / "deviations.evalset.json"
    path.write_text(json.dumps(EVAL_SET, ensure_ascii=False), encoding="utf-8")
    return load_eval_set(path)


def toolpath_cases(eval_set, criteria, runs):
    return {
        case.eval_id: score_case(case, [[outcome(t) for t in run] for run in ACTUAL[case.eval_id][:runs]], criteria)
        for case in eval_set.cases
    }


def adk_cases(criteria, runs):
    return {eval_id: results[:runs] for eval_id, results in adk_case_results(EVAL_SET, ACTUAL, criteria).items()}


@pytest.mark.parametrize("criteria", CRITERIA, ids=["default", "in_order", "any_order_ignore_args"])
def test_every_score_and_status_equals_adk(eval_set, criteria):
    ours, single_run = toolpath_cases(eval_set, criteria, runs=2), toolpath_cases(eval_set, criteria, runs=1)
    theirs = adk_cases(criteria, runs=2)
    assert ours.keys() == theirs.keys()
    for eval_id, adk_runs in theirs.items():
        case = ours[eval_id]
        for name, metric in case.metrics.items():
            for run, adk_run in zip(metric.runs, adk_runs, strict=True):
                where = f"{eval_id} / {name}"
                [overall] = [m for m in adk_run.overall_eval_metric_results if m.metric_name == name]
                assert (run.score, run.status) == (overall.score, overall.eval_status.name), where
                per_invocation = [
                    m
                    for inv in adk_run.eval_metric_result_per_invocation
                    for m in inv.eval_metric_results
                    if m.metric_name == name
                ]
                assert run.per_invocation == [m.score for m in per_invocation], where
                assert run.per_invocation_status == [m.eval_status.name for m in per_invocation], where
            verdict = adk_verdict(adk_runs).get(name, (None, "NOT_EVALUATED"))  # no invocation: nothing to judge
            assert (metric.score, metric.status) == verdict, f"{eval_id} / {name} over the runs"
        assert single_run[eval_id].status == adk_runs[0].final_eval_status.name, eval_id


def test_the_deviations_are_there(eval_set):
    """What the eval set is for: each deviation scores as ADK scores it (pinned here, so a change in the data
    cannot quietly make the comparison above trivial)."""
    cases = toolpath_cases(eval_set, CRITERIA[0], runs=1)
    trajectory = {eval_id: case.metrics["tool_trajectory_avg_score"] for eval_id, case in cases.items()}
    response = {eval_id: case.metrics["response_match_score"] for eval_id, case in cases.items()}
    assert [trajectory[k].score for k in ("wrong_args", "swapped_order", "extra_call", "missing_call")] == [0.0] * 4
    assert trajectory["zero_as_false"].score == 1.0
    # {} against a reference without args: unequal before google-adk 2.15, equal since
    first = "PASSED" if none_args_equal_empty() else "FAILED"
    assert trajectory["call_without_args"].per_invocation_status == [first, "PASSED"]
    assert (response["no_expected_response"].score, cases["no_expected_response"].status) == (0.0, "FAILED")
    assert all(0.0 < response[k].score < 1.0 for k in ("french", "chinese", "japanese", "korean", "thai"))
    assert response["full_width_digits"].score > 0.0
    assert cases["multi_turn"].metrics["tool_trajectory_avg_score"].per_invocation == [1.0, 1.0, 0.0]
    assert cases["no_invocations"].status == "NOT_EVALUATED"
    assert {c.status for c in cases.values()} == {"PASSED", "FAILED", "NOT_EVALUATED"}
