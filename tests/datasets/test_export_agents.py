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
