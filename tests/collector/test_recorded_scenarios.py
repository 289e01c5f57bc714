"""Live recordings of real instrumentations (``tests/fixtures/spans/recorders``) rebuild to what the tools
received, in the order the model asked for them: parallel calls (some of which ran out of that order), a
raising tool, the same tool twice, a no-argument tool, non-ASCII arguments, a turn without tools, sub-agents."""

from __future__ import annotations

import json
import random

import pytest

from tests.helpers import SPANS
from toolpath.collector.otlp import decode
from toolpath.collector.reconstruct import build_invocations

SCENARIOS = [
    "openinference-langchain",
    "openllmetry-langchain",
    "otel-genai-langchain",
    "adk-v2",
    "adk-v2-legacy",
    "adk-v1",
    "pydantic-ai-v2",
    "pydantic-ai-v3",
    "pydantic-ai-v5",
    "openinference-openai-agents",
]
REDACTED_ERRORS = {"openinference-openai-agents"}
"""openai-agents traces a tool failure as "Error details are redacted" unless the tool has its own
``failure_error_function``."""
LANGCHAIN = [s for s in SCENARIOS if s.endswith("-langchain")]


def scenario_spans(source: str, kind: str = "pb") -> list:
    body = (SPANS / f"{source}.scenarios.otlp.{kind}").read_bytes()
    return decode(body, "application/x-protobuf" if kind == "pb" else "application/json")


def expected(source: str) -> dict:
    return json.loads((SPANS / f"{source}.scenarios.expected.json").read_text(encoding="utf-8"))


def as_recorded(call) -> tuple:
    """A rebuilt call in the ground truth's terms: a failed call's result is the exception message."""
    return (call.name, call.args, call.result if not call.error else None, bool(call.error))


def truth(call: dict) -> tuple:
    return (call["name"], call["args"], None if call["error"] else call["result"], call["error"])


@pytest.mark.parametrize("kind", ["pb", "json"])
@pytest.mark.parametrize("source", SCENARIOS)
def test_every_turn_rebuilds_to_what_the_tools_received(source, kind):
    want = expected(source)
    spans = scenario_spans(source, kind)
    random.Random(7).shuffle(spans)  # arrival order must not matter
    invocations = sorted(build_invocations(spans), key=lambda i: i.started_at)
    assert [i.trace_id for i in invocations] == [w["trace_id"] for w in want["invocations"]]
    for got, turn in zip(invocations, want["invocations"], strict=True):
        session, agent = turn.get("session_id", want["session_id"]), turn.get("agent_name", want["agent_name"])
        assert (got.session_id, got.agent_name) == (session, agent)
        assert (got.prompt, got.response) == (turn["prompt"], turn["response"])
        assert got.failure == (1 if turn.get("failed") else 0)
        assert [as_recorded(c) for c in got.tool_calls] == [truth(c) for c in turn["tool_calls"]]
        for call, recorded in zip(got.tool_calls, turn["tool_calls"], strict=True):
            if recorded["error"] and source not in REDACTED_ERRORS:
                assert recorded["result"] in call.error
            assert call.call_id is None or not call.call_id.startswith("<")  # ADK's "<not specified>" is no id


@pytest.mark.parametrize("source", LANGCHAIN)
def test_the_recordings_hold_parallel_calls_that_started_out_of_the_models_order(source):
    """Without this, the test above would not show that the model's order wins over start order."""
    want = expected(source)["invocations"]
    out_of_order = 0
    for invocation in build_invocations(scenario_spans(source)):
        [turn] = [w for w in want if w["trace_id"] == invocation.trace_id]
        started = sorted(invocation.tool_calls, key=lambda c: (c.start_time, c.name))
        if [as_recorded(c) for c in started] != [truth(c) for c in turn["tool_calls"]]:
            out_of_order += 1
    assert out_of_order >= 1


@pytest.mark.parametrize("adk", ["adk-v2", "adk-v2-legacy", "adk-v1"])
def test_adk_results_lose_the_result_wrapper_and_compare_with_langchain_results(adk):
    """ADK wraps a tool's non-dict return value as ``{"result": value}``; stored is the bare value, as LangChain
    sources store it, so results compare across frameworks."""
    langchain = {i.prompt: i for i in build_invocations(scenario_spans("otel-genai-langchain"))}
    compared = 0
    for invocation in build_invocations(scenario_spans(adk)):
        other = langchain.get(invocation.prompt)
        if other is None or invocation.prompt.startswith("Ask the energy advisor"):
            continue  # the transfer exists only in ADK; the advisor is an AgentTool there, a tool calling a graph here
        assert [(c.name, c.args, c.result) for c in invocation.tool_calls if not c.error] == [
            (c.name, c.args, c.result) for c in other.tool_calls if not c.error
        ]
        compared += 1
    assert compared == 6
    rooms = next(c for i in build_invocations(scenario_spans(adk)) for c in i.tool_calls if c.name == "list_rooms")
    assert rooms.result == ["kitchen", "bedroom", "living_room", "office"]


