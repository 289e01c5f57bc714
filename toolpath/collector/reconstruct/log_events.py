"""GenAI events sent as OTLP logs (:mod:`toolpath.collector.genai_logs`) folded into the spans they belong to:
what a span lacks is filled in from its events, and the events' records leave the walk.

- ``gen_ai.client.inference.operation.details`` carries the same ``gen_ai.*`` attributes a span would
  (``gen_ai.input.messages``, ``gen_ai.output.messages``, tool call arguments and results…): each is taken
  where the span has none.
- The message events, in time order, make ``gen_ai.input.messages`` (``gen_ai.system.message``,
  ``gen_ai.user.message`` — ADK's too —, ``gen_ai.assistant.message`` with its tool calls, ``gen_ai.tool.message``
  with its result) and ``gen_ai.output.messages`` (``gen_ai.choice``), in the GenAI conventions' parts form.

A span's own attributes always win: events only fill gaps. A tool span without arguments takes those the model
asked for in a turn its events told, and the result the model was sent back for that call."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from toolpath.collector.reconstruct import genai, requests
from toolpath.collector.reconstruct.span_values import order_key, parse_json
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

__all__ = ["fold_log_events", "is_log_event"]

_INPUT_ROLES = {
    sc.GEN_AI_SYSTEM_MESSAGE_EVENT: "system",
    sc.GEN_AI_USER_MESSAGE_EVENT: "user",
    sc.GEN_AI_ASSISTANT_MESSAGE_EVENT: "assistant",
    sc.GEN_AI_TOOL_MESSAGE_EVENT: "tool",
}


def is_log_event(span: SpanRecord) -> bool:
    return sc.TOOLPATH_LOG_EVENT in span.attributes


def fold_log_events(spans: Iterable[SpanRecord]) -> list[SpanRecord]:
    """``spans`` without the records of GenAI log events, each span they belong to filled in from them."""
    spans = list(spans)
    events: dict[tuple[str, str | None], list[SpanRecord]] = defaultdict(list)
    for span in spans:
        if is_log_event(span):
            events[(span.trace_id, span.parent_span_id)].append(span)
    if not events:
        return spans
    out, informed = [], []
    for span in spans:
        if is_log_event(span):
            continue
        own = events.get((span.trace_id, span.span_id))
        filled = _filled(span, own) if own else span
        out.append(filled)
        if filled is not span:
            informed.append(filled)
    return _tool_content(out, informed) if any(genai.requested_calls(s.attributes) for s in informed) else out


def _tool_content(spans: list[SpanRecord], informed: list[SpanRecord]) -> list[SpanRecord]:
    """Tool spans without arguments given those the model asked for, in a model span its events filled in (the
    latest such turn begun before the tool that asked for a call of its name: :mod:`.requests`), and the result
    the model was then sent for that call (by call id, else in the order of the calls asked)."""
    informed.sort(key=order_key)
    asked = requests.collect((span, genai.requested_calls(span.attributes)) for span in informed)
    answers = _answers(informed)
    out = []
    used: set[int] = set()
    for span in sorted(spans, key=order_key):
        name = span.attributes.get(sc.GEN_AI_TOOL_NAME)
        if span.attributes.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) is not None or not isinstance(name, str):
            out.append(span)
            continue
        candidates = [
            r for r in asked if id(r) not in used and r.name == name and r.at <= span.start_time
            and any(m.trace_id == span.trace_id for m in informed)
        ]  # fmt: skip
        if not candidates:
            out.append(span)
            continue
        latest = max(r.turn for r in candidates)
        chosen = next(r for r in candidates if r.turn == latest)
        used.add(id(chosen))
        filled = {sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(chosen.args if chosen.args is not None else {})}
        result = answers.get((chosen.turn, chosen.index))
        if result is not None and span.attributes.get(sc.GEN_AI_TOOL_CALL_RESULT) is None:
            filled[sc.GEN_AI_TOOL_CALL_RESULT] = json.dumps(result, ensure_ascii=False, default=str)
        out.append(replace(span, attributes={**span.attributes, **filled}))
    return out


def _answers(informed: list[SpanRecord]) -> dict[tuple[int, int], Any]:
    """Per (model turn, call index) of :func:`requests.collect`, the response the model was later sent for it:
    the ``tool_call_response`` parts of the next turn's input that answer calls, matched by call id when every
    call's id is there, else in the calls' order."""
    responses: list[list[dict[str, Any]]] = []
    for span in informed:
        messages = parse_json(span.attributes.get(sc.GEN_AI_INPUT_MESSAGES))
        responses.append(
            [
                part
                for message in (messages if isinstance(messages, list) else ())
                if isinstance(message, dict)
                for part in message.get("parts") or ()
                if isinstance(part, dict) and part.get("type") == "tool_call_response"
            ]
        )
    out: dict[tuple[int, int], Any] = {}
    turn = -1
    for place, span in enumerate(informed):
        calls = genai.requested_calls(span.attributes)
        if not calls:
            continue
        turn += 1
        later = next((parts for parts in responses[place + 1 :] if parts), None)
        if not later:
            continue
        by_id = {str(part.get("id")): part for part in later if part.get("id")}
        if all(call_id and call_id in by_id for call_id, _, _ in calls):
            chosen = [by_id[str(call_id)] for call_id, _, _ in calls]
        elif len(later) >= len(calls):
            chosen = later[-len(calls) :]
        else:
            continue
        for index, part in enumerate(chosen):
            out[(turn, index)] = part.get("response")
    return out


def _filled(span: SpanRecord, events: list[SpanRecord]) -> SpanRecord:
    events = sorted(events, key=lambda e: (e.start_time, e.span_id))
    found: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in events:
        name = event.attributes.get(sc.TOOLPATH_LOG_EVENT)
        body = parse_json(event.attributes.get(sc.TOOLPATH_LOG_EVENT_BODY))
        for key, value in event.attributes.items():  # operation.details: the span's own attributes, as events
            if key.startswith("gen_ai."):
                found.setdefault(key, value)
        if name in _INPUT_ROLES:
            message = _message(_INPUT_ROLES[str(name)], body)
            if message is not None:
                inputs.append(message)
        elif name == sc.GEN_AI_CHOICE_EVENT and isinstance(body, dict):
            message = _message("assistant", body.get("message", body))
            if message is not None:
                if body.get("finish_reason"):
                    message["finish_reason"] = body["finish_reason"]
                outputs.append(message)
    if inputs:
        found.setdefault(sc.GEN_AI_INPUT_MESSAGES, json.dumps(inputs, ensure_ascii=False))
    if outputs:
        found.setdefault(sc.GEN_AI_OUTPUT_MESSAGES, json.dumps(outputs, ensure_ascii=False))
    missing = {key: value for key, value in found.items() if span.attributes.get(key) is None}
    return replace(span, attributes={**span.attributes, **missing}) if missing else span


def _message(role: str, body: Any) -> dict[str, Any] | None:
    """One message in the GenAI parts form from an event body: ``{"content", "tool_calls", "id"}`` as the
    message events carry it, or a google-genai ``Content`` (``{"role", "parts"}``) as ADK's carries it."""
    if isinstance(body, str):
        return {"role": role, "parts": [{"type": "text", "content": body}]}
    if not isinstance(body, dict):
        return None
    content = body.get("content")
    if isinstance(content, dict) and "parts" in content:  # ADK: the Content itself
        body = content
    parts: list[dict[str, Any]] = []
    if isinstance(body.get("parts"), list):
        for part in body["parts"]:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                parts.append({"type": "text", "content": part["text"]})
            call = part.get("function_call") or part.get("functionCall")
            if isinstance(call, dict) and call.get("name"):
                parts.append(
                    {"type": "tool_call", "id": call.get("id"), "name": call["name"], "arguments": call.get("args")}
                )
            answer = part.get("function_response") or part.get("functionResponse")
            if isinstance(answer, dict):
                parts.append({"type": "tool_call_response", "id": answer.get("id"), "response": answer.get("response")})
    elif isinstance(content, str) and role == "tool":
        parts.append({"type": "tool_call_response", "id": body.get("id"), "response": parse_json(content)})
    elif isinstance(content, str):
        parts.append({"type": "text", "content": content})
    calls = body.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name"):
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": function["name"],
                    "arguments": parse_json(function.get("arguments")),
                }
            )
    said = body.get("role")
    role = str(said) if said in ("user", "model", "assistant", "system", "tool") else role
    return {"role": "assistant" if role == "model" else role, "parts": parts} if parts else None
