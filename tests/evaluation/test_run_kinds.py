"""Run kinds and replay statuses as ``RunKind`` and ``ReplayStatus``: stored as the same text as before, and read
back by the UI's run page and the HTML report."""

from __future__ import annotations

import json

import toolpath
from tests.helpers.weather import bot, get_weather
from toolpath.cli.report import render_report
from toolpath.evaluation.recorded import recorded_sessions
from toolpath.evaluation.replay import replay_sessions, save_replay_run
from toolpath.evaluation.verdicts import ReplayStatus, RunKind, Verdict
from toolpath.metrics.diff import ChangeKind
from toolpath.store.store import Store
from toolpath.ui.run_cases import run_view


def paris_only(prompt: str) -> str:
    """The weather agent changed: Paris, whatever the prompt names."""
    get_weather("Paris")
    return "Sunny in Paris."


def test_kinds_and_replay_statuses_are_stored_as_before_and_read_back(tracing, store_url):
    for session, prompt in (("s-paris", "Weather in Paris?"), ("s-oslo", "Weather in Oslo?")):
        bot(prompt, session_id=session)
    toolpath.flush()
    store = Store(store_url)
    result = replay_sessions(recorded_sessions(store), paris_only, metrics=["trajectory_exact_match"])
    save_replay_run(store, result, agent=None, started_ns=1)
    toolpath.evaluate([{"prompt": "p", "response": "a", "reference": "a"}], ["exact_match"], store=store)
    with store.engine.connect() as conn:
        kinds = sorted(r[0] for r in conn.exec_driver_sql("SELECT kind FROM eval_runs"))
        statuses = {
            r[0]: r[1]
            for r in conn.exec_driver_sql("SELECT case_id, status FROM eval_results WHERE run_id = ?", (result.run_id,))
        }
    assert kinds == ["dataset", "replay"] and all(type(k) is str for k in kinds)
    assert statuses == {"s-oslo": "changed", "s-paris": "same"}
    assert [k.value for k in RunKind] == ["dataset", "evalset", "replay"]
    assert [s.value for s in ReplayStatus] == ["changed", "same"]

    run = store.get_eval_run(result.run_id)
    assert run is not None
    view = run_view(run)
    assert view["changed"] == 1
    assert sorted(c["status"] for c in view["cases"]) == ["changed", "same"]
    report = render_report(run)
    assert "data-diff='changed'" in report and "data-diff='same'" in report

    # the changed session's call: its argument changed, stored as the kind's text, marked "args" where shown
    [oslo] = [r for r in run["results"] if r["case_id"] == "s-oslo"]
    changes = (json.loads(oslo["row"]) if isinstance(oslo["row"], str) else oslo["row"])["changes"]
    assert [(c["kind"], c["tool"]) for c in changes] == [("args_changed", "get_weather")]
    assert {str(k): k.mark for k in ChangeKind} == {
        "added": "added",
        "removed": "removed",
        "reordered": "moved",
        "args_changed": "args",
    }
    assert "call args" in report
    marks = [c["mark"] for case in view["cases"] for t in case["turns"] for c in [*t["expected"], *t["actual"]]]
    assert sorted(set(marks) - {""}) == ["args"]


def test_score_verdicts_are_members_and_the_page_and_report_classes_are_their_text(tracing, store_url):
    """``Verdict``: a dataset run's cells (pass, fail, no score, no pass mark) as the UI's run view and the HTML
    report class them, read back from the store."""
    store = Store(store_url)
    rows = [
        {"prompt": "p1", "response": "a", "reference": "a", "predicted_trajectory": [], "reference_trajectory": []},
        {"prompt": "p2", "response": "a", "reference": "b", "predicted_trajectory": [], "reference_trajectory": []},
        {"prompt": "p3", "response": "a", "predicted_trajectory": []},
    ]
    result = toolpath.evaluate(rows, ["exact_match", "tool_call_count"], store=store)
    run = store.get_eval_run(result.run_id)
    assert run is not None
    view = run_view(run)
    cells = [{c["metric"]: c["verdict"] for c in case["cells"]} for case in view["cases"]]
    assert cells == [
        {"exact_match": "pass", "tool_call_count": "neutral"},
        {"exact_match": "fail", "tool_call_count": "neutral"},
        {"exact_match": "na", "tool_call_count": "neutral"},
    ]
    assert all(type(v) is Verdict for c in cells for v in c.values())
    assert [(c["status"], c["label"]) for c in view["cases"]] == [
        ("pass", "passed"),
        ("fail", "failed"),
        ("na", "not scored"),
    ]
    report = render_report(run)
    for css in ("pass", "fail", "na", "neutral"):
        assert f"<td class='num {css}' data-metric=" in report
    assert [m["passed"] for m in view["metrics"]] == [1, 0] and [m["failed"] for m in view["metrics"]] == [1, 0]
