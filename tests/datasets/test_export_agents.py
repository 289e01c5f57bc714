"""Exported JSONL keeps the agent behind each recorded call and answer, and reads back with it, so a sub-agent
can be evaluated on its own (``agent=``) against recorded traffic."""

from __future__ import annotations

import json

from toolpath.datasets.export import write_export
from toolpath.datasets.jsonl import read_jsonl
from toolpath.model import Invocation, Session, ToolCall
from toolpath.trajectory import parse_trajectory


def test_jsonl_rows_keep_each_calls_agent_and_who_answered(tmp_path):
    turn = Invocation(
        invocation_id="i",
        session_id="s",
        agent_name="coordinator",
        prompt="Refund order 7.",
        response="Refunded.",
        tool_calls=[
            ToolCall(name="transfer_to_agent", args={"agent_name": "billing_agent"}, agent_name="coordinator"),
            ToolCall(name="refund", args={"order": 7}, agent_name="billing_agent"),
            ToolCall(name="legacy", args={}),
        ],
        answered_by="billing_agent",
    )
    path = tmp_path / "out.jsonl"
    write_export([Session(session_id="s", agent_name="coordinator", invocations=[turn])], "jsonl", path)
    [row] = [json.loads(line) for line in path.read_text().splitlines()]
    assert row["answered_by"] == "billing_agent"
    assert [item.get("agent_name") for item in row["reference_trajectory"]] == ["coordinator", "billing_agent", None]
    [read] = read_jsonl(path)
    calls = parse_trajectory(read["reference_trajectory"])
    assert [(c.name, c.agent_name) for c in calls] == [
        ("transfer_to_agent", "coordinator"),
        ("refund", "billing_agent"),
        ("legacy", None),
    ]


MULTI = Invocation(
    invocation_id="i1",
    session_id="s",
    agent_name="coordinator",
    prompt="Refund order 7.",
    response="Refunded.",
    tool_calls=[
        ToolCall(name="lookup", args={"order": 7}, result={"paid": True}, call_id="c1", agent_name="coordinator"),
        ToolCall(
            name="transfer_to_agent", args={"agent_name": "billing_agent"}, call_id="c2", agent_name="coordinator"
        ),
        ToolCall(name="refund", args={"order": 7}, result="done", call_id="c3", agent_name="billing_agent"),
    ],
    intermediate_responses=[("coordinator", "Let me look.")],
    answered_by="billing_agent",
)
SINGLE = Invocation(
    invocation_id="i2",
    session_id="s",
    agent_name="coordinator",
    prompt="Hello",
    response="Hi.",
    tool_calls=[ToolCall(name="greet", args={}, call_id="c4", agent_name="coordinator")],
    answered_by="coordinator",
)


def test_an_adk_export_keeps_who_made_each_call_where_agents_differ(tmp_path):
    """ADK's EvalSet model reads the export; a turn where agents differ is in the invocation_events form, whose
    events name their authors, and ADK finds the same calls and responses in it; a one-agent turn keeps
    tool_uses."""
    from google.adk.evaluation.eval_case import InvocationEvents, get_all_tool_calls_with_responses
    from google.adk.evaluation.eval_set import EvalSet

    from toolpath.evaluation.evalsets.files import load_eval_set

    path = tmp_path / "out.evalset.json"
    write_export([Session(session_id="s", agent_name="coordinator", invocations=[MULTI, SINGLE])], "evalset", path)
    (case,) = EvalSet.model_validate_json(path.read_text()).eval_cases
    multi, single = case.conversation
    assert isinstance(multi.intermediate_data, InvocationEvents)
    events = multi.intermediate_data.invocation_events
    authors = [e.author for e in events]
    assert authors == ["coordinator"] * 5 + ["billing_agent"] * 3  # a text, two calls, one call and the answer
    assert events[-1].content is None  # the answer's text is the final response's
    pairs = get_all_tool_calls_with_responses(multi.intermediate_data)
    assert [(c.id, c.name, c.args, r.response if r else None) for c, r in pairs] == [
        ("c1", "lookup", {"order": 7}, {"paid": True}),
        ("c2", "transfer_to_agent", {"agent_name": "billing_agent"}, {"result": None}),
        ("c3", "refund", {"order": 7}, {"result": "done"}),
    ]
    assert multi.final_response.parts[0].text == "Refunded."
    assert not isinstance(single.intermediate_data, InvocationEvents)
    assert [c.name for c in single.intermediate_data.tool_uses] == ["greet"]

    (turn, _) = load_eval_set(path).cases[0].invocations
    # read back, each expected call names its agent again: agent= compares one agent's calls
    assert [(c.name, c.agent_name) for c in turn.reference_trajectory] == [
        ("lookup", "coordinator"),
        ("transfer_to_agent", "coordinator"),
        ("refund", "billing_agent"),
    ]
    assert turn.intermediate_responses == [("coordinator", "Let me look.")]
