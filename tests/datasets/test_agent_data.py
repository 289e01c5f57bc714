"""Google's ``agent_data`` both ways: a recorded session written in it is what Google's own SDK reads, and a
dataset in it (snake_case or camelCase, as Google's SDK writes it) is read for evaluation."""

from __future__ import annotations

import json

import pytest

import toolpath
from toolpath.datasets import load_rows
from toolpath.datasets.agent_data import agent_data_columns, session_agent_data
from toolpath.errors import DatasetError
from toolpath.model import Invocation, Session, ToolCall

TURNS = [
    Invocation(
        invocation_id="i1",
        session_id="s",
        agent_name="coordinator",
        prompt="Refund order 7.",
        response="Refunded.",
        tool_calls=[
            ToolCall(name="lookup", args={"order": 7}, result={"paid": True}, call_id="c1", agent_name="coordinator"),
            ToolCall(name="refund", args={"order": 7}, result="done", call_id="c2", agent_name="billing_agent"),
            ToolCall(name="notify", args={}, error="mail down", call_id="c3", agent_name="billing_agent"),
        ],
        intermediate_responses=[("coordinator", "Let me look.")],
        answered_by="billing_agent",
        started_at="2026-01-02T03:04:05Z",
    ),
    Invocation(invocation_id="i2", session_id="s", agent_name="coordinator", prompt="Thanks", response="Welcome."),
]
SESSION = Session(session_id="s", agent_name="coordinator", invocations=TURNS)


def test_a_session_is_what_googles_sdk_reads_as_agent_data() -> None:
    from agentplatform._genai import _evals_data_converters
    from agentplatform._genai.types import evals
    from google.cloud.aiplatform_v1beta1.types import AgentData as AgentDataMessage

    data = session_agent_data(SESSION)
    parsed = evals.AgentData.model_validate(data)  # the Agent Platform SDK's pydantic model
    assert [t.turn_id for t in parsed.turns] == ["i1", "i2"]
    first = parsed.turns[0].events
    assert [e.author for e in first] == ["user", "coordinator", *["coordinator"] * 2, *["billing_agent"] * 5]
    assert first[0].content.parts[0].text == "Refund order 7."
    assert first[0].event_time is not None and first[0].event_time.year == 2026
    assert first[2].content.parts[0].function_call.args == {"order": 7}
    assert first[7].content.parts[0].function_response.response == {"error": "mail down"}
    assert first[-1].content.parts[0].text == "Refunded."
    assert sorted(parsed.agents) == ["billing_agent", "coordinator"]
    tools = parsed.agents["billing_agent"].tools[0].function_declarations
    assert [t.name for t in tools] == ["refund", "notify"]
    dataset = _evals_data_converters._FlattenEvalDataConverter().convert([{"agent_data": data}])
    assert dataset.eval_cases[0].agent_data == parsed
    message = AgentDataMessage.from_json(json.dumps(data))  # the service's own message type takes it too
    assert message.turns[0].events[2].content.parts[0].function_call.name == "lookup"


def test_agent_data_reads_back_as_the_columns_the_metrics_read() -> None:
    columns = agent_data_columns(session_agent_data(SESSION), "row 1")
    assert columns["prompt"] == "Thanks" and columns["response"] == "Welcome."
    assert columns["history"].splitlines() == [
        "user: Refund order 7.",
        "coordinator: Let me look.",
        "billing_agent: Refunded.",
    ]
    assert columns["predicted_trajectory"] == [
        {"tool_name": "lookup", "tool_input": {"order": 7}, "agent_name": "coordinator", "id": "c1",
         "tool_output": {"paid": True}},
        {"tool_name": "refund", "tool_input": {"order": 7}, "agent_name": "billing_agent", "id": "c2",
         "tool_output": "done"},
        {"tool_name": "notify", "tool_input": {}, "agent_name": "billing_agent", "id": "c3",
         "tool_output": {"error": "mail down"}},
    ]  # fmt: skip
    assert [t["response"] for t in columns["invocations"]] == ["Refunded.", "Welcome."]
    assert [len(t["predicted_trajectory"]) for t in columns["invocations"]] == [3, 0]
    assert columns["intermediate_responses"] == ["Let me look."]  # each turn's final response is not one