@pytest.mark.parametrize("source", ["adk-v2-legacy", "adk-v1"])
def test_adk_legacy_format_makes_one_invocation_per_turn_even_with_an_agent_transfer(source):
    invocations = build_invocations(scenario_spans(source))
    [transfer] = [i for i in invocations if i.prompt == "Let the thermostat expert set the office to 20 degrees."]
    assert transfer.response == "The office is now set to 20 °C."
    assert [c.name for c in transfer.tool_calls] == ["transfer_to_agent", "set_temperature"]
    assert all(not (i.prompt or "").startswith("For context") for i in invocations)
    assert len(invocations) == len(expected(source)["invocations"])


@pytest.mark.parametrize("source", ["adk-v2", "adk-v2-legacy", "adk-v1"])
def test_adk_error_path_stores_no_placeholder_call_id_or_result(source):
    """A tool that raised with no callback to handle it: ADK records ``gen_ai.tool.call.id="<not specified>"`` (and,
    in the legacy format, the response ``{"result": "<not specified>"}``)."""
    records = scenario_spans(source)
    assert any(r.attributes.get("gen_ai.tool.call.id") == "<not specified>" for r in records)
    [failed] = [i for i in build_invocations(records) if i.failure]
    [call] = failed.tool_calls
    assert (call.name, call.args, call.call_id, call.result) == (
        "reboot_device",
        {"device_id": "hub-garage"},
        None,
        None,
    )
    assert call.error == "RuntimeError: hub-garage is not responding"


def test_openai_agents_prompt_and_answer_come_from_the_llm_spans():
    """openai-agents' root AGENT span (its workflow) carries only ``session.id``: the prompt is on the first LLM
    span's ``llm.input_messages``, the answer on the last one's ``llm.output_messages``."""
    records = scenario_spans("openinference-openai-agents")
    roots = [r for r in records if r.parent_span_id is None]
    assert roots and all(set(r.attributes) == {"session.id", "openinference.span.kind"} for r in roots)
    [first] = [i for i in build_invocations(records) if i.prompt and i.prompt.startswith("Check the kitchen")]
    assert first.response == "Both lights are on; the living room is now set to 21.5 °C."


def test_pydantic_ai_format_2_arguments_and_results_are_read():
    records = scenario_spans("pydantic-ai-v2")
    assert any("tool_arguments" in r.attributes for r in records)
    assert not any("gen_ai.tool.call.arguments" in r.attributes for r in records)
    calls = [c for i in build_invocations(records) for c in i.tool_calls if not c.error]
    assert calls and all(c.args is not None and c.result is not None for c in calls)
    assert {"device_id": "light-kitchen"} in [c.args for c in calls]


SUB_AGENTS = {  # the recording, the call made as a tool that runs a sub-agent, that sub-agent
    "adk-v2": ("energy_advisor", "energy_advisor"),
    "adk-v2-legacy": ("energy_advisor", "energy_advisor"),
    "adk-v1": ("energy_advisor", "energy_advisor"),
    "openinference-langchain": ("ask_energy_advisor", "energy_advisor"),
    "openllmetry-langchain": ("ask_energy_advisor", "energy_advisor"),
    "otel-genai-langchain": ("ask_energy_advisor", "energy_advisor"),
}


@pytest.mark.parametrize("source", SCENARIOS)
def test_every_call_names_the_agent_that_made_it(source):
    """The calls a sub-agent made (an ADK ``AgentTool``, a LangGraph graph run by a tool) are the sub-agent's, the
    tool that ran it the root agent's; every other call, in every recording, is the root agent's."""
    invocations = build_invocations(scenario_spans(source))
    tool, sub_agent = SUB_AGENTS.get(source, (None, None))
    seen = 0
    for invocation in invocations:
        names = [c.name for c in invocation.tool_calls]
        for call in invocation.tool_calls:
            inner = tool in names and call.name == "get_energy_price"
            transferred = "transfer_to_agent" in names and call.name != "transfer_to_agent"
            want = sub_agent if inner else "thermostat_expert" if transferred else invocation.agent_name
            assert call.agent_name == want, (call.name, names)
            seen += inner
    assert seen == (2 if tool else 0)


@pytest.mark.parametrize("source", ["adk-v2", "adk-v2-legacy", "adk-v1"])
def test_a_transferred_turn_names_the_sub_agent_as_caller_and_answerer(source):
    invocations = build_invocations(scenario_spans(source))
    [transfer] = [i for i in invocations if i.prompt == "Let the thermostat expert set the office to 20 degrees."]
    assert transfer.agent_name == "smart_home_assistant"
    assert transfer.answered_by == "thermostat_expert"
    assert [(c.name, c.agent_name) for c in transfer.tool_calls] == [
        ("transfer_to_agent", "smart_home_assistant"),
        ("set_temperature", "thermostat_expert"),
    ]
    others = [i for i in invocations if i is not transfer]
    assert all(i.answered_by == i.agent_name for i in others)  # an AgentTool's answer is its caller's input
