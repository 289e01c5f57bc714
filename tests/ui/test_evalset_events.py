"""A case the UI makes from a multi-agent turn is in ADK's ``invocation_events`` form (each call by the agent
that made it); editing its expected calls keeps that form, the authors and the ids of calls left as they were."""

from __future__ import annotations

from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_set import EvalSet

from toolpath.evaluation.evalsets.folder import EditedCall, EditedTurn, EvalSetFiles
from toolpath.model import Invocation, Session, ToolCall

TURN = Invocation(
    invocation_id="i1",
    session_id="s1",
    agent_name="coordinator",
    prompt="Refund order 7",
    response="Refunded.",
    tool_calls=[
        ToolCall(name="lookup", args={"order": 7}, call_id="c1", agent_name="coordinator"),
        ToolCall(name="refund", args={"order": 7}, call_id="c2", agent_name="billing_agent"),
    ],
    answered_by="billing_agent",
)


def calls_by_author(files: EvalSetFiles) -> list[tuple[str, str | None, str, dict]]:
    (case,) = EvalSet.model_validate_json(files.path("orders").read_text()).eval_cases
    events = case.conversation[0].intermediate_data.invocation_events
    return [
        (event.author, part.function_call.id, part.function_call.name, part.function_call.args)
        for event in events
        for part in (event.content.parts if event.content else [])
        if part.function_call
    ]


def test_editing_a_multi_agent_case_keeps_its_events(tmp_path):
    files = EvalSetFiles(tmp_path)
    eval_id = files.add_session("orders", Session(session_id="s1", agent_name="coordinator", invocations=[TURN]))
    assert calls_by_author(files) == [
        ("coordinator", "c1", "lookup", {"order": 7}),
        ("billing_agent", "c2", "refund", {"order": 7}),
    ]

    edited = [EditedCall("lookup", {"order": 8}), EditedCall("refund", {"order": 8}), EditedCall("notify", {})]
    files.update_case("orders", eval_id, [EditedTurn("Refunded order 8.", edited)])
    assert calls_by_author(files) == [
        ("coordinator", "c1", "lookup", {"order": 8}),
        ("billing_agent", "c2", "refund", {"order": 8}),
        ("billing_agent", None, "notify", {}),
    ]
    (case,) = files.load("orders").cases
    assert [c.name for c in case.invocations[0].reference_trajectory] == ["lookup", "refund", "notify"]

    files.update_case("orders", eval_id, [EditedTurn("Looked it up.", [EditedCall("find", {"order": 8})])])
    assert calls_by_author(files) == [("coordinator", None, "find", {"order": 8})]
    (adk_case,) = EvalSet.model_validate_json(files.path("orders").read_text()).eval_cases
    assert [c.name for c in get_all_tool_calls(adk_case.conversation[0].intermediate_data)] == ["find"]
    assert adk_case.conversation[0].final_response.parts[0].text == "Looked it up."
