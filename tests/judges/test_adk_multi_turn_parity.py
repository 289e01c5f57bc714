"""ADK's Gemini-judged criteria over a whole conversation, ADK's numbers: ADK's own evaluators (from its metric
registry, called as ``LocalEvalService`` calls them) and toolpath's same-named criteria judge the same conversation
against one fake Gemini server on 127.0.0.1 with scripted verdicts — well-formed, malformed, partial and tied
replies over several samples. Both must send the same request bodies and give the same per-invocation scores and
statuses.

- ``rubric_based_multi_turn_trajectory_quality_v1``: two conversations with tool calls, results and an error, as
  the rows a case's turns become.
- ``per_turn_user_simulator_quality_v1``: a ``conversation_scenario`` case played by toolpath's simulated user
  (the fake server plays it too), judged as ``toolpath eval`` judges it, and the same simulated turns given to ADK.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation")

from google.adk.evaluation.eval_case import ConversationScenario, Invocation, InvocationEvent, InvocationEvents
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.genai import types

from tests.helpers.fake_gemini import FakeGemini, Reply, serving_gemini
from tests.helpers.flights import PLAN, START, FlightAgent, flight_user, write_scenario
from toolpath.evaluation.catalog import criterion_metric
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.evaluation.scoring import judge_rows
from toolpath.judges.client import Judge, JudgeSettings
from toolpath.metrics.rows import turn_row
from toolpath.model import ToolCall

TRAJECTORY = "rubric_based_multi_turn_trajectory_quality_v1"
SIMULATOR = "per_turn_user_simulator_quality_v1"

CONVERSATIONS: list[list[dict[str, Any]]] = [
    [  # A: asks, then checks, sets and confirms; one intermediate text
        {"prompt": "Make the office warmer.", "response": "To how many degrees?", "intermediate": [], "calls": []},
        {
            "prompt": "22, please.",
            "response": "The office is at 22 °C now (it was 19 °C).",
            "intermediate": ["Checking the office first."],
            "calls": [
                ToolCall(name="get_temperature", args={"room": "office"}, result={"celsius": 19}, call_id="a2-1"),
                ToolCall(name="set_temperature", args={"room": "office", "celsius": 22}, result=True, call_id="a2-2"),
            ],
        },
        {"prompt": "Thanks!", "response": "You're welcome.", "intermediate": [], "calls": []},
    ],
    [  # B: a jammed lock reported as locked
        {
            "prompt": "Lock the back door.",
            "response": "The back door is locked.",
            "intermediate": [],
            "calls": [ToolCall(name="lock", args={"door": "back"}, error="DeviceError: lock jammed", call_id="b1-1")],
        },
        {"prompt": "Sure?", "response": "Yes, it is locked.", "intermediate": [], "calls": []},
    ],
]
RUBRICS = [
    {"rubric_id": "asks", "rubric_content": {"text_property": "The agent asks for what it needs before acting."}},
    {"rubric_id": "tools", "rubric_content": {"text_property": "The agent reports its tools' results truthfully."}},
]
CRITERIA: dict[str, dict[str, Any]] = {
    TRAJECTORY: {"threshold": 0.6, "rubrics": RUBRICS},  # ADK's default: 5 samples
    SIMULATOR: {"threshold": 1.0, "judge_model_options": {"num_samples": 5}},
}


def verdicts(*pairs: tuple[str, str]) -> str:
    """ADK's rubric reply: an ``ID:``, ``Property:``, ``Rationale:`` and ``Verdict:`` per rubric."""
    text = {r["rubric_id"]: r["rubric_content"]["text_property"] for r in RUBRICS}
    return "\n\n".join(
        f"ID: {rubric_id}\nProperty: {text[rubric_id]}\nRationale: as seen.\nVerdict: {verdict}"
        for rubric_id, verdict in pairs
    )


TRAJECTORY_REPLIES = {  # 5 samples each
    # A: "asks" yes 4 to 1; "tools" tied 2-2 (no), one sample partial (no "tools")
    0: [verdicts(("asks", "yes"), ("tools", "yes")), verdicts(("asks", "yes"), ("tools", "no")),
        verdicts(("asks", "no")), verdicts(("asks", "yes"), ("tools", "yes")), verdicts(("asks", "yes"), ("tools", "no"))],
    # B: nothing readable (malformed replies only)
    1: ["Verdict: maybe", "", "garbage", "ID: asks\nVerdict: perhaps", "no"],
}  # fmt: skip
SIMULATOR_REPLIES = {  # by the user turn judged (the stop signal: the end), 5 samples each
    "From Paris.": ['{"is_valid": "valid"}', "garbage", '{"is_valid": ["invalid"]}', '{"is_valid": True}',
                    '"is_valid": "valid",'],  # valid, 3 of 4 read
    "To Rome, please.": ['{"is_valid": "valid"}', '{"is_valid": "invalid"}', "no label", '{"is_valid": true}',
                         '{"is_valid": "almost"}'],  # a 2-2 tie: invalid
    "</finished>": ["", "none", "nothing", '{"is_valid": "maybe"}', "?"],  # none readable: not evaluated
}  # fmt: skip


