"""``--adk-history`` of a multi-agent run: each case result carries the run's session as ADK's
``session_details``, whose events name the sub-agent behind each call and answer and carry the calls' ids; the
file loads with ADK's own models."""

from __future__ import annotations

import json

import pytest

import toolpath
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.evaluation.evalsets.history import write_adk_history

pytest.importorskip("google.adk.evaluation.local_eval_set_results_manager")

from google.adk.evaluation.eval_result import EvalSetResult
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager

EVAL_SET = {
    "eval_set_id": "orders",
    "eval_cases": [
        {
            "eval_id": "refund",
            "conversation": [
                {
                    "invocation_id": "e1",
                    "user_content": {"role": "user", "parts": [{"text": "Refund order 7"}]},
                    "final_response": {"role": "model", "parts": [{"text": "Order 7 is refunded."}]},
                    "intermediate_data": {
                        "tool_uses": [
                            {"name": "lookup_order", "args": {"order": 7}},
                            {"name": "refund", "args": {"order": 7}},
                        ]
                    },
                }
            ],
            "session_input": {"app_name": "orders_app", "user_id": "u1", "state": {}},
        }
    ],
}


@toolpath.tool
def lookup_order(order: int) -> dict:
    return {"order": order, "paid": True}


@toolpath.tool
def refund(order: int) -> str:
    return f"order {order} refunded"


@toolpath.agent(name="billing_agent")
def billing_agent(prompt: str) -> str:
    refund(7)
    return "Order 7 is refunded."


@toolpath.agent(name="coordinator")
def coordinator(prompt: str) -> str:
    lookup_order(7)
    return billing_agent(prompt)


def test_the_history_session_names_each_events_author(tmp_path, tracing):
    path = tmp_path / "orders.evalset.json"
    path.write_text(json.dumps(EVAL_SET))
    result = evaluate_eval_sets([load_eval_set(path)], coordinator)
    app = tmp_path / "orders_app"
    [written] = write_adk_history(result, app)

    loaded = EvalSetResult.model_validate_json(written.read_text())
    manager = LocalEvalSetResultsManager(agents_dir=str(tmp_path))
    assert manager.get_eval_set_result("orders_app", loaded.eval_set_result_id) == loaded
    (case,) = loaded.eval_case_results
    session = case.session_details
    assert session is not None
    assert (session.id, session.app_name, session.user_id) == (case.session_id, "orders_app", "u1")
    events = [(e.author, e.content) for e in session.events]
    # the coordinator returns the billing agent's answer as its own: it answered the turn
    assert [author for author, _ in events] == [
        "user",
        "coordinator",
        "coordinator",
        *["billing_agent"] * 2,
        "coordinator",
    ]
    assert events[0][1].parts[0].text == "Refund order 7"
    calls = [p.function_call for _, c in events for p in c.parts if p.function_call]
    replies = [p.function_response for _, c in events for p in c.parts if p.function_response]
    assert [(c.name, c.args) for c in calls] == [("lookup_order", {"order": 7}), ("refund", {"order": 7})]
    assert all(c.id for c in calls) and [r.id for r in replies] == [c.id for c in calls]
    assert replies[1].response == {"result": "order 7 refunded"}
    assert events[-1][1].parts[0].text == "Order 7 is refunded."
    (turn,) = case.eval_metric_result_per_invocation
    assert {e.invocation_id for e in session.events} == {turn.actual_invocation.invocation_id}
    assert [c.id for c in turn.actual_invocation.intermediate_data.tool_uses] == [c.id for c in calls]


def test_the_answer_is_the_event_of_the_agent_that_answered():
    from google.adk.sessions.session import Session

    from toolpath.evaluation.evalsets.conversions import session_events_json
    from toolpath.model import ToolCall

    events = session_events_json(
        invocation_id="i1",
        prompt="Refund order 7",
        response="Refunded.",
        tool_calls=[
            ToolCall(name="transfer_to_agent", args={"agent_name": "billing_agent"}, call_id="c1"),
            ToolCall(name="refund", args={"order": 7}, call_id="c2", agent_name="billing_agent", error="Timeout"),
        ],
        intermediate_responses=[("coordinator", "Passing you to billing.")],
        agent="coordinator",
        answered_by="billing_agent",
        timestamp=1.5,
    )
    session = Session.model_validate({"id": "s", "app_name": "a", "user_id": "u", "events": events})
    assert [e.author for e in session.events] == ["user", *["coordinator"] * 3, *["billing_agent"] * 3]
    assert [e.id for e in session.events] == [f"i1-{n}" for n in range(7)]
    assert session.events[5].content.parts[0].function_response.response == {"error": "Timeout"}
    assert session.events[-1].content.parts[0].text == "Refunded."
    assert session.events[-1].is_final_response()
