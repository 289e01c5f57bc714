"""One stored invocation, every built-in metric: the same score online (the worker scores it as it is stored) and
offline (``toolpath eval --from-store`` re-scores it later). Both build their rows through
``toolpath.metrics.rows``; a failed call's error must reach the behaviour metrics on both paths."""

from __future__ import annotations

import asyncio
import json

import pytest

from toolpath.evaluation import catalog
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.evaluation.recorded import rows_from_store
from toolpath.evaluation.runner import evaluate
from toolpath.judges.client import JudgeReply, JudgeRequest
from toolpath.judges.vertex import JudgeMetric
from toolpath.metrics.rows import invocation_row, with_parsed_trajectories
from toolpath.model import Invocation, ToolCall
from toolpath.store.online_reads import latest_scored
from toolpath.store.store import Store
from toolpath.trajectory import parse_trajectory

PROMPT = "Book a table for two in Lyon tonight"
GOLDEN = {
    "prompt": PROMPT,
    "reference": "Booked a table for two at Le Bouchon at 8pm.",
    "reference_trajectory": [
        {"tool_name": "find_restaurant", "tool_input": {"city": "Lyon"}},
        {"tool_name": "book", "tool_input": {"restaurant": "Le Bouchon", "people": 2}},
    ],
}
# the one metric that takes a required parameter, given one
PARAMETERS = {"trajectory_single_tool_use": "trajectory_single_tool_use(tool_name=book)"}


def stored_invocation() -> Invocation:
    return Invocation(
        invocation_id="00000000000000a1",
        session_id="chat-1",
        agent_name="concierge",
        prompt=PROMPT,
        response="Booked a table for two at Le Bouchon at 8pm.",
        tool_calls=[
            ToolCall(name="find_restaurant", args={"city": "Lyon"}, result=["Le Bouchon"], call_id="c1"),
            ToolCall(name="book", args={"restaurant": "Le Bouchon", "people": 2}, error="Timeout: no answer"),
            ToolCall(name="book", args={"restaurant": "Le Bouchon", "people": 2}, result={"ok": True}),
        ],
        intermediate_responses=[("concierge", "Let me find a place.")],
        latency_seconds=1.25,
        trace_id="a1" * 16,
    )


def computation_metrics() -> list[str]:
    specs = [PARAMETERS.get(name, name) for name in catalog.metric_names()]
    return [s for s in specs if not isinstance(catalog.resolve_metric(s), JudgeMetric)]


@pytest.fixture
def store_with_one_run(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'traffic.db'}")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(GOLDEN) + "\n")
    metrics = computation_metrics()
    online = OnlineEvaluator(
        store, {"metrics": metrics, "reference_dataset": str(golden), "poll_seconds": 0.02, "workers": 1}
    ).start()
    try:
        store.write([stored_invocation()])
        assert online.drain(30)
    finally:
        online.stop()
    yield store, online, metrics
    store.close()


def test_every_computation_metric_scores_the_same_online_and_offline(store_with_one_run):
    store, _, metrics = store_with_one_run
    (scored,) = latest_scored(store)
    offline_rows = [dict(row, **{k: v for k, v in GOLDEN.items() if k != "prompt"}) for row in rows_from_store(store)]
    offline = evaluate(offline_rows, metrics).metrics_table[0]
    names = [catalog.resolve_metric(m).name for m in metrics]
    assert len(names) >= 25
    mismatched = {
        name: (scored["scores"][name]["score"], offline[f"{name}/score"])
        for name in names
        if scored["scores"][name]["score"] != offline[f"{name}/score"]
    }
    assert not mismatched
    # the failed call reaches the behaviour metrics on both paths (it was dropped online before)
    assert scored["scores"]["tool_error_rate"]["score"] == pytest.approx(1 / 3)
    assert scored["scores"]["error_recovery"]["score"] == 1.0
    assert scored["scores"]["trajectory_single_tool_use"]["score"] == 1.0


def test_judge_metrics_see_the_same_prompt_online_and_offline(store_with_one_run):
    """Judge metrics are scored by a model: the same row renders the same judge request on both paths."""
    store, online, _ = store_with_one_run
    (turn,) = store.turns_by_id(["00000000000000a1"])
    online_row, _ = online.row(turn)
    offline_row = dict(rows_from_store(store)[0], **{k: v for k, v in GOLDEN.items() if k != "prompt"})
    specs = [PARAMETERS.get(name, name) for name in catalog.metric_names()]
    judge_metrics = [m for m in map(catalog.resolve_metric, specs) if isinstance(m, JudgeMetric)]
    assert len(judge_metrics) >= 20

    def prompts(row):
        seen: list[str] = []

        async def ask(request: JudgeRequest) -> JudgeReply:
            seen.append(request.prompt)
            return JudgeReply(text="{}", input_tokens=0, output_tokens=0)

        async def all_metrics():
            for metric in judge_metrics:
                try:
                    await metric.judge(row, ask)
                except Exception as exc:  # a metric that needs a column this row lacks: same on both paths
                    seen.append(f"{metric.name}: {type(exc).__name__}")

        asyncio.run(all_metrics())
        return seen

    online_prompts, offline_prompts = prompts(online_row), prompts(offline_row)
    assert online_prompts == offline_prompts
    assert any(PROMPT in p for p in online_prompts)


@pytest.mark.parametrize(
    "calls",
    [
        [],
        [ToolCall(name="find_restaurant", args={"city": "Lyon", "filters": {"stars": [1, 2]}}, result="x")],
        [ToolCall(name="find", args={}), ToolCall(name="book", args={"é": "ü"}, error="Timeout: no answer")],
        [ToolCall(name="ping", args=None), ToolCall(name="ping", args={"n": 1.5, "ok": True, "none": None})],
        [ToolCall(name="find", args={}, agent_name="concierge"), ToolCall(name="book", args={}, agent_name="booker")],
        [ToolCall(name="find", args={}, agent_name="concierge", result=1), ToolCall(name="book", args={})],
    ],
    ids=["no calls", "one call", "a failed call", "no arguments", "two agents", "two agents, a result"],
)
def test_online_reads_the_row_the_stored_invocation_makes(store, tmp_path, calls):
    """Online scoring reads columns and (name, arguments, error) of each call, not records: the row and its
    parsed trajectory are the ones the stored invocation's records make (invocation_row, parse_trajectory)."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(GOLDEN) + "\n")
    invocation = stored_invocation().model_copy(update={"tool_calls": calls})
    store.write([invocation])
    online = OnlineEvaluator(store, {"metrics": ["tool_call_count"], "reference_dataset": str(golden)})
    (turn,) = store.turns_by_id(["missing", invocation.invocation_id])
    row, view = online.row(turn)

    (stored,) = store.invocations_by_id([invocation.invocation_id])
    expected = dict(invocation_row(stored), **{k: v for k, v in GOLDEN.items() if k != "prompt"})
    assert row == expected
    assert view == dict(with_parsed_trajectories(expected))
    assert view["predicted_trajectory"].match_keys == parse_trajectory(expected["predicted_trajectory"]).match_keys
    assert (turn.trace_id, turn.started_at, turn.latency_seconds) == (stored.trace_id, stored.started_at, 1.25)