def test_googles_camel_case_agent_data_in_a_jsonl_dataset_is_scored(tmp_path) -> None:
    from agentplatform._genai.types import evals
    from google.genai import types as genai

    made = evals.AgentData(
        agents={"home": evals.AgentConfig(agent_id="home", instruction="Run the house.")},
        turns=[
            evals.ConversationTurn(
                turn_index=0,
                events=[
                    evals.AgentEvent(
                        author="user", content=genai.Content(role="user", parts=[genai.Part(text="Lock up")])
                    ),
                    evals.AgentEvent(
                        author="home",
                        content=genai.Content(
                            role="model",
                            parts=[
                                genai.Part(function_call=genai.FunctionCall(name="lock_door", args={"door": "front"}))
                            ],
                        ),
                    ),
                    evals.AgentEvent(
                        author="home",
                        content=genai.Content(
                            role="user",
                            parts=[
                                genai.Part(
                                    function_response=genai.FunctionResponse(name="lock_door", response={"ok": True})
                                )
                            ],
                        ),
                    ),
                    evals.AgentEvent(
                        author="home", content=genai.Content(role="model", parts=[genai.Part(text="Locked.")])
                    ),
                ],
            )
        ],
    )
    camel = made.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert "functionCall" in json.dumps(camel)
    path = tmp_path / "cases.jsonl"
    reference = [{"tool_name": "lock_door", "tool_input": {"door": "front"}}]
    path.write_text(json.dumps({"agent_data": camel, "reference_trajectory": reference, "reference": "Locked."}) + "\n")
    result = toolpath.evaluate(path, ["trajectory_exact_match", "exact_match", "tool_call_count"])
    [row] = result.metrics_table
    assert row["trajectory_exact_match/score"] == 1.0 and row["exact_match/score"] == 1.0
    assert row["tool_call_count/score"] == 1.0
    assert row["prompt"] == "Lock up" and row["predicted_trajectory"][0]["tool_output"] == {"ok": True}


def test_a_conversation_ending_with_the_user_is_run_by_the_agent(tracing) -> None:
    @toolpath.tool
    def lock_door(door: str) -> str:
        return f"{door} locked"

    @toolpath.agent(name="home")
    def home(prompt: str) -> str:
        lock_door("back")
        return "Done."

    pending = {
        "turns": [
            {"events": [{"author": "user", "content": {"parts": [{"text": "Hi"}]}},
                        {"author": "home", "content": {"parts": [{"text": "Hello."}]}}]},
            {"events": [{"author": "user", "content": {"parts": [{"text": "Lock the back door"}]}}]},
        ]
    }  # fmt: skip
    [row] = load_rows([{"agent_data": pending}])
    assert "response" not in row and "predicted_trajectory" not in row and row["history"] == "user: Hi\nhome: Hello."
    reference = [{"tool_name": "lock_door", "tool_input": {"door": "back"}}]
    result = toolpath.evaluate(
        [{"agent_data": json.dumps(pending), "reference_trajectory": reference}],
        ["trajectory_exact_match"],
        runnable=home,
    )
    [scored] = result.metrics_table
    assert scored["prompt"] == "Lock the back door" and scored["response"] == "Done."
    assert scored["trajectory_exact_match/score"] == 1.0


@pytest.mark.parametrize(
    ("agent_data", "message"),
    [
        ("{not json", "agent_data: not JSON"),
        ({"turns": []}, "agent_data.turns: no turns"),
        ({"turns": [{"events": [{"content": {"parts": []}}]}]}, r"agent_data.turns\[0\].events\[0\].author"),
        ({"turns": [{"events": "x"}]}, r"agent_data.turns\[0\].events: must be a list"),
        (
            {"turns": [{"events": [{"author": "a", "content": {"parts": [{"function_call": {"args": {}}}]}}]}]},
            r"agent_data.turns\[0\].events\[0\].content.parts\[0\].function_call.name",
        ),
    ],
)
def test_a_malformed_agent_data_names_its_line_and_field(tmp_path, agent_data, message) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"agent_data": session_agent_data(SESSION)}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"agent_data": agent_data}) + "\n")
    with pytest.raises(DatasetError, match=rf"bad.jsonl:2: {message}"):
        toolpath.evaluate(path, ["tool_call_count"])


def test_a_dataframe_mixing_agent_data_rows_and_plain_rows() -> None:
    import pandas as pd

    frame = pd.DataFrame(
        [
            {"agent_data": session_agent_data(SESSION)},
            {"prompt": "p", "response": "r", "predicted_trajectory": [{"tool_name": "t", "tool_input": {}}]},
        ]
    )
    traced, plain = load_rows(frame)
    assert traced["response"] == "Welcome." and len(traced["predicted_trajectory"]) == 3
    assert plain["response"] == "r" and "history" not in plain
