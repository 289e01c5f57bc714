"""Google ADK agents run by toolpath as ADK's own evaluation runs them: each eval case one ADK session from its
``session_input``, each turn's trajectory, tool responses, intermediate and final responses equal to what ADK's
``EvaluationGenerator`` infers from the same agent and eval set — with no environment variable set, although
ADK's own tool spans then carry no arguments."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.apps import App
from google.adk.evaluation.eval_case import get_all_tool_calls, get_all_tool_responses
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.workflow import START, Workflow

import toolpath
from tests.helpers import adk_agent, adk_deviating
from toolpath.errors import ConfigError
from toolpath.evaluation.agent_runs import run_agent
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_sets
from toolpath.evaluation.targets import resolve_target
from toolpath.store.store import Store
from toolpath.testing import assert_evalset

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SESSION_STATE = {"home": "flat 7", "owner": "ana"}


@pytest.fixture
def agent_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The home agent as a user's agent folder, importable as ``home_agent``; ADK's content env var unset."""
    monkeypatch.delenv(CONTENT_ENV, raising=False)
    package = adk_agent.write_agent_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    adk_agent.RECEIVED.clear()
    yield package
    for name in [m for m in sys.modules if m.split(".")[0] == "home_agent"]:
        del sys.modules[name]


def user_state(state: dict) -> dict:
    """The state without what ADK's evaluation adds for itself (its request-intercepting plugin's key)."""
    return {k: v for k, v in state.items() if k != "__llm_request_key__"}


def adk_inference() -> list[list]:
    """ADK's own inference on the same agent folder and eval set: per case, its invocations."""
    eval_set = EvalSet.model_validate(adk_agent.home_evalset())
    responses = asyncio.run(EvaluationGenerator.generate_responses(eval_set, "home_agent", repeat_num=1))
    return [case.responses[0] for case in responses]


def test_eval_cases_run_exactly_as_adks_own_inference(tracing, store_url, agent_package):
    result = evaluate_eval_sets(load_eval_sets(agent_package.parent), importlib.import_module("home_agent"))
    assert [(c.eval_id, c.status) for c in result.cases] == [("status", "PASSED"), ("home_then_dim", "PASSED")]
    toolpath.flush()
    store = Store(store_url)
    ours = [store.get_session(case.sessions[0]).invocations for case in result.cases]
    received = list(adk_agent.RECEIVED)
    adk_agent.RECEIVED.clear()
    theirs = adk_inference()
    adk_received = list(adk_agent.RECEIVED)

    assert [len(invocations) for invocations in ours] == [len(invocations) for invocations in theirs] == [1, 2]
    for inv, adk_inv in zip(itertools.chain(*ours), itertools.chain(*theirs), strict=True):
        adk_calls = get_all_tool_calls(adk_inv.intermediate_data)
        assert [(c.name, c.args) for c in inv.tool_calls] == [(c.name, c.args) for c in adk_calls]
        assert [c.result for c in inv.tool_calls] == [
            r.response for r in get_all_tool_responses(adk_inv.intermediate_data)
        ]
        assert inv.response == "\n".join(p.text for p in adk_inv.final_response.parts if p.text)
        assert inv.intermediate_responses == [
            (e.author, p.text)
            for e in adk_inv.intermediate_data.invocation_events
            for p in (e.content.parts or [] if e.content else [])
            if p.text
        ]
        assert inv.prompt == "".join(p.text for p in adk_inv.user_content.parts if p.text)
    # what the tools received, call by call: the same arguments and ids, in the same sessions and states as ADK
    ours_calls = [c for inv in itertools.chain(*ours) for c in inv.tool_calls if c.name != "transfer_to_agent"]
    assert [(c.name, c.args, c.call_id) for c in ours_calls] == [(r["name"], r["args"], r["id"]) for r in received]
    assert [(r["name"], r["args"], r["state"], r["session"][:2]) for r in received] == [
        (r["name"], r["args"], user_state(r["state"]), r["session"][:2]) for r in adk_received
    ]
    status, _, dim = itertools.chain(*ours)
    assert status.response == "The hall light is on at 80%.\nThe living room is at 20.5 °C."
    assert status.intermediate_responses == [("home", "Let me look.")]
    assert [c.name for c in dim.tool_calls] == ["transfer_to_agent", "set_light"]
    assert all(
        c.call_id and c.call_id.startswith("adk-") and c.start_time for c in (*status.tool_calls, *dim.tool_calls)
    )
    # the multi-turn case: both turns in one ADK session, made from its session_input
    assert {r["session"] for r in received[2:]} == {("home_app", "ana", result.cases[1].sessions[0])}
    assert [r["state"] for r in received[2:]] == [SESSION_STATE, SESSION_STATE]
    assert received[0]["session"][:2] == ("EvaluationGenerator", "test_user_id")  # ADK's defaults
    # ADK's own spans are under toolpath's agent span, without arguments; the stored run says so
    spans = store.spans_of_trace(status.trace_id)
    adk_tools = [s for s in spans if s.scope == "gcp.vertex.agent" and s.name == "execute_tool get_device"]
    assert len(adk_tools) == 2 and all("gen_ai.tool.call.arguments" not in s.attributes for s in adk_tools)
    assert status.attributes["toolpath.content_missing"] is True
    assert "toolpath.arguments_unknown" not in status.attributes
    assert result.cases[0].turns[0][0]["content_missing"] is True
    # an evaluation ran every turn: marked so on the agent span, kept on the stored turn (UI: hide evaluation)
    assert all(inv.attributes.get("toolpath.evaluation") is True for inv in itertools.chain(*ours))


