"""A multi-agent ADK app (an ``AgentTool`` and a transfer to a sub-agent; scripted models, no network) run by
toolpath: every stored call names the agent that made it, each turn the agent that answered, and the efficiency
figures are ADK's own evaluator's on the same app and eval set."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("google.adk.evaluation")

from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_set import EvalSet

import toolpath
from tests.helpers import adk_multi
from tests.helpers.adk_eval import adk_eval_run
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.store.store import Store

FIGURES = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")
CRITERIA = {"tool_trajectory_avg_score": 1.0}


@pytest.fixture(scope="module")
def adk_results():
    evalset = EvalSet.model_validate(adk_multi.multi_evalset())
    config = EvalConfig(criteria=CRITERIA)
    return adk_eval_run(adk_multi.build_coordinator(), evalset, config)


@pytest.fixture
def ours(tracing, store_url, tmp_path):
    store = Store(store_url)
    path = tmp_path / "multi.evalset.json"
    path.write_text(json.dumps(adk_multi.multi_evalset()))
    result = evaluate_eval_sets([load_eval_set(path)], adk_multi.build_coordinator(), criteria=CRITERIA, store=store)
    toolpath.flush()
    return result, store


def test_every_call_and_answer_names_its_agent(ours):
    result, store = ours
    by_id = {case.eval_id: store.get_session(case.sessions[0]).invocations for case in result.cases}
    [where], [refund] = by_id["where"], by_id["refund"]
    assert [(c.name, c.agent_name) for c in where.tool_calls] == [("order_lookup", "coordinator")]
    assert (where.agent_name, where.answered_by) == ("coordinator", "coordinator")
    assert [(c.name, c.agent_name) for c in refund.tool_calls] == [
        ("transfer_to_agent", "coordinator"),
        ("refund", "billing_agent"),
    ]
    assert (refund.agent_name, refund.answered_by) == ("coordinator", "billing_agent")


def test_efficiency_figures_are_adks(ours, adk_results):
    result, _ = ours
    assert {c.eval_id: c.status for c in result.cases} == {"where": "PASSED", "refund": "PASSED"}
    for case in result.cases:
        theirs = {
            m.metric_name: m.score
            for m in adk_results[case.eval_id].overall_eval_metric_results
            if m.metric_name in FIGURES
        }
        assert set(theirs) == set(FIGURES)
        assert {name: case.efficiency[name] for name in FIGURES} == theirs, case.eval_id
    where = next(c for c in result.cases if c.eval_id == "where").efficiency
    assert (where["inference_call_count_v1"], where["token_usage_v1"]) == (2.0, 22.0)  # not order_lookup's 2 calls
