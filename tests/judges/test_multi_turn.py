"""ADK's multi-turn criteria over a conversation's rows: the per-turn user simulator quality's rules (turn 1 is the
starting prompt, a majority per turn, a wrong end fails the last turn) as ADK's own evaluator applies them, and the
judged-once shape of the conversation-level criteria."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_prompts import (
    get_per_turn_user_simulator_quality_prompt,
)
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import _format_conversation_history
from google.genai import types

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import criterion_metric
from toolpath.judges import adk_bridge
from toolpath.judges.client import JudgeReply, JudgeRequest
from toolpath.judges.multi_turn import dialogue
from toolpath.metrics.base import MissingInput

SCENARIO = {"starting_prompt": "I need a flight.", "conversation_plan": "Paris to Rome."}
TURNS = [
    {"prompt": "I need a flight.", "response": "From where?", "predicted_trajectory": []},
    {"prompt": "From Paris.", "response": "To where?", "predicted_trajectory": []},
    {
        "prompt": "To Rome.",
        "response": "Booked.",
        "predicted_trajectory": [{"name": "book", "args": {"to": "Rome"}, "result": {"ok": True}}],
        "intermediate_responses": [["flights", "Booking now."]],
    },
]


def judged(metric, row, answer) -> tuple:
    """Score ``row`` with a judge that answers ``answer(request)``; the result and the prompts it was asked."""
    asked: list[JudgeRequest] = []

    async def ask(request: JudgeRequest) -> JudgeReply:
        asked.append(request)
        return JudgeReply(answer(request))

    return asyncio.run(metric.judge(row, ask)), asked


def per_turn(**options):
    return criterion_metric(
        "per_turn_user_simulator_quality_v1", {"judge_model_options": {"num_samples": 3}, **options}
    )


def test_every_user_turn_valid_scores_one_and_each_turn_is_asked_with_the_history_before_it():
    result, asked = judged(
        per_turn(), {"invocations": TURNS, "conversation_scenario": SCENARIO}, lambda r: '{"is_valid": True}'
    )
    assert result.score == 1.0 and result.details["per_invocation_scores"] == [1.0, 1.0, 1.0]
    assert len(asked) == 9  # turns 2 and 3, and the end: 3 samples each
    assert result.details["judge"] == "adk"  # ADK's own evaluator read the replies
    assert all("responseMimeType" not in (r.config or "") for r in asked)  # ADK asks for text
    second = asked[0].prompt
    assert "user: I need a flight.\n\nmodel: From where?\n\n# Generated User Response\nFrom Paris." in second
    end = asked[-1].prompt
    assert end.endswith("# Generated User Response\n</finished>") and "model: Booked." in end


def test_a_wrong_first_turn_a_split_vote_and_a_wrong_end():
    row = {"invocations": [{**TURNS[0], "prompt": "Hello"}, *TURNS[1:]], "conversation_scenario": SCENARIO}

    def answer(request: JudgeRequest) -> str:
        if request.prompt.endswith("</finished>"):
            return '{"is_valid": False}'  # it should not have ended
        return '{"is_valid": %s}' % ("True" if request.sample != 1 else "False")  # 2 of 3 samples valid

    result, _ = judged(per_turn(), row, answer)
    # turn 1 is not the starting prompt (0), turn 2 valid by majority (1), turn 3 failed by the wrong end (0)
    assert result.details["per_invocation_scores"] == [0.0, 1.0, 0.0]
    assert result.score == pytest.approx(1 / 3)
    assert "not valid: turn(s) 1, 3" in result.explanation


def test_a_custom_stop_signal_and_no_scenario():
    result, asked = judged(
        per_turn(stop_signal="[END]"),
        {"invocations": TURNS[:1], "conversation_scenario": SCENARIO},
        lambda r: '"is_valid": "valid",',
    )
    assert result.score == 1.0 and asked[-1].prompt.endswith("[END]")
    with pytest.raises(MissingInput, match="needs the case's conversation_scenario"):
        judged(per_turn(), {"invocations": TURNS}, lambda r: "")


def adk_invocation(turn: dict) -> Invocation:
    return Invocation(
        user_content=types.Content(role="user", parts=[types.Part(text=turn["prompt"])]),
        final_response=types.Content(role="model", parts=[types.Part(text=turn["response"])]),
    )


def test_each_turns_prompt_is_the_one_adk_renders():
    _, asked = judged(per_turn(), {"invocations": TURNS, "conversation_scenario": SCENARIO}, lambda r: "")
    history = [adk_invocation(turn) for turn in TURNS]
    expected = [
        get_per_turn_user_simulator_quality_prompt(
            conversation_plan=SCENARIO["conversation_plan"],
            conversation_history=_format_conversation_history(history[:i]),
            generated_user_response=response,
            stop_signal="</finished>",
        )
        for i, response in ((1, TURNS[1]["prompt"]), (2, TURNS[2]["prompt"]), (3, "</finished>"))
    ]
    assert [request.prompt for request in asked[::3]] == expected


def test_without_google_adk_the_criterion_is_one_config_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.adk.evaluation.simulation.per_turn_user_simulator_quality_prompts", None)
    with pytest.raises(ConfigError, match=r"per_turn_user_simulator_quality_v1 .*pip install 'toolpath\[adk\]'"):
        per_turn()


def test_conversation_level_criteria_are_judged_once_on_the_last_turn():
    verdicts = {"rubrics": [{"rubric": "books", "verdict": "yes"}, {"rubric": "confirms dates", "verdict": "no"}]}
    metric = criterion_metric("multi_turn_task_success_v1", {})
    result, asked = judged(metric, {"invocations": TURNS}, lambda r: json.dumps(verdicts))
    assert (result.score, result.details["per_invocation_scores"]) == (0.5, [None, None, 0.5])
    assert len(asked) == 1 and "achieve the goal" in asked[0].prompt
    assert "AGENT TURN 3 (tool call): book" in asked[0].prompt

    rubric = criterion_metric(
        "rubric_based_multi_turn_trajectory_quality_v1",
        {"rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "Books the flight."}}]},
    )
    reply = "ID: r1\nProperty: Books the flight.\nRationale: it did.\nVerdict: yes"
    result, asked = judged(rubric, {"invocations": TURNS}, lambda r: reply)
    assert (result.score, result.details["per_invocation_scores"]) == (1.0, [None, None, 1.0])
    assert len(asked) == 5  # ADK's default num_samples
    assert result.details["judge"] == "adk" and 'TURN 3 (tool output): book -> {"ok": true}' in asked[0].prompt


def test_without_google_adk_the_trajectory_rubrics_are_toolpaths_judge_labelled_as_such(monkeypatch):
    monkeypatch.setattr(adk_bridge, "adk_installed", lambda: False)
    rubric = criterion_metric(
        "rubric_based_multi_turn_trajectory_quality_v1",
        {"rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "Books the flight."}}]},
    )
    reply = '{"rubrics": [{"id": "r1", "verdict": "yes"}]}'
    result, asked = judged(rubric, {"invocations": TURNS}, lambda r: reply)
    assert (result.score, result.details["per_invocation_scores"]) == (1.0, [None, None, 1.0])
    assert result.details["judge"] == "toolpath" and result.explanation.startswith("judge: toolpath")
    assert "<conversation_history>" in asked[0].prompt and asked[0].json_output


def test_the_dialogue_shows_who_said_what():
    assert dialogue(TURNS).splitlines()[-5:] == [
        "USER TURN 3: To Rome.",
        "AGENT (flights) TURN 3: Booking now.",
        'AGENT TURN 3 (tool call): book({"to": "Rome"})',
        'AGENT TURN 3 (tool output): book -> {"ok": true}',
        "AGENT TURN 3: Booked.",
    ]
