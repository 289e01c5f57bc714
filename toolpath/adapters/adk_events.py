"""Google ADK: read a turn's events as ADK's own evaluation reads them, and record them on the agent span.

    reader = EventReader()
    async for event in runner.run_async(user_id=..., session_id=..., new_message=...):
        reader.add(event)
    record_turn(span, reader.turn())

The events may be ADK ``Event`` objects or their JSON dumps (what Agent Engine's ``AdkApp.stream_query`` yields;
snake_case or camelCase keys). What is read follows ``EvaluationGenerator.convert_events_to_eval_invocations``
(google-adk 2.x) exactly: the user's events are skipped; the final response is the last event that
``is_final_response()`` (one with text is not replaced by one without), its text parts joined with newlines as
ADK joins them; the tool calls are the ``function_call`` parts of every kept event (the final one included when
it calls a function), in the order the model listed them, with ADK's ids; the tool responses and the
intermediate ``(author, text)`` responses come from the same events, the final response's own text excluded; the
model calls are the kept events that carry ``usage_metadata`` or ``model_version``, as ADK's efficiency figures
count them (an answer ADK leaves out, such as an empty text ``""``, is no model call there, nor are its tokens).

ADK 2.x's own ``execute_tool`` spans carry no arguments unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
says so; the events always do, so the trajectory recorded here is complete (``toolpath.agent.trajectory_source``
= ``events``). google-adk itself is never imported here: events are read by their fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolpath.tracer import semconv as sc
from toolpath.tracer import spans

_USER = "user"
_DEFAULT_AUTHOR = "agent"


@dataclass
class AdkTurn:
    """One invocation as ADK's evaluation sees it."""

    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"name", "args", "id", "author"}`` per ``function_call`` (``args`` ``None`` when the call has none;
    ``author``: the agent whose event asked for it), plus
    ``result`` (the ``function_response.response`` with the same id) and ``error`` (from an ``{"error": …}``
    response) when there is one."""
    tool_responses: list[dict[str, Any]] = field(default_factory=list)
    """The ``function_response`` parts, as ADK's ``get_all_tool_responses`` lists them."""
    intermediate_responses: list[tuple[str, str]] = field(default_factory=list)
    """``(author, text)`` of each text part before the final response."""
    response: str | None = None
    """The final response's text parts joined with ``"\\n"``; ``None`` when no event was a final response."""
    events: int = 0
    """How many events carried content (0: the stream held no ADK events)."""
    answered_by: str | None = None
    """The author of the final response (a sub-agent the turn was transferred to, say)."""
    agent_events: int = 0
    """How many events the agents wrote, with content or without (0: no ADK agent event was read)."""
    model_usage: list[dict[str, Any] | None] = field(default_factory=list)
    """One item per model call ADK's efficiency figures count in the turn: a kept event with ``usage_metadata``
    or ``model_version``; the item is its ``usage_metadata`` (``None`` when it reported none)."""


class EventReader:
    """Collects one turn's ADK events (objects or dumps) and gives the :class:`AdkTurn` they describe."""

    def __init__(self) -> None:
        self._kept: list[_Kept] = []
        self._final: _Kept | None = None
        self._events = 0
        self._agent_events = 0
        self._model_usage: list[dict[str, Any] | None] = []

    def add(self, event: Any) -> bool:
        """Read one event; ``False`` when it is not an ADK event (no ``content`` / ``author`` mapping)."""
        data = _as_mapping(event)
        if data is None or not ("content" in data or "author" in data):
            return False
        author = str(data.get("author") or _DEFAULT_AUTHOR)
        if author.lower() == _USER:
            return True
        self._agent_events += 1
        content = data.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        parts = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
        grounding = _get(data, "grounding_metadata", "groundingMetadata")
        if not parts:
            if grounding is not None:
                self._keep(_Kept(author, None), data)
            return True
        self._events += 1
        kept = _Kept(author, parts)
        if _is_final_response(event, data, parts):
            final_has_text = self._final is not None and any(_text(p) for p in self._final.parts or ())
            if not final_has_text or any(_text(p) for p in parts):
                self._final = kept
        if grounding is not None or any(
            _call(p) is not None or _response(p) is not None or _text(p) or _get(p, "inline_data", "inlineData")
            for p in parts
        ):
            self._keep(kept, data)
        return True

    def _keep(self, kept: _Kept, data: Mapping[str, Any]) -> None:
        """An event ADK keeps among the invocation's events; a model call there when it says which model answered or
        what it used (``_is_model_call_event``). An event ADK leaves out (an empty answer) is not counted."""
        self._kept.append(kept)
        usage = _get(data, "usage_metadata", "usageMetadata")
        if usage is not None or _get(data, "model_version", "modelVersion") is not None:
            self._model_usage.append(dict(usage) if isinstance(usage, Mapping) else None)

    def turn(self) -> AdkTurn:
        turn = AdkTurn(events=self._events, agent_events=self._agent_events, model_usage=list(self._model_usage))
        for kept in self._kept:
            if kept.parts is None or (kept is self._final and not any(_call(p) is not None for p in kept.parts)):
                continue  # ADK keeps the final response's text on the invocation, not among its events
            for part in kept.parts:
                call, response, text = _call(part), _response(part), _text(part)
                if call is not None:
                    call["author"] = kept.author
                    turn.tool_calls.append(call)
                elif response is not None:
                    turn.tool_responses.append(response)
                elif text and kept.author != _USER:
                    turn.intermediate_responses.append((kept.author, text))
        by_id = {r.get("id"): r for r in turn.tool_responses}  # as ADK's get_all_tool_calls_with_responses
        for call in turn.tool_calls:
            response = by_id.get(call["id"])
            if response is not None:
                call["result"] = response.get("response")
                error = tool_error(call["result"])
                if error is not None:
                    call["error"] = error
        if self._final is not None:
            turn.response = "\n".join(t for t in (_text(p) for p in self._final.parts or ()) if t)
            turn.answered_by = self._final.author
        return turn


