"""Eval cases with a ``conversation_scenario``: a simulated user (the real google-genai SDK against the fake Gemini
server, playing the user from the conversation so far) talks with an agent that asks for two values one at a time."""

from __future__ import annotations

import json
import sys

import pytest
from google.adk.evaluation.simulation.llm_backed_user_simulator_prompts import get_llm_backed_user_simulator_prompt
from sqlalchemy import select

import toolpath
from tests.helpers.fake_gemini import FakeGemini, Reply
from tests.helpers.flights import PLAN, START, FlightAgent, flight_user, last_agent_line, write_scenario
from toolpath.errors import ConfigError
from toolpath.evaluation.evalsets.adk_models import STOP_SIGNAL, LlmBackedUserSimulatorConfig
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.evaluation.evalsets.simulation.simulator import (
    Exchange,
    Scenario,
    SimulatorStatus,
    UserSimulator,
    conversation_history,
)
from toolpath.judges.client import Judge, JudgeSettings
from toolpath.model import ToolCall
from toolpath.store import schema
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc


@pytest.fixture
def gemini(monkeypatch):
    """``gemini(script)`` serves the script on loopback; the SDK finds it through the environment only."""
    started: list = []

    def start(script) -> FakeGemini:
        fake = FakeGemini(script)
        started.append(fake.running())
        started[-1].__enter__()
        for name, value in (("GOOGLE_API_KEY", "test-key"), ("GOOGLE_GEMINI_BASE_URL", fake.url)):
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
        return fake

    yield start
    for context in started:
        context.__exit__(None, None, None)


def quick_judge(store_url: str | None = None, **settings) -> Judge:
    return Judge(JudgeSettings(backoff=0.01, timeout=5.0, **settings), cache=Store(store_url) if store_url else None)


def test_conversation_ends_by_the_stop_signal_in_one_stored_session(tracing, app_spans, store_url, tmp_path, gemini):
    fake = gemini(flight_user)
    agent = FlightAgent()
    [case] = evaluate_eval_sets([load_eval_set(write_scenario(tmp_path))], agent, store=Store(store_url)).cases
    assert case.error is None and case.status != "FAILED"
    [turns] = case.turns
    assert [t["prompt"] for t in turns] == [START, "From Paris.", "To Rome, please."]
    assert [t["response"] for t in turns] == ["Where do you fly from?", "Where to?", "Booked Paris-Rome, confirmed."]
    assert all(t["simulated_user"] for t in turns)
    assert turns[2]["predicted_trajectory"] == [
        {"tool_name": "book_flight", "tool_input": {"origin": "Paris", "destination": "Rome"}}
    ]
    assert fake.requests == 3  # the starting prompt is not asked; the third reply stops
    assert "Where do you fly from?" in fake.prompts[0] and PLAN in fake.prompts[0]
    toolpath.flush()
    store = Store(store_url)
    [session_id] = case.sessions
    stored = store.get_session(session_id)
    assert [i.prompt for i in stored.invocations] == [START, "From Paris.", "To Rome, please."]
    assert [i.attributes.get(sc.TOOLPATH_SIMULATED_TURN) for i in stored.invocations] == [1, 2, 3]
    assert all(i.attributes.get(sc.TOOLPATH_SIMULATED_USER) for i in stored.invocations)
    # the simulator's own model calls are spans of their own traces, never the agent's
    agent_traces = {i.trace_id for i in stored.invocations}
    user_spans = [
        s
        for i in range(3)
        for s in store.spans_of_trace(stored.invocations[i].trace_id)
        if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT
    ]
    assert not user_spans and len(agent_traces) == 3
    # they reach the application's exporters: roots of their own traces, in the conversation's session
    simulated = [s for s in app_spans.get_finished_spans() if s.attributes.get(sc.TOOLPATH_SIMULATED_USER)]
    chats = [s for s in simulated if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT]
    assert [s.name for s in chats] == ["chat gemini-2.5-flash"] * 3
    assert all(s.parent is None and s.attributes[sc.GEN_AI_CONVERSATION_ID] == session_id for s in chats)
    assert [s.attributes[sc.TOOLPATH_SIMULATED_TURN] for s in chats] == [2, 3, 4]
    assert not {format(s.context.trace_id, "032x") for s in chats} & agent_traces


