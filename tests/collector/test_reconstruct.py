"""Decoded spans of every real peer instrumentation rebuild to their ground truth, in any arrival order: the GenAI
semantic-conventions dump (official OTel LangChain instrumentation), OpenInference, OpenLLMetry and ADK."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from tests.helpers import SPANS
from tests.helpers.builders import load_spans
from toolpath.collector.reconstruct import build_invocations
from toolpath.collector.reconstruct.span_values import parse_json
from toolpath.store.spanrecord import SpanRecord


def test_otel_genai_langchain_rebuilds_to_ground_truth():
    expected = json.loads((SPANS / "otel-genai-langchain.shared.expected.json").read_text())
    spans = load_spans("otel-genai-langchain")
    random.Random(5).shuffle(spans)  # arrival order must not matter
    invocations = sorted(build_invocations(spans), key=lambda i: i.started_at)
    assert len(invocations) == len(expected["invocations"]) == 2
    for got, want in zip(invocations, expected["invocations"], strict=True):
        assert got.trace_id == want["trace_id"]
        assert (got.prompt, got.response) == (want["prompt"], want["response"])
        assert got.session_id == "home-session-0001"
        assert [(c.name, c.args, c.result if not c.error else None, bool(c.error)) for c in got.tool_calls] == [
            (c["name"], c["args"], c["result"] if not c["error"] else None, c["error"]) for c in want["tool_calls"]
        ]
    failing = invocations[1].tool_calls[-1]
    assert (failing.name, failing.error) == ("set_temperature", "ValueError: No thermostat found in location 'garage'")


FULL_CONTENT = ["adk-v1", "adk-v2", "openinference-langchain", "openllmetry-langchain", "otel-genai-langchain"]


def rebuilt(source: str, seed: int):
    spans = load_spans(source)
    random.Random(seed).shuffle(spans)  # arrival order must not matter
    return sorted(build_invocations(spans), key=lambda i: i.started_at)


@pytest.mark.parametrize("source", FULL_CONTENT)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_peer_rebuilds_to_its_ground_truth(source, seed):
    expected = json.loads((SPANS / f"{source}.shared.expected.json").read_text())["invocations"]
    invocations = rebuilt(source, seed)
    assert len(invocations) == len(expected) == 2
    for got, want in zip(invocations, expected, strict=True):
        assert got.trace_id == want["trace_id"]
        assert (got.agent_name, got.session_id) == ("smart_home_assistant", "home-session-0001")
        assert (got.prompt, got.response) == (want["prompt"], want["response"])
        assert [(c.name, c.args, bool(c.error)) for c in got.tool_calls] == [
            (c["name"], c["args"], c["error"]) for c in want["tool_calls"]
        ]
        assert [c.result for c in got.tool_calls if not c.error] == [
            c["result"] for c in want["tool_calls"] if not c["error"]
        ]
    [failing] = [c for c in invocations[1].tool_calls if c.error]
    assert "No thermostat found in location 'garage'" in failing.error


def test_adk_without_content_keeps_what_is_recoverable():
    expected = json.loads((SPANS / "adk-v2-nocontent.shared.expected.json").read_text())["invocations"]
    invocations = rebuilt("adk-v2-nocontent", 3)
    for got, want in zip(invocations, expected, strict=True):
        assert [(c.name, bool(c.error)) for c in got.tool_calls] == [
            (c["name"], c["error"]) for c in want["tool_calls"]
        ]
        assert all(c.call_id and c.call_id.startswith("adk-") for c in got.tool_calls)
        assert got.session_id == "home-session-0001" and got.prompt is None and got.response is None


def test_an_end_before_the_start_is_an_unknown_latency_not_a_negative_one():
    from toolpath.store.spanrecord import SpanRecord
    from toolpath.tracer import semconv as sc

    root = SpanRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None,
        name="invoke_agent bot",
        kind=1,
        start_time=2_000_000_000,
        end_time=1_000_000_000,  # a clock that went backwards
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "bot"},
    )
    (invocation,) = build_invocations([root])
    assert invocation.latency_seconds is None
    assert invocation.failure == 0


def under_agent_span(spans, trajectory, *, source=None, seed=4):
    """The content-less ADK trace's spans under toolpath-style ``invoke_agent`` spans (one per trace) that carry
    ``trajectory(trace_id)`` as their own record of the run; shuffled."""
    records = []
    for trace_id in sorted({s.trace_id for s in spans}):
        root = next(s for s in spans if s.trace_id == trace_id and s.parent_span_id is None)
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "home",
            "toolpath.agent.predicted_trajectory": json.dumps(trajectory(trace_id)),
        }
        if source:
            attributes["toolpath.agent.trajectory_source"] = source
        agent = SpanRecord(
            trace_id, "f" * 16, None, "invoke_agent home", 1, root.start_time - 1, root.end_time, attributes=attributes
        )
        records.append(agent)
        for span in spans:
            if span.trace_id == trace_id:
                records.append(dataclasses.replace(span, parent_span_id=span.parent_span_id or agent.span_id))
    random.Random(seed).shuffle(records)
    return sorted(build_invocations(records), key=lambda i: i.started_at)


def nocontent_truth():
    """trace id -> the true calls of the content-less ADK fixture (its ground truth), with the spans' call ids."""
    expected = json.loads((SPANS / "adk-v2-nocontent.shared.expected.json").read_text())["invocations"]
    spans = load_spans("adk-v2-nocontent")
    truth = {}
    for want in expected:
        tool_spans = sorted(
            (s for s in spans if s.trace_id == want["trace_id"] and s.attributes.get("gen_ai.tool.name")
             and s.attributes["gen_ai.tool.name"] != "(merged tools)"),
            key=lambda s: s.start_time,
        )  # fmt: skip
        truth[want["trace_id"]] = [
            {"name": c["name"], "args": c["args"], "id": s.attributes["gen_ai.tool.call.id"]}
            for c, s in zip(want["tool_calls"], tool_spans, strict=True)
        ]
    return spans, truth


