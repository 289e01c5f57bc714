"""ADK's statuses as toolpath's ``EvalStatus``: ADK's own member names, and the same text as before in every place
a status leaves toolpath — the JSON results, the store's rows, ADK's eval history — and comes back in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.adk_records import LONDON, case_result, save_history, weather_turns
from toolpath.evaluation.evalsets.evaluator import EvalSetResult, save_evalset_run
from toolpath.evaluation.evalsets.history import score_recorded, write_adk_history
from toolpath.evaluation.evalsets.result_files import load_results
from toolpath.evaluation.verdicts import row_status, verdicts
from toolpath.jsontext import dumps
from toolpath.model import EvalStatus

pytest.importorskip("google.adk.evaluation.local_eval_set_results_manager")

from google.adk.evaluation import eval_metrics as adk_metrics
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager


def test_the_members_are_adks_by_name_and_are_their_own_text():
    assert [m.value for m in EvalStatus] == [m.name for m in adk_metrics.EvalStatus]
    assert all(isinstance(m, str) and str(m) == m.name and f"{m}" == m.name for m in EvalStatus)


@pytest.fixture
def scored(tmp_path) -> EvalSetResult:
    """ADK's eval history (saved by ADK's own manager) scored again: a case that passes, one that fails (London
    for Paris), and one whose inference failed (ADK records it without invocations)."""
    london = weather_turns()
    london[1].expected_calls, london[1].expected_response = [("get_weather", {"city": "London"})], LONDON
    history = save_history(
        tmp_path / "adk",
        "weather_app",
        "weather",
        [
            case_result("weather", "london", london, status="PASSED"),
            case_result("weather", "paris", weather_turns()),
            case_result("weather", "crashed", []),
        ],
    )
    recorded = load_results(history)
    assert [c.recorded_status for c in recorded] == ["PASSED", "FAILED", "FAILED"]
    assert all(type(c.recorded_status) is EvalStatus for c in recorded)
    return score_recorded(recorded)


def test_statuses_are_members_and_the_json_results_spell_them_as_before(scored):
    london, paris, _ = scored.cases
    trajectory = paris.metrics["tool_trajectory_avg_score"]
    assert (london.status, paris.status) == (EvalStatus.PASSED, EvalStatus.FAILED)
    assert trajectory.per_invocation_status == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert all(type(s) is EvalStatus for s in [*trajectory.per_invocation_status, *trajectory.run_status])
    for text in (json.dumps(scored.to_dict()), dumps(scored.to_dict())):  # json's text and the store's (orjson)
        cases = json.loads(text)["eval_cases"]
        assert [c["status"] for c in cases] == ["PASSED", "FAILED", "FAILED"]
        assert cases[1]["metrics"]["tool_trajectory_avg_score"]["per_invocation_status"] == ["PASSED", "FAILED"]
    assert '"status": "FAILED", "per_invocation": [1.0, 0.0], "per_invocation_status": ["PASSED", "FAILED"]' in (
        json.dumps(scored.to_dict())
    )


def test_the_store_holds_the_same_text_and_the_ui_reads_it_back(store, scored):
    save_evalset_run(store, scored, dataset="weather", agent=None, criteria=None, started_ns=1)
    with store.engine.connect() as conn:
        stored = [r[0] for r in conn.exec_driver_sql("SELECT status FROM eval_results ORDER BY position")]
        failed_count = conn.exec_driver_sql("SELECT failed_count FROM eval_runs").scalar()
    assert stored == ["PASSED", "FAILED", "FAILED"] and all(type(s) is str for s in stored)
    assert failed_count == 2
    run = store.get_eval_run(scored.run_id)
    assert run is not None
    names, n = ["tool_trajectory_avg_score"], "tool_trajectory_avg_score"
    cells = [verdicts(r, names, {n: {} for n in names}) for r in run["results"]]
    assert cells == [{n: "pass"}, {n: "fail"}, {n: "na"}]  # the crashed case's criterion: NOT_EVALUATED
    assert [row_status("evalset", r, c) for r, c in zip(run["results"], cells, strict=True)] == [
        ("pass", "passed"),
        ("fail", "failed"),
        ("fail", "failed"),
    ]


def test_adk_reads_the_statuses_toolpath_writes_as_its_own(scored, tmp_path: Path):
    [written] = write_adk_history(scored, tmp_path / "weather_app")
    name = written.name.removesuffix(".evalset_result.json")
    loaded = LocalEvalSetResultsManager(agents_dir=str(tmp_path)).get_eval_set_result("weather_app", name)
    london, paris, crashed = loaded.eval_case_results
    assert (london.final_eval_status, paris.final_eval_status, crashed.final_eval_status) == (
        adk_metrics.EvalStatus.PASSED,
        adk_metrics.EvalStatus.FAILED,
        adk_metrics.EvalStatus.FAILED,  # ADK's failed inference, as ADK's LocalEvalService writes it
    )
    assert crashed.overall_eval_metric_results == [] and crashed.eval_metric_result_per_invocation == []
    overall = {m.metric_name: m.eval_status for m in paris.overall_eval_metric_results}
    assert overall["tool_trajectory_avg_score"] == adk_metrics.EvalStatus.FAILED
    assert overall["tool_call_count_v1"] == adk_metrics.EvalStatus.INFORMATIONAL
    read_back = load_results(written)  # and read again by toolpath: ADK's member, as toolpath's
    assert [c.recorded_status for c in read_back] == [c.final_eval_status.name for c in loaded.eval_case_results]
    assert all(type(c.recorded_status) is EvalStatus for c in read_back)