def test_max_allowed_invocations_ends_a_conversation_that_runs_off(tracing, tmp_path, gemini):
    fake = gemini(lambda prompt, seen: Reply("Hm, where was I?"))  # never answers, never stops
    path = write_scenario(tmp_path, simulator={"max_allowed_invocations": 3, "model": "gemini-2.0-flash"})
    [case] = evaluate_eval_sets([load_eval_set(path)], FlightAgent()).cases
    [turns] = case.turns
    assert [t["prompt"] for t in turns] == [START, "Hm, where was I?", "Hm, where was I?"]  # the start counts
    assert fake.requests == 2 and set(fake.models) == {"gemini-2.0-flash"}
    assert case.error is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(""), "the model returned an empty response"),
        (Reply(raw="<html>502 Bad Gateway</html>"), "judge request failed"),
    ],
)
def test_a_simulator_reply_without_a_message_fails_that_case_only(tracing, store_url, tmp_path, gemini, reply, reason):
    def script(prompt: str, seen: int) -> Reply:
        return reply if "Where to?" in last_agent_line(prompt) else flight_user(prompt, seen)

    gemini(script)
    path = write_scenario(tmp_path)
    data = json.loads(path.read_text())
    data["eval_cases"].append(
        {"eval_id": "again", "conversation_scenario": data["eval_cases"][0]["conversation_scenario"]}
    )
    path.write_text(json.dumps(data))
    first, second = evaluate_eval_sets([load_eval_set(path)], FlightAgent(), simulator_judge=quick_judge()).cases
    for case in (first, second):
        assert case.status == "FAILED"
        assert case.error.startswith("turn 3: the user simulator (gemini-2.5-flash) gave no message: ")
        assert reason in case.error
        assert [t["prompt"] for t in case.turns[0]] == [START, "From Paris."]  # the turns so far are kept
        assert all(m.status == "NOT_EVALUATED" and m.explanation == case.error for m in case.metrics.values())
    toolpath.flush()
    assert len(Store(store_url).get_session(first.sessions[0]).invocations) == 2


def test_429s_are_retried(tracing, tmp_path, gemini):
    def script(prompt: str, seen: int) -> Reply:
        return Reply(status=429, retry_after=0.01) if seen < 2 else flight_user(prompt, seen)

    fake = gemini(script)
    [case] = evaluate_eval_sets(
        [load_eval_set(write_scenario(tmp_path))], FlightAgent(), simulator_judge=quick_judge()
    ).cases
    assert case.error is None and len(case.turns[0]) == 3
    assert fake.statuses[429] == 6 and fake.statuses[200] == 3  # two 429s before each of the three replies


def test_an_agent_that_raises_fails_the_case_and_keeps_the_turns(tracing, store_url, tmp_path, gemini):
    fake = gemini(flight_user)
    [case] = evaluate_eval_sets([load_eval_set(write_scenario(tmp_path))], FlightAgent(fail_on="Rome")).cases
    assert case.status == "FAILED"
    assert case.error == "turn 3: the agent failed: RuntimeError: booking backend down"
    assert [t["failure"] for t in case.turns[0]] == [0, 0, 1]
    assert fake.requests == 2  # nothing is asked of the simulator after the failure
    toolpath.flush()
    stored = Store(store_url).get_session(case.sessions[0]).invocations
    assert [i.failure for i in stored] == [0, 0, 1] and stored[2].prompt == "To Rome, please."