def test_content_less_tool_spans_take_arguments_from_the_agents_record_by_call_id():
    spans, truth = nocontent_truth()
    # the record lists the calls in another order: they are matched by id, not by position
    invocations = under_agent_span(spans, lambda trace: list(reversed(truth[trace])))
    assert len(invocations) == 2
    for inv in invocations:
        want = truth[inv.trace_id]
        assert [(c.name, c.args, c.call_id) for c in inv.tool_calls] == [(w["name"], w["args"], w["id"]) for w in want]
        assert inv.attributes["toolpath.content_missing"] is True
        assert "toolpath.arguments_unknown" not in inv.attributes
        assert inv.agent_name == "home"
    failed = invocations[1].tool_calls[-1]
    assert failed.name == "set_temperature" and failed.error  # the span's error is kept


def test_content_less_tool_spans_take_arguments_by_position_without_ids():
    spans, truth = nocontent_truth()
    vertex_form = lambda trace: [{"tool_name": w["name"], "tool_input": w["args"]} for w in truth[trace]]  # noqa: E731
    for inv in under_agent_span(spans, vertex_form, seed=9):
        assert [(c.name, c.args) for c in inv.tool_calls] == [(w["name"], w["args"]) for w in truth[inv.trace_id]]
        assert inv.attributes["toolpath.content_missing"] is True and "toolpath.arguments_unknown" not in inv.attributes


def test_content_less_trace_alone_is_flagged_and_counts_unknown_arguments():
    for inv in rebuilt("adk-v2-nocontent", 5):
        assert inv.attributes["toolpath.content_missing"] is True
        assert inv.attributes["toolpath.arguments_unknown"] == len(inv.tool_calls) > 0
    # a record that does not match (other names, another length) fills in nothing
    spans, truth = nocontent_truth()
    wrong = lambda trace: [{"name": "other", "args": {"x": 1}}]  # noqa: E731
    for inv in under_agent_span(spans, wrong):
        assert all(c.args == {} for c in inv.tool_calls)
        assert inv.attributes["toolpath.arguments_unknown"] == len(truth[inv.trace_id])


def test_a_call_recorded_with_no_arguments_is_not_content_less():
    for inv in rebuilt("adk-v2", 1):
        assert "toolpath.content_missing" not in inv.attributes
    spans, truth = nocontent_truth()
    for span in spans:  # "{}" recorded: a call made without arguments, which nothing overwrites
        if span.attributes.get("gen_ai.operation.name") == "execute_tool":
            span.attributes["gen_ai.tool.call.arguments"] = "{}"
    for inv in under_agent_span(spans, lambda trace: truth[trace]):
        assert all(c.args == {} for c in inv.tool_calls if c.name != "(merged tools)")
        assert "toolpath.content_missing" not in inv.attributes


