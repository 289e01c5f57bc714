"""A turn whose agent raised ends its case, as in ADK: the case is FAILED with no scores, the later turns are not
sent, the error is on the result, and the turns so far (the failing call with its arguments and error) are
stored — for every kind of agent toolpath runs, over several runs, in ``assert_evalset`` and in ADK's history."""

from __future__ import annotations

import json

import pytest

import toolpath
from tests.helpers import crashing
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.evaluation.evalsets.history import write_adk_history
from toolpath.store.store import Store
from toolpath.testing import assert_evalset

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

CRASHED = f"turn 1: the agent failed: {crashing.ERROR}"


@pytest.mark.parametrize("kind", crashing.KINDS)
def test_a_raising_turn_fails_the_case_with_no_scores(tracing, store_url, tmp_path, kind):
    eval_set = load_eval_set(crashing.crash_evalset(tmp_path))
    [case] = evaluate_eval_sets([eval_set], crashing.build(kind)).cases
    assert (case.status, case.error) == ("FAILED", CRASHED)
    assert {name: (m.score, m.status) for name, m in case.metrics.items()} == {
        name: (None, "NOT_EVALUATED") for name in crashing.CRITERIA
    }
    assert all(m.explanation == CRASHED for m in case.metrics.values())
    assert case.to_dict()["error"] == CRASHED
    [[turn]] = case.turns  # the second turn was never sent
    assert (turn["prompt"], turn["error"], turn["failure"]) == (crashing.CRASH, crashing.ERROR, 1)
    assert turn["reference"] == "Checked."
    assert crashing.HELLO_AGAIN not in crashing.SENT
    assert case.efficiency["tool_call_count_v1"] is None  # a failed inference has no metric results in ADK

    toolpath.flush()
    [stored] = Store(store_url).get_session(case.sessions[0]).invocations
    assert (stored.prompt, stored.failure, stored.error) == (crashing.CRASH, 1, crashing.ERROR)
    [call] = stored.tool_calls
    assert (call.name, call.args, call.error) == ("crash_tool", {"level": 3}, crashing.ERROR)


def test_a_run_that_crashed_fails_the_case_the_others_are_scored(tracing, tmp_path):
    eval_set = load_eval_set(crashing.crash_evalset(tmp_path))
    runs = {"n": 0}

    def second_run_crashes(prompt: str) -> str:
        runs["n"] += 1
        if runs["n"] == 3:  # the first turn of the second run
            return crashing.crashing_agent(prompt)
        return crashing.ANSWER  # the first run calls nothing and answers well

    [case] = evaluate_eval_sets([eval_set], second_run_crashes, runs=2).cases
    assert (case.status, case.error) == ("FAILED", f"run 2: {CRASHED}")
    assert case.run_errors == [None, CRASHED]
    trajectory = case.metrics["tool_trajectory_avg_score"]
    # ADK's AgentEvaluator: the run that crashed has no metric results; the other run's are averaged
    assert (trajectory.score, trajectory.run_scores) == (0.5, [0.5, None])
    assert [len(turns) for turns in case.turns] == [2, 1]
    assert len(case.run_efficiency[1]["per_invocation"]) == 0


def test_assert_evalset_names_the_crash(tmp_path):
    path = crashing.crash_evalset(tmp_path)
    with pytest.raises(AssertionError) as info:
        assert_evalset(crashing.build("function"), path)
    assert f"crash/crash_then_hello: {CRASHED}" in str(info.value)


def test_adk_history_records_the_crashed_run_as_adk_does(tracing, tmp_path):
    eval_set = load_eval_set(crashing.crash_evalset(tmp_path))
    result = evaluate_eval_sets([eval_set], crashing.build("function"))
    [path] = write_adk_history(result, tmp_path / "app")
    [written] = json.loads(path.read_text())["eval_case_results"]
    assert written["final_eval_status"] == 2  # ADK's EvalStatus.FAILED
    assert (written["overall_eval_metric_results"], written["eval_metric_result_per_invocation"]) == ([], [])
    assert written["session_id"] == result.cases[0].sessions[0]


def test_the_verdict_equals_adks_local_eval_service(tracing, tmp_path):
    pytest.importorskip("google.adk.evaluation.local_eval_service")
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_result import EvalStatus
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    from tests.helpers.adk_eval import adk_eval_run

    path = crashing.crash_evalset(tmp_path)
    adk_set = AdkEvalSet.model_validate_json(path.read_text())
    adk = adk_eval_run(crashing.crashing_adk_agent(), adk_set, AdkEvalConfig(criteria=crashing.CRITERIA))
    [case] = evaluate_eval_sets([load_eval_set(path)], crashing.build("adk")).cases
    theirs = adk["crash_then_hello"]
    assert (theirs.final_eval_status, theirs.overall_eval_metric_results) == (EvalStatus.FAILED, [])
    assert theirs.eval_metric_result_per_invocation == []
    assert case.status == "FAILED" and all(m.score is None for m in case.metrics.values())