def test_reruns_replay_the_cached_user_turns_unless_fresh(tracing, store_url, tmp_path, gemini):
    fake = gemini(flight_user)
    path = write_scenario(tmp_path)
    store = Store(store_url)
    first = evaluate_eval_sets([load_eval_set(path)], FlightAgent(), store=store, runs=2).cases[0]
    assert fake.requests == 6  # two runs, cached apart
    metric = first.metrics["error_recovery"]
    assert len(metric.run_scores) == 2 and [len(t) for t in first.turns] == [3, 3]
    again = evaluate_eval_sets([load_eval_set(path)], FlightAgent(), store=store, runs=2).cases[0]
    assert fake.requests == 6 and again.turns[0][1]["prompt"] == "From Paris."
    with store.engine.connect() as conn:
        keys = [row.key for row in conn.execute(select(schema.judge_cache.c.key))]
    assert len(keys) == 6 and all(k.startswith("usersim:") and len(k) == 64 for k in keys)
    fresh = evaluate_eval_sets([load_eval_set(path)], FlightAgent(), store=store, fresh=True).cases[0]
    assert fake.requests == 9 and fresh.error is None


def test_criteria_that_need_expected_turns_are_refused(tmp_path):
    path = write_scenario(tmp_path, criteria={"response_match_score": 0.8})
    calls: list[str] = []
    with pytest.raises(ConfigError, match="criterion 'response_match_score' needs the expected reference of each turn"):
        evaluate_eval_sets([load_eval_set(path)], calls.append)
    assert calls == []


def test_the_audio_simulator_and_personas_are_refused(tmp_path):
    path = write_scenario(tmp_path, simulator={"type": "llm_audio"})
    with pytest.raises(ConfigError, match="type 'llm_audio' is not supported"):
        evaluate_eval_sets([load_eval_set(path)], FlightAgent())


@pytest.mark.parametrize(
    "custom",
    [
        None,
        "Plan: {{ conversation_plan | upper }}\n{% for line in conversation_history.split('\\n\\n') %}> {{ line }}\n"
        "{% endfor %}Say {{ stop_signal }} when done.\n",
    ],
)
def test_the_simulators_prompt_is_the_one_adk_renders(custom):
    exchanges = [
        Exchange(START, "flights", "Where do you fly from?"),
        Exchange(
            "From Paris.",
            "flights",
            "Booked.",
            [("flights", "Booking now.")],
            [ToolCall(name="book", args={"to": "Rome"}, result={"ok": True})],
        ),
    ]
    config = LlmBackedUserSimulatorConfig(custom_instructions=custom, include_function_calls=True)
    user = UserSimulator(config, Scenario(START, PLAN), judge=None)  # type: ignore[arg-type] - no model asked
    history = conversation_history(exchanges, include_function_calls=True)
    assert user.request(exchanges).prompt == get_llm_backed_user_simulator_prompt(
        conversation_plan=PLAN, conversation_history=history, stop_signal=STOP_SIGNAL, custom_instructions=custom
    )


def test_without_google_adk_a_scenario_is_one_config_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.adk.evaluation.simulation.llm_backed_user_simulator_prompts", None)
    path = write_scenario(tmp_path)
    calls: list[str] = []
    with pytest.raises(ConfigError, match=r"eval case 'book': .*simulated user.*pip install 'toolpath\[adk\]'"):
        evaluate_eval_sets([load_eval_set(path)], calls.append)
    assert calls == []


def test_the_simulators_statuses_are_adks(tmp_path):
    """ADK's ``user_simulator.Status``, names and values; a simulator past its turn limit says so by ADK's value."""
    from google.adk.evaluation.simulation.user_simulator import Status

    assert [(m.name, m.value) for m in SimulatorStatus] == [(m.name, m.value) for m in Status]
    config = LlmBackedUserSimulatorConfig(max_allowed_invocations=1)
    user = UserSimulator(config, Scenario(START, PLAN), judge=None)  # type: ignore[arg-type] - no model asked
    first, second = user.next_message([]), user.next_message([Exchange(START, "flights", "Where from?")])
    assert (first.status, first.text) == (SimulatorStatus.SUCCESS, START)
    assert (second.status, second.text) == (SimulatorStatus.TURN_LIMIT_REACHED, None)
    assert [Status(m.status) for m in (first, second)] == [Status.SUCCESS, Status.TURN_LIMIT_REACHED]