def test_rows_run_concurrently_each_in_its_own_session(tracing, agent_package):
    agent = adk_agent.build_home_agent()
    rows = [{"prompt": adk_agent.STATUS} for _ in range(6)] + [{"prompt": adk_agent.WHICH_HOME}]
    result = toolpath.evaluate(
        rows, ["trajectory_single_tool_use(tool_name=get_device)"], runnable=agent, concurrency=4
    )
    table = result.metrics_table
    assert [r["trajectory_single_tool_use/score"] for r in table] == [1.0] * 6 + [0.0]
    assert all(r["response"] == "The hall light is on at 80%.\nThe living room is at 20.5 °C." for r in table[:6])
    [call] = table[6]["predicted_trajectory"]
    assert (call["tool_name"], call["tool_input"], call["tool_output"]) == (
        "get_home",
        {},
        {"home": None, "owner": None},
    )
    assert table[6]["response"] == "This is flat 7."
    sessions = {r["session"][2] for r in adk_agent.RECEIVED}
    assert len(sessions) == 7 and all(r["state"] == {} for r in adk_agent.RECEIVED)
    ids = [c["id"] for c in adk_agent.RECEIVED]
    assert sorted(ids) == sorted(
        call.call_id
        for row in table
        for call in toolpath.Store(tracing.store.url).get_invocation(row["invocation_id"]).tool_calls
    )


@pytest.mark.filterwarnings("ignore:SequentialAgent is deprecated:DeprecationWarning")
def test_an_app_workflows_and_assert_evalset(tracing, agent_package):
    evalset = agent_package.parent / "home.evalset.json"
    result = assert_evalset(App(name="home_app", root_agent=adk_agent.build_home_agent()), evalset)
    assert all(case.status == "PASSED" for case in result.cases)

    def step(name: str, *script) -> LlmAgent:
        return LlmAgent(
            name=name, model=adk_agent.ScriptedModel(turns={"go": list(script)}), tools=[adk_agent.get_home]
        )

    pipeline = SequentialAgent(
        name="pipeline",
        sub_agents=[
            step("reader", adk_agent.calls(adk_agent.call("get_home")), adk_agent.answer("Read.")),
            step("writer", adk_agent.answer("Home is", "flat 7.")),
        ],
    )
    with resolve_target(pipeline) as target:
        target.start_session("s-1", app_name="home_app", user_id="ana", state=SESSION_STATE)
        outcome = run_agent(target, "go", session_id="s-1")
    assert outcome.failure == 0 and outcome.response == "Home is\nflat 7."
    assert [(c.name, c.result) for c in outcome.tool_calls] == [("get_home", SESSION_STATE)]
    assert outcome.invocation is not None and outcome.invocation.agent_name == "pipeline"
    assert outcome.invocation.intermediate_responses == [("reader", "Read.")]

    graph = Workflow(
        name="graph",
        edges=[(START, step("only", adk_agent.calls(adk_agent.call("get_home")), adk_agent.answer("Read.")))],
    )
    outcome = run_agent(graph, "go")  # a workflow node as the root; no session_input: ADK's defaults
    assert (outcome.failure, outcome.response) == (0, "Read.")
    assert [(c.name, c.result) for c in outcome.tool_calls] == [("get_home", {"home": None, "owner": None})]


