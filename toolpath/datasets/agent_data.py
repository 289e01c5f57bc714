"""Google's ``agent_data`` (the Agent Platform evaluation SDK's ``AgentData``, the ``agent_data`` of Vertex AI's
``EvaluationInstance``): a multi-turn agent trace as ``agents`` (each agent's config, keyed by its id) and
``turns``, each a list of ``events`` with an ``author`` (``"user"`` or an agent id) and a genai ``Content``
(text, ``function_call`` and ``function_response`` parts).

Both ways: :func:`session_agent_data` writes a recorded session in it (``toolpath export --format
agent_data``), and :func:`agent_data_columns` reads one, a dataset row's ``agent_data`` cell, into the columns
toolpath's metrics read (docs/vertex.md, "Agent data").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from toolpath.errors import DatasetError
from toolpath.model import Invocation, Session, ToolCall

__all__ = ["agent_data_columns", "agent_data_rows", "session_agent_data"]

USER = "user"
"""The author of the user's events."""
DEFAULT_AGENT = "agent"
"""The author of an agent's events when the recording names no agent."""


# --- writing -------------------------------------------------------------------------------------------


def agent_data_rows(sessions: Sequence[Session]) -> list[dict[str, Any]]:
    """One dataset row per session: its id and its ``agent_data``."""
    return [{"session_id": s.session_id, "agent_data": session_agent_data(s)} for s in sessions]


def session_agent_data(session: Session) -> dict[str, Any]:
    """``session`` as ``AgentData`` JSON: one turn per invocation; each agent that acted in it, with the tools
    it was seen calling (as function declarations that carry their names only: a recording holds no schema)."""
    root = session.agent_name or next((i.agent_name for i in session.invocations if i.agent_name), None)
    turns = [
        _turn(index, inv, inv.agent_name or root or DEFAULT_AGENT) for index, inv in enumerate(session.invocations)
    ]
    tools: dict[str, list[str]] = {}
    for turn in turns:
        for event in turn["events"]:
            if event["author"] == USER:
                continue
            names = tools.setdefault(event["author"], [])
            for part in event["content"]["parts"]:
                call = part.get("function_call")
                if call is not None and call["name"] not in names:
                    names.append(call["name"])
    agents: dict[str, Any] = {}
    for agent, names in tools.items():
        config: dict[str, Any] = {"agent_id": agent}
        if names:
            config["tools"] = [{"function_declarations": [{"name": name} for name in names]}]
        agents[agent] = config
    return {"agents": agents, "turns": turns}


def _turn(index: int, inv: Invocation, agent: str) -> dict[str, Any]:
    started = _time(inv.started_at)
    events: list[dict[str, Any]] = []
    if inv.prompt is not None:
        events.append(_event(USER, "user", [{"text": inv.prompt}], started))
    for author, text in inv.intermediate_responses:
        events.append(_event(author or agent, "model", [{"text": text}]))
    for call in inv.tool_calls:
        author = call.agent_name or agent
        begun = _time(call.start_time)
        function_call = {"name": call.name, "args": call.args or {}, **({"id": call.call_id} if call.call_id else {})}
        events.append(_event(author, "model", [{"function_call": function_call}], begun))
        reply = {"name": call.name, "response": _response(call), **({"id": call.call_id} if call.call_id else {})}
        events.append(_event(author, "user", [{"function_response": reply}], _time(call.end_time)))
    if inv.response is not None:
        events.append(_event(inv.answered_by or agent, "model", [{"text": inv.response}]))
    return {"turn_index": index, "turn_id": inv.invocation_id, "events": events}


def _event(author: str, role: str, parts: list[dict[str, Any]], when: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"author": author, "content": {"role": role, "parts": parts}}
    if when is not None:
        event["event_time"] = when
    return event


def _response(call: ToolCall) -> dict[str, Any]:
    if call.error is not None:
        return {"error": call.error}
    return call.result if isinstance(call.result, dict) else {"result": call.result}


