"""Every row a judge reads carries what each call returned, or its error, and its id, on every path: an agent
run (``--agent``, replay, an eval set's inference, ``--from-results``: :func:`outcome_row`), a stored invocation
(``--from-store``: :func:`invocation_row`) and online scoring (:meth:`OnlineEvaluator.row`); and ADK's judge sees
them in its invocation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from toolpath.evaluation.online import OnlineEvaluator
from toolpath.evaluation.outcome_rows import outcome_row
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.metrics.rows import invocation_row, with_parsed_trajectories
from toolpath.model import Invocation, ToolCall

CALLS = [
    ToolCall(name="find_restaurant", args={"city": "Lyon"}, result=["Le Bouchon"], call_id="c1"),
    ToolCall(name="book", args={"restaurant": "Le Bouchon", "people": 2}, error="Timeout: no answer", call_id="c2"),
    ToolCall(name="book", args={"restaurant": "Le Bouchon", "people": 2}, result={"ok": True}),
    ToolCall(name="ping", args=None, result="pong"),
]
INVOCATION = Invocation(
    invocation_id="00000000000000b1",
    session_id="chat-1",
    agent_name="concierge",
    prompt="A table for two in Lyon tonight.",
    response="Booked a table for two at Le Bouchon.",
    tool_calls=CALLS,
    intermediate_responses=[("concierge", "Let me find a place.")],
    latency_seconds=1.0,
)


def outcomes(view: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What a judge reads of each call of a row as metrics see it (its trajectory parsed)."""
    return [(c.name, c.args, c.result, c.error, c.call_id) for c in view["predicted_trajectory"]]


EXPECTED = [(c.name, c.args, c.result, c.error, c.call_id) for c in CALLS]


def test_an_agent_runs_row_carries_results_errors_and_ids():
    row = outcome_row(AgentOutcome(INVOCATION.response, CALLS, 1.0, 0, None, INVOCATION), INVOCATION.prompt or "")
    assert outcomes(with_parsed_trajectories(row)) == EXPECTED
    assert row["predicted_trajectory"][0]["tool_output"] == ["Le Bouchon"]
    assert row["predicted_trajectory"][1]["error"] == "Timeout: no answer"


def test_a_stored_invocations_row_carries_them(tmp_path, monkeypatch):
    from toolpath.store.store import Store

    monkeypatch.setenv("GOOGLE_API_KEY", "unused")  # a judge metric connects its client; nothing is asked here
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.write([INVOCATION])
        (stored,) = store.invocations_by_id([INVOCATION.invocation_id])
        offline = invocation_row(stored)
        assert outcomes(with_parsed_trajectories(offline)) == EXPECTED
        online = OnlineEvaluator(store, {"metrics": ["hallucinations_v1"]})
        (turn,) = store.turns_by_id([INVOCATION.invocation_id])
        row, view = online.row(turn)
        assert row == offline and outcomes(view) == EXPECTED
    finally:
        store.close()


def test_adks_invocation_of_a_row_holds_each_calls_response():
    pytest.importorskip("google.adk.evaluation")
    from toolpath.judges.adk_bridge import actual_invocation

    row = outcome_row(AgentOutcome(INVOCATION.response, CALLS, 1.0, 0, None, INVOCATION), INVOCATION.prompt or "")
    invocation = actual_invocation(with_parsed_trajectories(row))
    parts = [p for e in invocation.intermediate_data.invocation_events for p in e.content.parts]
    assert parts[0].text == "Let me find a place."
    responses = [(p.function_response.id, p.function_response.response) for p in parts if p.function_response]
    assert responses == [
        ("c1", {"result": ["Le Bouchon"]}),
        ("c2", {"error": "Timeout: no answer"}),
        (None, {"ok": True}),
        (None, {"result": "pong"}),
    ]