@dataclass
class _Kept:
    author: str
    parts: list[Mapping[str, Any]] | None


def record_turn(span: Any, turn: AdkTurn) -> None:
    """Put ``turn``'s trajectory, intermediate responses and the model calls ADK counts on the agent span
    (``span``; the current one when ``None``); the final response is the caller's to record when it ends the
    span."""
    target = span if span is not None else spans.current_span()
    spans.set_event_record(target, turn.tool_calls, turn.intermediate_responses, turn.answered_by)
    if turn.agent_events and target.is_recording():  # counts, not content: recorded whatever the policy
        target.set_attribute(sc.TOOLPATH_MODEL_USAGE, json.dumps(turn.model_usage, separators=(",", ":")))


def tool_error(result: Any) -> str | None:
    """ADK reports a tool failure handled by a callback as an ``{"error", "error_type"}`` payload (the collector's
    ``reconstruct.adk.tool_error`` reads ADK's spans the same way)."""
    if isinstance(result, Mapping) and result.get("error"):
        kind = result.get("error_type")
        return f"{kind}: {result['error']}" if kind else str(result["error"])
    return None


def _as_mapping(event: Any) -> Mapping[str, Any] | None:
    if isinstance(event, Mapping):
        return event
    dump = getattr(event, "model_dump", None)
    if callable(dump):
        data = dump(mode="json", exclude_none=True)
        return data if isinstance(data, Mapping) else None
    return None


def _get(data: Mapping[str, Any], snake: str, camel: str) -> Any:
    value = data.get(snake)
    return data.get(camel) if value is None else value


def _text(part: Mapping[str, Any]) -> str | None:
    text = part.get("text")
    return text if isinstance(text, str) and text else None


def _call(part: Mapping[str, Any]) -> dict[str, Any] | None:
    call = _get(part, "function_call", "functionCall")
    if not isinstance(call, Mapping) or not call.get("name"):
        return None
    args = call.get("args")  # a call without args keeps None: ADK compares it unequal to {}
    return {"name": str(call["name"]), "args": dict(args) if isinstance(args, Mapping) else None, "id": call.get("id")}


def _response(part: Mapping[str, Any]) -> dict[str, Any] | None:
    response = _get(part, "function_response", "functionResponse")
    return dict(response) if isinstance(response, Mapping) else None


def _is_final_response(event: Any, data: Mapping[str, Any], parts: list[Mapping[str, Any]]) -> bool:
    """ADK's ``Event.is_final_response()``: asked of the event itself when it is one, else read from its dump."""
    method = getattr(event, "is_final_response", None)
    if callable(method):
        return bool(method())
    actions = data.get("actions")
    if isinstance(actions, Mapping) and _get(actions, "skip_summarization", "skipSummarization"):
        return True
    if _get(data, "long_running_tool_ids", "longRunningToolIds"):
        return True
    calls = any(_call(p) is not None for p in parts)
    partial = bool(data.get("partial"))
    if _get(data, "error_code", "errorCode") and not partial and not calls:
        return True
    trailing_result = _get(parts[-1], "code_execution_result", "codeExecutionResult") is not None if parts else False
    return not calls and not any(_response(p) is not None for p in parts) and not partial and not trailing_result
