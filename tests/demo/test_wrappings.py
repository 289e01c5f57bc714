"""The demo's LangGraph ReAct agent and Agent Engine-style app: real LangGraph, real LangChain tools, driven by the
scripted chat model, traced by LangChain's callbacks and the app adapter; they must record exactly what the
plain-function agent records."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

import toolpath
from toolpath.demo import dataset_path
from toolpath.demo.langgraph_home import APP_NAME, LANGGRAPH_AGENT_NAME, build_app, build_graph
from toolpath.demo.smart_home import smart_home_agent
from toolpath.evaluation.runner import evaluate


def _trajectories(result) -> dict[str, list]:
    return {
        row["case_id"]: [(c["tool_name"], c["tool_input"]) for c in row["predicted_trajectory"]]
        for row in result.metrics_table
    }


def test_three_wrappings_record_the_same_trajectories(tracing):
    store = tracing.store
    metrics = ["trajectory_exact_match", "tool_argument_similarity"]
    plain = evaluate(dataset_path(), metrics, runnable=smart_home_agent, store=store, concurrency=1)
    graph = evaluate(dataset_path(), metrics, runnable=build_graph(), store=store, concurrency=1)
    app = evaluate(dataset_path(), metrics, runnable=build_app(), store=store, concurrency=1)
    toolpath.flush()

    expected = _trajectories(plain)
    assert sum(len(calls) for calls in expected.values()) == 32
    assert _trajectories(graph) == expected
    assert _trajectories(app) == expected
    for result in (graph, app):
        for key, value in plain.summary_metrics.items():
            if "latency" not in key:
                assert result.summary_metrics[key] == value, key
    # the stored invocations carry the agents' own names, the failing tool's error, and the failed run
    for name in (LANGGRAPH_AGENT_NAME, APP_NAME):
        invocations = store.list_invocations(agent_name=name, limit=100)
        assert len(invocations) == 24
        errors = sorted(c.error for inv in invocations for c in inv.tool_calls if c.error)
        assert errors == [
            "toolpath.demo.smart_home.DeviceError: 70.0 °C is outside the safe range 5-30 °C",
            "toolpath.demo.smart_home.DeviceError: garage has no thermostat",
        ]
        [failed] = [inv for inv in invocations if inv.failure]
        assert failed.prompt == "Order a pizza for dinner." and "NotImplementedError" in failed.error


def test_app_stream_query_is_traced_until_exhausted(tracing):
    app = build_app()
    updates = list(app.stream_query(input="Lock the front door and notify me."))
    toolpath.flush()
    assert [list(update) for update in updates] == [["agent"], ["tools"], ["agent"], ["tools"], ["agent"]]
    [invocation] = tracing.store.list_invocations(agent_name=APP_NAME, limit=10)
    assert [(c.name, c.args) for c in invocation.tool_calls] == [
        ("lock_door", {"door_id": "door-front"}),
        ("send_notification", {"message": "The door is locked."}),
    ]
    assert invocation.response == "The door is locked."  # read from LangGraph's update chunks


def test_app_stream_closed_early_ends_its_span(tracing):
    stream = build_app().stream_query(input="Lock the front door and notify me.")
    assert list(next(stream)) == ["agent"]
    stream.close()
    toolpath.flush()
    [invocation] = tracing.store.list_invocations(agent_name=APP_NAME, limit=10)
    assert invocation.response is None and invocation.failure == 0
