"""Limits at ingestion: a long attribute is cut and marked, spans past a trace's limit are not stored, an
invocation's tool calls past the limit are dropped and the invocation says how many — each hit counted."""

from __future__ import annotations

import json

import pytest

from tests.helpers.builders import otlp_json
from tests.helpers.collector import Collector
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import TOOL_CALLS_DROPPED, Limits
from toolpath.store.store import Store


def post(ingestor: Ingestor, body: bytes) -> int:
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    return ingestor.handle_http("/v1/traces", headers, lambda n: body[:n]).status


def test_limits_cut_drop_and_mark(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'l.db'}")
    limits = Limits(max_attribute_length=100, max_spans_per_trace=8, max_tool_calls=5)
    ingestor = Ingestor(store, limits=limits)
    assert post(ingestor, otlp_json("1" * 32, tool_calls=3, big="x" * 500)) == 200
    [span] = [s for s in store.spans_of_trace("1" * 32) if s.span_id == f"f{1:015x}"]
    arguments = span.attributes["gen_ai.tool.call.arguments"]
    assert len(arguments) <= 100 and json.loads(arguments)["blob"].endswith("chars]")  # still JSON: cut inside
    assert span.attributes["toolpath.truncated"] == ["gen_ai.tool.call.arguments"]

    assert post(ingestor, otlp_json("2" * 32, tool_calls=12)) == 200
    assert len(store.spans_of_trace("2" * 32)) == 8  # the agent span and 7 tool spans
    [inv] = [i for i in store.list_invocations() if i.trace_id == "2" * 32]
    assert len(inv.tool_calls) == 5 and inv.attributes[TOOL_CALLS_DROPPED] == 2
    assert limits.hits == {"attribute_values_cut": 3, "spans_over_trace_limit": 5, "tool_calls_dropped": 2}


def test_collect_reports_limits_hit(tmp_path):
    collector = Collector(tmp_path, None, "--max-tool-calls", "2").start()
    try:
        assert collector.post(otlp_json("3" * 32, tool_calls=4), "application/json")[0] == 200
        [inv] = collector.store().list_invocations()
        assert [c.args["i"] for c in inv.tool_calls] == [0, 1] and inv.attributes[TOOL_CALLS_DROPPED] == 2
    finally:
        collector.stop()
    assert "limits hit (tool calls dropped: 2)" in collector.process.stdout.read()
    # the cap is said where the calls are shown: sessions show (table and JSON), and an export of the turn
    from tests.helpers.cli import run_cli

    url = collector.store_url
    shown = run_cli(tmp_path, "sessions", "show", inv.session_id, "--store", url, env={"COLUMNS": "300"})
    assert "… and 2 more left out by the collector's --max-tool-calls" in shown.stdout
    assert "the collector kept 2 of this turn's 4 tool calls" in shown.stdout
    as_json = run_cli(tmp_path, "sessions", "show", inv.session_id, "--store", url, "--json")
    assert json.loads(as_json.stdout)["invocations"][0]["tool_calls_dropped"] == 2
    exported = run_cli(tmp_path, "export", "--format", "evalset", "--output", "cut.evalset.json", "--store", url)
    assert exported.returncode == 0 and "the collector kept 2 of its 4 tool calls (--max-tool-calls)" in exported.stderr


def export_history(user: str) -> dict:
    """Export a user's history."""
    return {"user": user, "rows": "r" * 100_000}  # a result past the collector's 64 KiB value limit


@pytest.mark.parametrize("schema", ["2", "1"])
def test_a_long_tool_result_is_cut_inside_its_json_and_the_call_keeps_its_arguments(
    tmp_path, app_spans, monkeypatch, schema
):
    """A real ADK agent whose tool returns 100 KB, its own spans sent to the collector: the call is rebuilt with its
    name and arguments (the result cut, marked), so it scores as ``adk eval`` scores it — before, the JSON was cut as
    text, the call came back from ADK's span without arguments, and it scored 0.0."""
    import asyncio

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    pytest.importorskip("google.adk")
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from tests.helpers.adk_agent import ScriptedModel, answer, call, calls
    from toolpath.evaluation.recorded import rows_from_store
    from toolpath.evaluation.runner import evaluate

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", schema)
    prompt = "Export ada's history."
    model = ScriptedModel(turns={prompt: [calls(call("export_history", user="ada")), answer("Exported.")]})
    agent = LlmAgent(name="archivist", model=model, tools=[export_history])
    runner = InMemoryRunner(agent, app_name="archive")

    async def turn() -> None:
        await runner.session_service.create_session(app_name="archive", user_id="u", session_id="long-result")
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        async for _ in runner.run_async(user_id="u", session_id="long-result", new_message=message):
            pass

    asyncio.run(turn())
    store = Store(f"sqlite:///{tmp_path / 'l.db'}")
    limits = Limits()  # the defaults: values over 64 KiB are cut
    ingestor = Ingestor(store, limits=limits)
    body = encode_spans(app_spans.get_finished_spans()).SerializeToString()
    headers = {"Content-Type": "application/x-protobuf", "Content-Length": str(len(body))}
    assert ingestor.handle_http("/v1/traces", headers, lambda n: body[:n]).status == 200
    assert limits.hits["attribute_values_cut"] >= 1
    [inv] = store.get_session("long-result").invocations
    [call] = inv.tool_calls
    assert (call.name, call.args) == ("export_history", {"user": "ada"})
    assert call.result["user"] == "ada" and call.result["rows"].endswith("chars]")  # cut inside, marked
    reference = [{"tool_name": "export_history", "tool_input": {"user": "ada"}}]
    rows = [{**row, "reference_trajectory": reference} for row in rows_from_store(store, session_id="long-result")]
    assert evaluate(rows, ["trajectory_exact_match"]).summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_a_capped_turn_is_never_scored_on_its_part(store):
    """A turn the collector kept 5 of 12 calls of: every trajectory metric is null with the reason, recorded or
    online (before, 5 calls were scored as if they were the turn's, and the verdict changed with the cap)."""
    from toolpath.evaluation.online import OnlineConfig
    from toolpath.evaluation.online.workers import OnlineEvaluator
    from toolpath.evaluation.recorded import rows_from_store
    from toolpath.evaluation.runner import evaluate
    from toolpath.evaluation.scoring import score_views

    ingestor = Ingestor(store, limits=Limits(max_tool_calls=5))
    assert post(ingestor, otlp_json("4" * 32, tool_calls=12)) == 200
    rows = rows_from_store(store)
    result = evaluate(rows, ["tool_call_count", "trajectory_exact_match", "exact_match"])
    row = result.metrics_table[0]
    reason = "the collector kept 5 of this turn's 12 tool calls (--max-tool-calls)"
    for metric in ("tool_call_count", "trajectory_exact_match"):
        assert row[f"{metric}/score"] is None and reason in row[f"{metric}/explanation"]
    [turn] = store.turns_by_id([rows[0]["invocation_id"]])
    assert turn.calls_dropped == 7 and len(turn.calls) == 5
    online = OnlineEvaluator(store, OnlineConfig(metrics=["tool_call_count"], poll_seconds=0.05))
    scored_by = online.units["default"].metrics
    table, _, _ = score_views([online.row(turn)], scored_by)  # what online scoring stores for the turn
    assert table[0]["tool_call_count/score"] is None and reason in table[0]["tool_call_count/explanation"]