def script(prompt: str, seen: int) -> Reply:
    if "<conversation_history>" in prompt:  # ADK's multi-turn trajectory rubric prompt
        conversation = 0 if "Make the office warmer." in prompt else 1
        return Reply(TRAJECTORY_REPLIES[conversation][seen % 5])
    if "# Generated User Response" in prompt:  # ADK's per-turn user simulator quality prompt
        judged = prompt.rsplit("# Generated User Response", 1)[1].strip()
        return Reply(SIMULATOR_REPLIES[judged][seen % 5])
    return flight_user(prompt, seen)  # the simulated user


@pytest.fixture
def fake(monkeypatch):
    with serving_gemini(monkeypatch, script) as server:
        yield server


def judged_bodies(fake: FakeGemini) -> Counter[str]:
    """The judge's request bodies (the simulated user's left out), as canonical JSON."""
    bodies = [json.dumps(b, sort_keys=True, ensure_ascii=False) for b in fake.bodies]
    return Counter(b for b in bodies if "<conversation_history>" in b or "# Generated User Response" in b)


def adk_results(name: str, actual: list[Invocation], scenario: ConversationScenario | None = None) -> list[Any]:
    """ADK's (score, status) per invocation and overall, its evaluator got from its registry and called as
    ``LocalEvalService._evaluate_metric`` calls it."""
    config = EvalConfig.model_validate({"criteria": {name: CRITERIA[name]}})
    (metric,) = [m for m in get_eval_metrics_from_config(config) if m.metric_name == name]
    evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(eval_metric=metric)
    result = asyncio.run(
        evaluator.evaluate_invocations(
            actual_invocations=actual, expected_invocations=None, conversation_scenario=scenario
        )
    )
    per = [(r.score, r.eval_status.name) for r in result.per_invocation_results]
    return [per, (result.overall_score, result.overall_eval_status.name)]


def status(score: float | None, threshold: float) -> str:
    return "NOT_EVALUATED" if score is None else "PASSED" if score >= threshold else "FAILED"