def test_an_event_trajectory_is_the_trajectory_and_spans_add_timings():
    spans, truth = nocontent_truth()
    with_results = lambda trace: [{**w, "result": {"from": "events"}} for w in truth[trace]]  # noqa: E731
    for inv in under_agent_span(spans, with_results, source="events"):
        want = truth[inv.trace_id]
        assert [(c.name, c.args, c.call_id, c.result) for c in inv.tool_calls] == [
            (w["name"], w["args"], w["id"], {"from": "events"}) for w in want
        ]
        assert all(c.start_time and c.end_time for c in inv.tool_calls)
        assert inv.attributes["toolpath.content_missing"] is True and "toolpath.arguments_unknown" not in inv.attributes
    # the events said there were no calls: there were none, whatever spans exist
    for inv in under_agent_span(spans, lambda trace: [], source="events"):
        assert inv.tool_calls == []


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, 2.5, null]}', ' {"a": 1}', '{"a": 1} ', '{"a": 1} x', "", "   ", "\ufeff{}", "NaN", "-Infinity",
     "1e999", '"text"', "plain text", '{"a": 1', "[" * 5000 + "]" * 5000, "12", "1" * 5000],
)  # fmt: skip
def test_json_attributes_parse_as_json_loads_reads_them(text):
    """Text that is one JSON value is parsed, anything else is kept as the text; as ``json.loads`` decides."""
    try:
        expected = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        expected = text
    except ValueError:  # an integer past Python's digit limit: json.loads' own error
        with pytest.raises(ValueError):
            parse_json(text)
        return
    assert repr(parse_json(text)) == repr(expected)


def test_constructed_records_are_what_model_construct_builds():
    spans = load_spans("adk-v2")
    for invocation in build_invocations(spans):
        for record in (invocation, *invocation.tool_calls):
            values = {name: getattr(record, name) for name in type(record).model_fields}
            built = type(record).model_construct(**values)
            fields = [(key, value) for key, value in record.__dict__.items() if key in type(record).model_fields]
            assert fields == list(built.__dict__.items())  # beside them, only what the cleaning may skip
            assert record.model_fields_set == built.model_fields_set
            assert record == built and record.model_dump() == built.model_dump()


def oi_span(span_id: str, parent: str | None, name: str, kind: str, start: int, **attrs) -> SpanRecord:
    attributes = {"openinference.span.kind": kind, **attrs}
    return SpanRecord("c" * 32, span_id.rjust(16, "0"), parent and parent.rjust(16, "0"), name, 1, start, start + 1,
                      attributes=attributes)  # fmt: skip


def test_openinference_agent_spans_name_the_agent_of_each_call_and_of_the_answer():
    """openai-agents: a workflow AGENT root with no name, an AGENT span per agent (a handoff starts the next)."""
    out = "llm.output_messages.0.message"
    spans = [
        oi_span("1", None, "support", "AGENT", 1),
        oi_span("2", "1", "triage", "AGENT", 10, **{"agent.name": "triage"}),
        oi_span("3", "2", "lookup", "TOOL", 11, **{"tool.name": "lookup", "input.value": "{}"}),
        oi_span("4", "2", "transfer_to_billing", "TOOL", 12, **{"tool.name": "transfer_to_billing"}),
        oi_span("5", "1", "billing", "AGENT", 20, **{"agent.name": "billing"}),
        oi_span("6", "5", "turn", "CHAIN", 21),
        oi_span("7", "6", "refund", "TOOL", 22, **{"tool.name": "refund", "input.value": "{}"}),
        oi_span("8", "6", "response", "LLM", 23, **{f"{out}.role": "assistant", f"{out}.content": "Refunded."}),
    ]
    [invocation] = build_invocations(spans)
    assert invocation.agent_name == "triage"  # the first agent names an unnamed workflow
    assert [(c.name, c.agent_name) for c in invocation.tool_calls] == [
        ("lookup", "triage"),
        ("transfer_to_billing", "triage"),
        ("refund", "billing"),
    ]
    assert invocation.answered_by == "billing"
