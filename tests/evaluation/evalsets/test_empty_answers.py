"""A model that answers ``""``: ADK leaves that answer's event out of the invocation, so its efficiency figures count
neither the call nor its tokens. toolpath runs the same multi-agent app (an ``AgentTool``, a transfer to a
sub-agent; scripted models, no network) on the same eval set, and every figure of every turn is ADK's own."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation")

from google.adk.agents import LlmAgent
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_set import EvalSet
from google.adk.tools.agent_tool import AgentTool

import toolpath
from tests.helpers.adk_agent import answer, call, calls, counting_model
from tests.helpers.adk_eval import adk_eval_run
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.store.store import Store

FIGURES = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")
CRITERIA = {"tool_trajectory_avg_score": 1.0}
TOKENS = {"coordinator": (12, 3), "order_lookup": (5, 2), "billing_agent": (7, 4)}

QUIET = "Anything new?"
WHERE = "Where is order 7?"
REFUND = "Refund order 7, please."
HELLO = "Hello."


def build_app() -> LlmAgent:
    lookup = LlmAgent(
        name="order_lookup",
        description="Finds where an order is.",
        model=counting_model(
            "order_lookup", TOKENS["order_lookup"], {"order 7": [calls(call("find_order", order=7)), answer("")]}
        ),
        tools=[find_order],
    )
    billing = LlmAgent(
        name="billing_agent",
        description="Handles refunds.",
        model=counting_model(
            "billing_agent", TOKENS["billing_agent"], {REFUND: [calls(call("refund", order=7)), answer("")]}
        ),
        tools=[refund],
    )
    return LlmAgent(
        name="coordinator",
        model=counting_model(
            "coordinator",
            TOKENS["coordinator"],
            {
                QUIET: [answer("")],
                HELLO: [answer("Hi! Ask me about an order.")],
                WHERE: [calls(call("order_lookup", request="order 7")), answer("", "")],
                REFUND: [calls(call("transfer_to_agent", agent_name="billing_agent"))],
            },
        ),
        tools=[AgentTool(agent=lookup)],
        sub_agents=[billing],
    )


def find_order(order: int) -> dict[str, Any]:
    """Where an order is."""
    return {"order": order, "status": "shipped"}


def refund(order: int) -> dict[str, Any]:
    """Refund an order."""
    return {"order": order, "refunded": True}


def turn(prompt: str, tool_uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": ""}]},
        "intermediate_data": {"tool_uses": tool_uses, "intermediate_responses": []},
    }


def evalset() -> dict[str, Any]:
    session = {"app_name": "app", "user_id": "u", "state": {}}
    lookup = [{"name": "order_lookup", "args": {"request": "order 7"}}]
    refunding = [
        {"name": "transfer_to_agent", "args": {"agent_name": "billing_agent"}},
        {"name": "refund", "args": {"order": 7}},
    ]
    return {
        "eval_set_id": "empty_answers",
        "eval_cases": [
            {"eval_id": "quiet", "conversation": [turn(QUIET, [])], "session_input": session},
            {"eval_id": "where", "conversation": [turn(WHERE, lookup)], "session_input": session},
            {"eval_id": "refund", "conversation": [turn(REFUND, refunding)], "session_input": session},
            {"eval_id": "two_turns", "conversation": [turn(HELLO, []), turn(QUIET, [])], "session_input": session},
        ],
    }


@pytest.fixture(scope="module")
def adk_results():
    return adk_eval_run(build_app(), EvalSet.model_validate(evalset()), EvalConfig(criteria=CRITERIA))


@pytest.fixture
def ours(tracing, store_url, tmp_path):
    path = tmp_path / "empty.evalset.json"
    path.write_text(json.dumps(evalset()))
    result = evaluate_eval_sets([load_eval_set(path)], build_app(), criteria=CRITERIA, store=Store(store_url))
    toolpath.flush()
    return result


def adk_figures(result: Any) -> dict[str, Any]:
    """ADK's figures of one case: per figure, the case's score and each turn's."""
    return {
        m.metric_name: (m.score, [p.score for p in result.eval_metric_result_per_invocation or []])
        for m in result.overall_eval_metric_results
        if m.metric_name in FIGURES
    }


def test_every_figure_of_every_turn_is_adks(ours, adk_results):
    compared = 0
    for case in ours.cases:
        theirs = {
            m.metric_name: m.score
            for m in adk_results[case.eval_id].overall_eval_metric_results
            if m.metric_name in FIGURES
        }
        per_turn = {
            name: [
                next(r.score for r in inv.eval_metric_results if r.metric_name == name)
                for inv in adk_results[case.eval_id].eval_metric_result_per_invocation
            ]
            for name in FIGURES
        }
        assert set(theirs) == set(FIGURES), case.eval_id
        for name in FIGURES:
            assert case.efficiency[name] == theirs[name], (case.eval_id, name)
            assert [t[name] for t in case.efficiency["per_invocation"]] == per_turn[name], (case.eval_id, name)
            compared += 1 + len(per_turn[name])
    assert compared == 3 * (4 + 5)
