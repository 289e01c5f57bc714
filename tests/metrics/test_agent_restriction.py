"""``agent=`` on the trajectory metrics: one agent of a multi-agent run evaluated on its own calls."""

from __future__ import annotations

import pytest

from toolpath.errors import MetricError
from toolpath.evaluation.catalog import resolve_metric
from toolpath.metrics.rows import invocation_row
from toolpath.model import Invocation, ToolCall

TURN = Invocation(
    invocation_id="i",
    session_id="s",
    agent_name="coordinator",
    tool_calls=[
        ToolCall(name="lookup", args={"order": 7}, agent_name="coordinator"),
        ToolCall(name="transfer_to_agent", args={"agent_name": "billing_agent"}, agent_name="coordinator"),
        ToolCall(name="refund", args={"order": 7}, agent_name="billing_agent"),
    ],
    answered_by="billing_agent",
)


def score(spec: str, reference: list[dict]) -> float | None:
    row = {**invocation_row(TURN), "reference_trajectory": reference}
    return resolve_metric(spec).score(row).score


def test_a_sub_agent_is_scored_on_its_own_calls():
    billing = [{"tool_name": "refund", "tool_input": {"order": 7}}]
    assert score("trajectory_exact_match", billing) == 0.0  # the whole run made three calls
    assert score("trajectory_exact_match(agent=billing_agent)", billing) == 1.0
    assert score("trajectory_exact_match(agent=coordinator)", billing) == 0.0
    assert (
        score("trajectory_precision(agent=coordinator)", [{"tool_name": "lookup", "tool_input": {"order": 7}}]) == 0.5
    )
    assert score("trajectory_recall(agent=nobody)", billing) == 0.0


def test_reference_calls_naming_another_agent_are_left_out():
    reference = [
        {"tool_name": "lookup", "tool_input": {"order": 7}, "agent_name": "coordinator"},
        {"tool_name": "refund", "tool_input": {"order": 7}, "agent_name": "billing_agent"},
    ]
    assert score("trajectory_exact_match(agent=billing_agent)", reference) == 1.0
    assert score("trajectory_any_order_match", reference) == 1.0


def test_agent_must_name_an_agent():
    with pytest.raises(MetricError, match="agent"):
        resolve_metric("trajectory_exact_match(agent=1)")
