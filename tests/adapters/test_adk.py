"""ADK events read as ADK's own evaluation reads them (``EvaluationGenerator.convert_events_to_eval_invocations``):
from a real agent's events, from their JSON dumps (snake_case and camelCase), and from edge-case events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.adk.evaluation.eval_case import InvocationEvents, get_all_tool_calls, get_all_tool_responses
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from tests.helpers import adk_agent
from toolpath.adapters.adk_events import AdkTurn, EventReader


def adk_view(events: list[Event]) -> dict[str, Any]:
    """What ADK's inference makes of one turn's events."""
    [invocation] = EvaluationGenerator.convert_events_to_eval_invocations(events)
    assert isinstance(invocation.intermediate_data, InvocationEvents)
    final = invocation.final_response
    return {
        "tool_calls": [(c.name, c.args or {}, c.id) for c in get_all_tool_calls(invocation.intermediate_data)],
        "tool_responses": [
            r.model_dump(mode="json", exclude_none=True) for r in get_all_tool_responses(invocation.intermediate_data)
        ],
        "intermediate": [
            (e.author, p.text)
            for e in invocation.intermediate_data.invocation_events
            for p in (e.content.parts or [] if e.content else [])
            if p.text
        ],
        "response": None if final is None else "\n".join(p.text for p in final.parts or [] if p.text),
    }


def our_view(turn: AdkTurn) -> dict[str, Any]:
    return {
        "tool_calls": [(c["name"], c["args"], c["id"]) for c in turn.tool_calls],
        "tool_responses": turn.tool_responses,
        "intermediate": turn.intermediate_responses,
        "response": turn.response,
    }


def read(events: list[Any]) -> AdkTurn:
    reader = EventReader()
    for event in events:
        assert reader.add(event)
    return reader.turn()


def dumps(events: list[Event], *, by_alias: bool = False) -> list[dict[str, Any]]:
    return [json.loads(e.model_dump_json(exclude_none=True, by_alias=by_alias)) for e in events]


@pytest.fixture(scope="module")
async def agent_turns() -> list[list[Event]]:
    """The events of three turns of the home agent in one session (as ADK's inference collects them: the user's
    message first)."""
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="home_app", user_id="ana", state={"home": "flat 7"})
    turns = []
    async with Runner(app_name="home_app", agent=adk_agent.build_home_agent(), session_service=sessions) as runner:
        for prompt in (adk_agent.STATUS, adk_agent.WHICH_HOME, adk_agent.DIM):
            message = types.Content(role="user", parts=[types.Part(text=prompt)])
            events = [e async for e in runner.run_async(user_id="ana", session_id=session.id, new_message=message)]
            turns.append([Event(author="user", content=message, invocation_id=events[0].invocation_id), *events])
    return turns


async def test_a_real_agents_turns_read_as_adk_reads_them(agent_turns):
    for events in agent_turns:
        expected = adk_view(events)
        assert our_view(read(events)) == expected
        assert our_view(read(dumps(events))) == expected  # what AdkApp.stream_query yields
        assert our_view(read(dumps(events, by_alias=True))) == expected  # camelCase dumps
    status, which_home, dim = (read(events) for events in agent_turns)
    assert status.response == "The hall light is on at 80%.\nThe living room is at 20.5 °C."  # two parts, joined
    assert [c["args"] for c in status.tool_calls] == [{"device_id": "light-hall"}, {"device_id": "thermostat-living"}]
    assert status.intermediate_responses == [("home", "Let me look.")]
    assert all(c["id"].startswith("adk-") for c in status.tool_calls)
    assert [c["result"] for c in status.tool_calls] == [
        {"device_id": "light-hall", "type": "light", "on": True, "brightness": 80},
        {"device_id": "thermostat-living", "type": "thermostat", "celsius": 20.5},
    ]
    assert which_home.tool_calls[0]["result"] == {"home": "flat 7", "owner": None}
    assert [c["name"] for c in dim.tool_calls] == ["transfer_to_agent", "set_light"]
    assert dim.response == "Dimmed the hall light to 30%."


def _event(parts: list[types.Part] | None = None, **fields: Any) -> Event:
    content = types.Content(role="model", parts=parts) if parts is not None else None
    return Event(author=fields.pop("author", "home"), invocation_id="inv-1", content=content, **fields)


def _text(text: str, **fields: Any) -> types.Part:
    return types.Part(text=text, **fields)


def _response(name: str, call_id: str, response: dict[str, Any]) -> types.Part:
    return types.Part(function_response=types.FunctionResponse(name=name, id=call_id, response=response))


def _call(name: str, call_id: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, id=call_id, args=args))


EDGE_CASES = {
    # a final text answer is not replaced by a later final event without text (a skip_summarization response)
    "text final kept": [
        _event([_call("lookup", "c1", q="x")]),
        _event([_text("Found it.")]),
        _event([_response("lookup", "c1", {"hits": 1})], actions=EventActions(skip_summarization=True)),
    ],
    # partial (streamed) chunks are intermediate text; the complete event is the final response
    "partial chunks": [
        _event([_text("The ")], partial=True),
        _event([_text("answer.")], partial=True),
        _event([_text("The answer.")]),
    ],
    # a long-running call is final and keeps its content; a thought part is text to ADK
    "long running": [
        _event([_text("thinking", thought=True), _call("approve", "c2", amount=5)], long_running_tool_ids={"c2"}),
    ],
    # an error event without calls is final; a trailing code execution result is not
    "error and code": [
        _event(
            [
                types.Part(executable_code=types.ExecutableCode(code="1+1", language="PYTHON")),
                types.Part(code_execution_result=types.CodeExecutionResult(outcome="OUTCOME_OK", output="2")),
            ]
        ),
        _event([_text("Could not finish.")], error_code="MAX_TOKENS"),
    ],
    # a sub-agent's answer after another agent's text; an event with no parts is skipped
    "two authors": [
        _event([_text("Asking lights."), _call("transfer_to_agent", "c3", agent_name="lights")]),
        _event([_response("transfer_to_agent", "c3", {"result": None})]),
        _event([], author="lights"),
        _event([_text("Done"), _text("")], author="lights"),
    ],
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases_read_as_adk_reads_them(name):
    events = [_event([_text("hello")], author="user"), *EDGE_CASES[name]]
    expected = adk_view(events)
    assert our_view(read(events)) == expected
    assert our_view(read(dumps(events))) == expected
    assert our_view(read(dumps(events, by_alias=True))) == expected


def test_failed_tool_payload_is_the_calls_error():
    turn = read(
        [
            _event([_call("set_temperature", "c9", room="garage")]),
            _event([_response("set_temperature", "c9", {"error": "no thermostat", "error_type": "ValueError"})]),
            _event([_text("No thermostat in the garage.")]),
        ]
    )
    [failed] = turn.tool_calls
    assert failed["error"] == "ValueError: no thermostat" and failed["result"]["error"] == "no thermostat"


def test_what_is_not_an_adk_event_is_refused():
    reader = EventReader()
    assert not reader.add("text")
    assert not reader.add({"messages": []})
    turn = reader.turn()
    assert (turn.events, turn.tool_calls, turn.response) == (0, [], None)
