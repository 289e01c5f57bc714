"""ADK's invocations to toolpath's records and back: text of a genai ``Content``, tool calls of either
``intermediate_data`` shape, and an invocation written in ADK's JSON form."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from google.genai import types as genai_types

from toolpath.evaluation.evalsets import adk_models as schema
from toolpath.metrics.adk_args_rule import client_call_names
from toolpath.model import ExpectedInvocation, ToolCall


def content_text(content: genai_types.Content | None) -> str | None:
    """The text parts of a ``Content`` joined with newlines, as ADK does; ``None`` when there is no content."""
    if content is None:
        return None
    return "\n".join(part.text for part in content.parts or [] if part.text)


def tool_call(name: str | None, args: Any, call_id: str | None = None, result: Any = None) -> ToolCall:
    """A call as toolpath records it; absent or null arguments stay ``None`` (ADK compares them unequal to ``{}``)."""
    return ToolCall(name=name or "", args=dict(args) if args is not None else None, call_id=call_id, result=result)


def intermediate(
    data: schema.IntermediateData | schema.InvocationEvents | None,
) -> tuple[list[ToolCall], list[Any], list[tuple[str, str]]]:
    """The tool calls (each with its response, matched by call id as ADK does, and in the ``invocation_events``
    shape the author of its event as its ``agent_name``), the tool responses, and the ``(author, text)``
    intermediate responses of an invocation, from either shape of ``intermediate_data``."""
    calls: list[genai_types.FunctionCall] = []
    authors: list[str | None] = []
    responses: list[genai_types.FunctionResponse] = []
    texts: list[tuple[str, str]] = []
    if isinstance(data, schema.IntermediateData):
        calls, responses = list(data.tool_uses), list(data.tool_responses)
        authors = [None] * len(calls)
        texts = [(author, part.text) for author, parts in data.intermediate_responses for part in parts if part.text]
    elif isinstance(data, schema.InvocationEvents):
        for event in data.invocation_events:
            for part in (event.content.parts if event.content else None) or []:
                if part.function_call:
                    calls.append(part.function_call)
                    authors.append(event.author)
                elif part.function_response:
                    responses.append(part.function_response)
                elif part.text and event.author != "user":
                    texts.append((event.author, part.text))
    by_id = {response.id: response for response in responses}
    records = []
    for call, author in zip(calls, authors, strict=True):
        response = by_id.get(call.id)
        record = tool_call(call.name, call.args, call.id, response.response if response else None)
        records.append(record if author is None else record.model_copy(update={"agent_name": author}))
    dumped = [response.model_dump(mode="json", exclude_none=True) for response in responses]
    return records, dumped, texts


def expected_invocation(invocation: schema.Invocation) -> ExpectedInvocation:
    """An eval case's turn: the user's text (and the user's message itself when it is more than that text as one
    part), the expected response and the expected tool calls."""
    calls, responses, texts = intermediate(invocation.intermediate_data)
    prompt = content_text(invocation.user_content) or ""
    user_content = invocation.user_content.model_dump(mode="json", exclude_none=True)
    return ExpectedInvocation(
        invocation_id=invocation.invocation_id or None,
        prompt=prompt,
        user_content=None if user_content == content_json(prompt, "user") else user_content,
        reference=content_text(invocation.final_response),
        reference_trajectory=[call.model_copy(update={"result": None}) for call in calls],
        tool_responses=responses,
        intermediate_responses=texts,
        adk=invocation.model_dump(mode="json", exclude_none=True),
    )


def efficiency(invocation: schema.Invocation) -> dict[str, Any]:
    """ADK's informational efficiency figures of one recorded invocation, computed as ADK's
    ``_efficiency_evaluators`` compute them (``None`` is "not available", never zero)."""
    data = invocation.intermediate_data
    calls, _, _ = intermediate(data)
    events = data.invocation_events if isinstance(data, schema.InvocationEvents) else None
    model_calls = (
        None
        if events is None
        else float(sum(e.usage_metadata is not None or e.model_version is not None for e in events))
    )
    tokens = token_usage([e.usage_metadata for e in events or [] if e.usage_metadata is not None])
    duration: dict[str, float | None] = dict.fromkeys(schema.DurationDetails.model_fields)
    if invocation.duration is not None:
        model, tool = invocation.model_duration, invocation.tool_duration
        framework = None if model is None or tool is None else round(max(invocation.duration - model - tool, 0.0), 3)
        duration = {
            "total_seconds": invocation.duration,
            "model_seconds": model,
            "tool_seconds": tool,
            "framework_seconds": framework,
        }
    left_out = client_call_names()  # calls ADK sends its client, where the installed google-adk leaves them out
    return {
        "tool_call_count_v1": float(sum(call.name not in left_out for call in calls)),
        "inference_call_count_v1": model_calls,
        "token_usage_v1": tokens["total_tokens"],
        "invocation_duration_v1": duration["total_seconds"],
        "token_usage_details": tokens,
        "duration_details": duration,
    }


def token_usage(reports: Sequence[genai_types.GenerateContentResponseUsageMetadata]) -> dict[str, float | None]:
    """ADK's per-invocation token breakdown: each count summed over the model calls that reported it, ``None``
    when none did; input = prompt + tool-use prompt, output = candidates + thoughts, total = input + output."""
    totals: dict[str, float | None] = dict.fromkeys(schema.TokenUsageDetails.model_fields)

    def add(key: str, count: int | None) -> None:
        if count is not None:
            totals[key] = (totals[key] or 0) + count

    for usage in reports:
        prompt, tool = usage.prompt_token_count, usage.tool_use_prompt_token_count
        candidates, thoughts = usage.candidates_token_count, usage.thoughts_token_count
        if prompt is not None or tool is not None:
            add("input_tokens", (prompt or 0) + (tool or 0))
        if candidates is not None or thoughts is not None:
            add("output_tokens", (candidates or 0) + (thoughts or 0))
        add("prompt_tokens", prompt)
        add("cached_tokens", usage.cached_content_token_count)
        add("tool_use_tokens", tool)
        add("candidates_tokens", candidates)
        add("reasoning_tokens", thoughts)
    if totals["input_tokens"] is not None or totals["output_tokens"] is not None:
        totals["total_tokens"] = (totals["input_tokens"] or 0) + (totals["output_tokens"] or 0)
    return totals


# --- writing ADK's form --------------------------------------------------------------------------------------


def function_call_json(call: ToolCall) -> dict[str, Any]:
    """A call as a genai ``FunctionCall`` (its id when it has one; absent arguments stay absent)."""
    use: dict[str, Any] = {"name": call.name}
    if call.args is not None:
        use["args"] = call.args
    if call.call_id:
        use["id"] = call.call_id
    return use


def function_response_json(call: ToolCall) -> dict[str, Any]:
    """A call's result (or error) as the genai ``FunctionResponse`` that answers it, by the call's id."""
    body = call.result if isinstance(call.result, dict) else {"result": call.result}
    if call.error is not None:
        body = {"error": call.error}
    return {k: v for k, v in {"id": call.call_id, "name": call.name, "response": body}.items() if v}


def session_events_json(
    *,
    invocation_id: str,
    prompt: str,
    response: str | None,
    tool_calls: Iterable[ToolCall],
    intermediate_responses: Iterable[tuple[str, str]],
    agent: str,
    answered_by: str | None,
    timestamp: float,
) -> list[dict[str, Any]]:
    """One turn as the events of an ADK ``Session`` (a result's ``session_details``): the user's message, the
    intermediate responses, each call and its response as events of the agent that made it (the call's id on
    both), and the final response as the event of the agent that answered (``agent``, the turn's own, when no
    call or answer names another)."""
    events: list[dict[str, Any]] = [{"author": "user", "content": content_json(prompt, "user")}]
    events += [{"author": author, "content": content_json(text, "model")} for author, text in intermediate_responses]
    for call in tool_calls:
        author = call.agent_name or agent
        events.append(
            {"author": author, "content": {"role": "model", "parts": [{"function_call": function_call_json(call)}]}}
        )
        reply = {"function_response": function_response_json(call)}
        events.append({"author": author, "content": {"role": "user", "parts": [reply]}})
    if response is not None:
        events.append({"author": answered_by or agent, "content": content_json(response, "model")})
    return [
        {"id": f"{invocation_id}-{n}", "invocation_id": invocation_id, "timestamp": timestamp, **event}
        for n, event in enumerate(events)
    ]


def content_json(text: str | None, role: str) -> dict[str, Any] | None:
    return None if text is None else {"parts": [{"text": text}], "role": role}


def invocation_json(
    *,
    prompt: str,
    response: str | None,
    tool_calls: Iterable[ToolCall],
    intermediate_responses: Iterable[tuple[str, str]] = (),
    invocation_id: str | None = None,
    creation_timestamp: float = 0.0,
    duration: dict[str, float | None] | None = None,
) -> dict[str, Any]:
    """An ADK ``Invocation`` as JSON (``intermediate_data`` in the ``tool_uses`` shape, each tool's result as a
    ``FunctionResponse`` keyed by the call's id)."""
    calls = list(tool_calls)
    uses = [function_call_json(call) for call in calls]
    results = [function_response_json(call) for call in calls if call.result is not None or call.error is not None]
    return {
        "invocation_id": invocation_id or "",
        "user_content": content_json(prompt, "user"),
        "final_response": content_json(response, "model"),
        "intermediate_data": {
            "tool_uses": uses,
            "tool_responses": results,
            "intermediate_responses": [[author, [{"text": text}]] for author, text in intermediate_responses],
        },
        "creation_timestamp": creation_timestamp,
        "duration": (duration or {}).get("total_seconds"),
        "model_duration": (duration or {}).get("model_seconds"),
        "tool_duration": (duration or {}).get("tool_seconds"),
    }