def content(text: str, role: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def adk_conversation(turns: list[dict[str, Any]]) -> list[Invocation]:
    """The turns as ADK's inference records them: the intermediate texts, each call's ``function_call`` and
    ``function_response``, and the final response."""
    invocations = []
    for turn in turns:
        events = [InvocationEvent(author="agent", content=content(t, "model")) for t in turn["intermediate"]]
        for call in turn["calls"]:
            fc = types.FunctionCall(id=call.call_id, name=call.name, args=call.args)
            events.append(
                InvocationEvent(
                    author="agent", content=types.Content(role="model", parts=[types.Part(function_call=fc)])
                )
            )
            body = (
                {"error": call.error}
                if call.error
                else call.result
                if isinstance(call.result, dict)
                else {"result": call.result}
            )
            fr = types.FunctionResponse(id=call.call_id, name=call.name, response=body)
            events.append(
                InvocationEvent(
                    author="agent", content=types.Content(role="user", parts=[types.Part(function_response=fr)])
                )
            )
        invocations.append(
            Invocation(
                user_content=content(turn["prompt"], "user"),
                final_response=content(turn["response"], "model"),
                intermediate_data=InvocationEvents(invocation_events=events),
            )
        )
    return invocations


def toolpath_conversation(turns: list[dict[str, Any]]) -> list[Any]:
    """toolpath's (score, status) per invocation and overall: the criterion as ``test_config.json`` gives it,
    over the rows a case's turns become, judged as the eval set evaluator judges a conversation."""
    rows = [
        turn_row(
            prompt=turn["prompt"],
            response=turn["response"],
            tool_calls=turn["calls"],
            latency_in_seconds=1.0,
            failure=0,
            intermediate_responses=[("agent", t) for t in turn["intermediate"]],
        )
        for turn in turns
    ]
    options = {k: v for k, v in CRITERIA[TRAJECTORY].items() if k != "threshold"}
    metric = criterion_metric(TRAJECTORY, options)
    settings = JudgeSettings(backoff=0.01, timeout=10)
    result = judge_rows([{"invocations": rows}], [metric], settings, None)[0][0, TRAJECTORY]
    assert result.details["judge"] == "adk", result.explanation
    threshold = CRITERIA[TRAJECTORY]["threshold"]
    per = [(s, status(s, threshold)) for s in result.details["per_invocation_scores"]]
    return [per, (result.score, status(result.score, threshold))]


TRAJECTORY_EXPECTED = [  # what ADK gives, written out so that a change in either side shows here too
    [[(None, "NOT_EVALUATED"), (None, "NOT_EVALUATED"), (0.5, "FAILED")], (0.5, "FAILED")],
    [[(None, "NOT_EVALUATED"), (None, "NOT_EVALUATED")], (None, "NOT_EVALUATED")],
]


@pytest.mark.parametrize("conversation", [0, 1])
def test_multi_turn_trajectory_same_requests_same_scores_as_adk(fake, conversation):
    turns = CONVERSATIONS[conversation]
    adk = adk_results(TRAJECTORY, adk_conversation(turns))
    adk_bodies = judged_bodies(fake)
    fake.bodies.clear()
    ours = toolpath_conversation(turns)

    assert ours == adk == TRAJECTORY_EXPECTED[conversation]
    assert adk_bodies and judged_bodies(fake) == adk_bodies  # prompt, config, 5 samples
    assert sum(adk_bodies.values()) == 5
    prompt = fake.prompts[-1]
    if conversation == 1:
        assert '(tool output): lock -> {"error": "DeviceError: lock jammed"}' in prompt
    else:
        assert "AGENT (agent) TURN 2: Checking the office first." in prompt


def test_simulated_users_turns_same_requests_same_scores_as_adk(fake, tracing, tmp_path):
    path = write_scenario(tmp_path, criteria={SIMULATOR: CRITERIA[SIMULATOR]})
    judge = Judge(JudgeSettings(backoff=0.01, timeout=10))
    [case] = evaluate_eval_sets([load_eval_set(path)], FlightAgent(), judge=judge).cases
    assert case.error is None
    [turns] = case.turns
    assert [t["prompt"] for t in turns] == [START, "From Paris.", "To Rome, please."]
    ours_result = case.metrics[SIMULATOR]
    our_bodies = judged_bodies(fake)
    fake.bodies.clear()

    actual = [
        Invocation(user_content=content(t["prompt"], "user"), final_response=content(t["response"], "model"))
        for t in turns
    ]
    scenario = ConversationScenario(starting_prompt=START, conversation_plan=PLAN)
    adk = adk_results(SIMULATOR, actual, scenario)
    ours = [
        list(zip(ours_result.per_invocation, ours_result.per_invocation_status, strict=True)),
        (ours_result.score, ours_result.status),
    ]

    # turn 1 is the starting prompt; turn 2 valid 3-1; turn 3 tied 2-2, invalid; the end unreadable, no change
    assert ours == adk == [[(1.0, "PASSED"), (1.0, "PASSED"), (0.0, "FAILED")], (2 / 3, "FAILED")]
    assert our_bodies and judged_bodies(fake) == our_bodies  # prompts, config, 5 samples each of 3 requests
    assert sum(our_bodies.values()) == 15
    assert "judge: adk" in (ours_result.explanation or "")


def test_a_live_session_judged_online_gets_adks_verdict(fake, tmp_path):
    """A production conversation, stored turn by turn, judged online once it goes quiet by an evaluator of
    sessions whose reference is an eval set with the criterion: the case it plays (by its first user text) gets
    ADK's score and status for the conversation, from the same requests ADK sends."""
    import time

    from google.adk.evaluation.eval_case import EvalCase as AdkCase
    from google.adk.evaluation.eval_set import EvalSet as AdkSet
    from sqlalchemy import text

    from toolpath.evaluation.online import OnlineEvaluator
    from toolpath.model import Invocation as Turn
    from toolpath.store.store import Store

    turns = CONVERSATIONS[0]
    adk = adk_results(TRAJECTORY, adk_conversation(turns))
    adk_bodies = judged_bodies(fake)
    fake.bodies.clear()
    case = AdkCase(eval_id="office", conversation=adk_conversation(turns))
    (tmp_path / "office.evalset.json").write_text(AdkSet(eval_set_id="home", eval_cases=[case]).model_dump_json())
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {TRAJECTORY: CRITERIA[TRAJECTORY]}}))
    store = Store(f"sqlite:///{tmp_path / 'traffic.db'}")
    config = {"target": "session", "reference_dataset": str(tmp_path / "office.evalset.json"), "idle_seconds": 0.3,
              "poll_seconds": 0.02, "judge": {"backoff": 0.01, "timeout": 10}}  # fmt: skip
    online = OnlineEvaluator(store, config).start()
    try:
        for n, turn in enumerate(turns):  # as the user types
            store.write([Turn(invocation_id=f"{n + 1:016x}", session_id="live-1", trace_id=f"{n + 1:032x}",
                              agent_name="home_agent", prompt=turn["prompt"], response=turn["response"],
                              tool_calls=turn["calls"], intermediate_responses=[("agent", t) for t in turn["intermediate"]],
                              latency_seconds=1.0)])  # fmt: skip
        deadline = time.monotonic() + 60
        query = text("SELECT metric, score, label FROM session_results WHERE session_id = 'live-1'")
        while time.monotonic() < deadline:
            with store.engine.connect() as conn:
                got = {r.metric: (r.score, r.label) for r in conn.execute(query)}
            if got:
                break
            time.sleep(0.05)
    finally:
        online.stop()
        store.close()
    (score, verdict) = adk[1]
    assert (score, verdict) == (0.5, "FAILED")
    assert got == {TRAJECTORY: (score, "fail"), "eval_case": (0.0, "fail")}
    assert judged_bodies(fake) == adk_bodies  # the same conversation, prompt and samples as ADK's own