@pytest.mark.parametrize("sync_only", [False, True])
def test_adk_app_style_objects(tracing, store_url, agent_package, sync_only):
    app = adk_agent.StreamingAdkApp(adk_agent.build_home_agent(), sync_only=sync_only)
    result = evaluate_eval_sets(load_eval_sets(agent_package.parent), app)
    assert [c.status for c in result.cases] == ["PASSED", "PASSED"]
    assert [r["state"] for r in adk_agent.RECEIVED[2:]] == [SESSION_STATE, SESSION_STATE]
    assert {r["session"][1] for r in adk_agent.RECEIVED[2:]} == {"ana"}
    assert len({r["session"][2] for r in adk_agent.RECEIVED[2:]}) == 1
    toolpath.flush()
    [status] = Store(store_url).get_session(result.cases[0].sessions[0]).invocations
    assert [(c.name, c.args, c.call_id) for c in status.tool_calls] == [
        (r["name"], r["args"], r["id"]) for r in adk_agent.RECEIVED[:2]
    ]


@pytest.mark.parametrize("kind", ["agent", "app", "sync app"])
def test_a_user_message_of_several_parts_reaches_the_agent_as_it_is(tracing, tmp_path, kind):
    """As ADK's evaluation sends it (and ``AdkApp`` takes a ``Content`` dict): two parts, not their joined text."""
    evalset = adk_deviating.deviations_evalset()
    evalset["eval_cases"] = [c for c in evalset["eval_cases"] if c["eval_id"] == "multi_turn"]
    (tmp_path / "multi.evalset.json").write_text(json.dumps(evalset))
    agent = adk_deviating.build_deviating_agent()
    target = agent if kind == "agent" else adk_agent.StreamingAdkApp(agent, sync_only=kind == "sync app")
    adk_deviating.USER_PARTS.clear()
    [case] = evaluate_eval_sets(load_eval_sets(tmp_path), target).cases
    assert list(adk_deviating.GREETING) in adk_deviating.USER_PARTS
    assert ["\n".join(adk_deviating.GREETING)] not in adk_deviating.USER_PARTS
    assert case.turns[0][0]["prompt"] == "Hallo, ich bin Zoë.\nWie heiße ich?"
    assert case.turns[0][0]["predicted_trajectory"] == [{"tool_name": "get_customer", "tool_input": None}]
    assert case.metrics["tool_trajectory_avg_score"].per_invocation == [1.0, 1.0]


def test_a_failing_agent_is_a_measured_failure(tracing):
    def explode(device_id: str) -> str:
        """Always fails."""
        raise RuntimeError(f"{device_id} is on fire")

    broken = LlmAgent(
        name="broken",
        model=adk_agent.ScriptedModel(turns={"go": [adk_agent.calls(adk_agent.call("explode", device_id="oven"))]}),
        tools=[explode],
    )
    outcome = run_agent(broken, "go", session_id="b-1")
    assert outcome.failure == 1 and outcome.error == "RuntimeError: oven is on fire"
    assert outcome.latency_in_seconds is None


class NotAnAgent:
    pass


@pytest.mark.parametrize(
    ("target", "named"),
    [(42, "an int"), (NotAnAgent(), "a NotAnAgent"), (NotAnAgent, "the class NotAnAgent"), (sys, None)],
)
def test_what_cannot_be_run_is_one_config_error(target, named):
    with pytest.raises(ConfigError) as raised:
        resolve_target(target)
    message = str(raised.value)
    if named:
        assert message.startswith(f"cannot run {named} as an agent: give a function taking the prompt")
        assert "Google ADK agent or App" in message and "AdkApp" in message
    else:
        assert message.startswith("module sys exposes no root_agent")


def test_a_package_that_does_not_import_its_agent_module_and_reset_data(tracing, tmp_path, monkeypatch):
    """As ``adk eval``: ``package.agent`` is imported when the package does not import it, and its ``reset_data()``
    runs before each eval case."""
    package = tmp_path / "bare_agent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(
        "from tests.helpers.adk_agent import build_home_agent\n"
        "root_agent = build_home_agent()\nRESETS = []\n\n\ndef reset_data():\n    RESETS.append(len(RESETS))\n"
    )
    (tmp_path / "home.evalset.json").write_text(json.dumps(adk_agent.home_evalset()))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        result = evaluate_eval_sets(
            load_eval_sets(tmp_path / "home.evalset.json"), importlib.import_module("bare_agent")
        )
        assert [c.status for c in result.cases] == ["PASSED", "PASSED"]
        assert importlib.import_module("bare_agent.agent").RESETS == [0, 1]
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "bare_agent"]:
            del sys.modules[name]