def _time(value: datetime | int | None) -> str | None:
    """An RFC 3339 timestamp of a datetime or of nanoseconds since the epoch."""
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromtimestamp(value / 1e9, tz=UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.isoformat().replace("+00:00", "Z")


# --- reading -------------------------------------------------------------------------------------------


def agent_data_columns(value: Any, where: str) -> dict[str, Any]:
    """The columns an ``agent_data`` cell (a mapping, or its JSON text) gives a row: ``prompt`` (the last
    turn's user text), ``response`` (the last turn's final agent text), ``predicted_trajectory`` (every
    function call of the conversation, in order, each with its result and the agent that made it),
    ``intermediate_responses``, ``history`` (the earlier turns as ``author: text`` lines) and ``invocations``
    (per turn: ``prompt``, ``response``, ``predicted_trajectory``). A conversation that ends with the user's
    message (an agent is to answer it) has no ``response`` or ``predicted_trajectory``.

    Anything that is not the format is a :class:`DatasetError` naming ``where`` and the field
    (``agent_data.turns[1].events[0].author``). Keys are read in snake_case or camelCase."""
    data = _mapping(_decoded(value, where), where, "agent_data")
    turns = _list(data.get("turns"), where, "agent_data.turns")
    if not turns:
        raise DatasetError(f"{where}: agent_data.turns: no turns")
    read = [_read_turn(turn, where, f"agent_data.turns[{i}]") for i, turn in enumerate(turns)]
    last = read[-1]
    ends_with_user = last["last_author"] == USER
    columns: dict[str, Any] = {
        "prompt": last["prompt"],
        "history": "\n".join(line for turn in read[:-1] for line in turn["lines"]),
        "invocations": [
            {"prompt": t["prompt"], "response": t["response"], "predicted_trajectory": t["calls"]} for t in read
        ],
    }
    if not ends_with_user:
        columns["response"] = last["response"]
        columns["predicted_trajectory"] = [call for turn in read for call in turn["calls"]]
        columns["intermediate_responses"] = [text for turn in read for text in turn["intermediate"]]
    return columns


def _read_turn(turn: Any, where: str, field: str) -> dict[str, Any]:
    events = _list(_mapping(turn, where, field).get("events"), where, f"{field}.events")
    prompts: list[str] = []
    texts: list[str] = []  # each agent event's text, in order
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    last_author, final = None, None  # final: the text of the last event, when an agent's text ends the turn
    for index, event in enumerate(events):
        at = f"{field}.events[{index}]"
        event = _mapping(event, where, at)
        author = event.get("author")
        if not isinstance(author, str) or not author:
            raise DatasetError(f"{where}: {at}.author: must be a non-empty string")
        content = _mapping(event.get("content") or {}, where, f"{at}.content")
        parts = _list(content.get("parts") or [], where, f"{at}.content.parts")
        said: list[str] = []
        for number, part in enumerate(parts):
            part_at = f"{at}.content.parts[{number}]"
            part = _mapping(part, where, part_at)
            text = part.get("text")
            call = _either(part, "function_call", "functionCall")
            reply = _either(part, "function_response", "functionResponse")
            if isinstance(text, str) and not part.get("thought"):
                said.append(text)
            elif call is not None:
                item = _call_item(_mapping(call, where, f"{part_at}.function_call"), author, where, part_at)
                calls.append(item)
                if "id" in item:
                    by_id[item["id"]] = item
            elif reply is not None:
                _attach(_mapping(reply, where, f"{part_at}.function_response"), calls, by_id)
        last_author = author
        final = None
        if said:
            text = "".join(said)
            lines.append(f"{author}: {text}")
            if author == USER:
                prompts.append(text)
            else:
                texts.append(text)
                final = text if len(said) == len(parts) else None
    return {
        "prompt": "\n".join(prompts) if prompts else None,
        "response": final,
        "intermediate": texts[:-1] if final is not None else texts,
        "calls": calls,
        "lines": lines,
        "last_author": last_author,
    }


def _call_item(call: Mapping[str, Any], author: str, where: str, at: str) -> dict[str, Any]:
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise DatasetError(f"{where}: {at}.function_call.name: must be a non-empty string")
    args = call.get("args")
    if args is not None and not isinstance(args, Mapping):
        raise DatasetError(f"{where}: {at}.function_call.args: must be an object")
    item: dict[str, Any] = {"tool_name": name, "tool_input": dict(args or {})}
    if author != USER:
        item["agent_name"] = author
    if isinstance(call.get("id"), str) and call["id"]:
        item["id"] = call["id"]
    return item


def _attach(reply: Mapping[str, Any], calls: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> None:
    """A function response's result on its call: by id, else the earliest call of that name still without one."""
    target = by_id.get(reply.get("id") or "")
    if target is None:
        target = next((c for c in calls if c["tool_name"] == reply.get("name") and "tool_output" not in c), None)
    if target is not None:
        response = reply.get("response")
        if isinstance(response, Mapping) and set(response) == {"result"}:
            response = response["result"]  # the wrapper a non-object result is given
        target["tool_output"] = response


def _either(part: Mapping[str, Any], snake: str, camel: str) -> Any:
    return part.get(snake) if part.get(snake) is not None else part.get(camel)


def _decoded(value: Any, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: agent_data: not JSON ({exc.msg} at character {exc.pos})") from None
    return value


def _mapping(value: Any, where: str, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where}: {field}: must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise DatasetError(f"{where}: {field}: must be a list, got {type(value).__name__}")
    return value
