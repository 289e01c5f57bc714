"""``agent=`` online: the worker's rows carry each stored call's agent, so one sub-agent of a run is scored on
its own calls as it is offline."""

from __future__ import annotations

import json

import pytest

from toolpath.errors import ConfigError
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.metrics.rows import stored_row
from toolpath.model import Invocation, ToolCall
from toolpath.store.online_reads import latest_scored
from toolpath.store.store import Store

PROMPT = "Refund order 7"
TURN = Invocation(
    invocation_id="00000000000000b1",
    session_id="chat-7",
    agent_name="coordinator",
    prompt=PROMPT,
    response="Refunded.",
    tool_calls=[
        ToolCall(name="lookup", args={"order": 7}, agent_name="coordinator"),
        ToolCall(name="transfer_to_agent", args={"agent_name": "billing_agent"}, agent_name="coordinator"),
        ToolCall(name="refund", args={"order": 7}, agent_name="billing_agent"),
    ],
    answered_by="billing_agent",
)
METRICS = [
    "trajectory_exact_match(agent=billing_agent, name=billing_exact)",
    "trajectory_exact_match(agent=coordinator, name=coordinator_exact)",
    "trajectory_exact_match",
    "trajectory_recall(agent=coordinator)",
]


def test_the_online_worker_scores_one_agent_of_a_run(tmp_path):
    golden = tmp_path / "golden.jsonl"
    reference = [{"tool_name": "refund", "tool_input": {"order": 7}}]
    golden.write_text(json.dumps({"prompt": PROMPT, "reference_trajectory": reference}) + "\n")
    store = Store(f"sqlite:///{tmp_path / 'traffic.db'}")
    online = OnlineEvaluator(
        store, {"metrics": METRICS, "reference_dataset": str(golden), "poll_seconds": 0.02, "workers": 1}
    ).start()
    try:
        store.write([TURN])
        assert online.drain(30)
    finally:
        online.stop()
    try:
        (scored,) = latest_scored(store)
        scores = {name: value["score"] for name, value in scored["scores"].items()}
        (turn,) = store.turns_by_id([TURN.invocation_id])
    finally:
        store.close()
    assert [call[5] for call in turn.calls] == ["coordinator", "coordinator", "billing_agent"]
    assert scores == {
        "billing_exact": 1.0,
        "coordinator_exact": 0.0,
        "trajectory_exact_match": 0.0,
        "trajectory_recall": 0.0,
    }


def test_the_fast_path_keeps_each_calls_agent():
    """Calls with nothing but a name and arguments stay match keys; their records, built when read, name the
    agent."""
    calls = [("find", {}, None, None, None, "concierge"), ("book", {"n": 2}, None, None, None, None)]
    row, predicted = stored_row(
        {}, prompt=None, response=None, calls=calls, latency_in_seconds=None, failure=0, intermediate_responses=()
    )
    assert row["predicted_trajectory"] == [
        {"tool_name": "find", "tool_input": {}, "agent_name": "concierge"},
        {"tool_name": "book", "tool_input": {"n": 2}},
    ]
    assert "_agents" in predicted.__dict__ and predicted._calls is None
    assert [call.agent_name for call in predicted] == ["concierge", None]
    assert predicted.match_keys == (("find", {}), ("book", {"n": 2}))


def test_two_variants_of_one_name_are_refused_before_scoring(tmp_path):
    """Results are stored per invocation and metric name: two variants under one name would fail every batch."""
    store = Store(f"sqlite:///{tmp_path / 'traffic.db'}")
    try:
        metrics = ["trajectory_exact_match(agent=billing_agent)", "trajectory_exact_match"]
        with pytest.raises(ConfigError, match="listed twice: trajectory_exact_match"):
            OnlineEvaluator(store, {"metrics": metrics})
    finally:
        store.close()
