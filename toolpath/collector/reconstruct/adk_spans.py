"""Google ADK's own attributes: 1.x's ``gcp.vertex.agent.*`` requests and responses (google-genai ``contents``),
and the error payload a tool failure handled by a callback returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.collector.reconstruct.span_values import parse_json
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc


def contents_text(contents: Any, role: str | None) -> str | None:
    """Text of the last content (with ``role``) of a google-genai ``contents`` list."""
    if not isinstance(contents, list):
        return None
    for content in reversed(contents):
        if not isinstance(content, dict) or (role is not None and content.get("role") != role):
            continue
        texts = [
            p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        if texts:
            return "".join(texts)
    return None


NOT_SPECIFIED = "<not specified>"
"""What ADK records as a tool call's id and response when it has none (e.g. a tool that raised)."""


def tool_call_id(call_id: str | None) -> str | None:
    return None if call_id == NOT_SPECIFIED else call_id


def tool_result(result: Any) -> Any:
    """A tool's return value as the tool returned it. ADK wraps a value that is not a dict as ``{"result": value}``
    (and records ``{"result": "<not specified>"}`` when there was no response); other frameworks record the bare
    value, so the wrapper comes off: a one-key ``{"result": x}`` whose ``x`` is not an object is stored as ``x``
    (a tool that itself returns exactly such a dict is stored the same way)."""
    if isinstance(result, dict) and len(result) == 1 and "result" in result and not isinstance(result["result"], dict):
        inner = result["result"]
        return None if inner == NOT_SPECIFIED else inner
    return None if result == NOT_SPECIFIED else result


def is_invocation_root(span: SpanRecord) -> bool:
    """ADK's legacy span format (1.x, and 2.x with ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``): one ``invocation``
    span per user turn, with an ``invoke_agent`` span per agent that took part (an agent transfer adds one)."""
    return span.name == "invocation" and span.scope == sc.ADK_SCOPE


def session_id(spans: Sequence[SpanRecord]) -> str | None:
    """The conversation id of the first agent span below a legacy ``invocation`` root (which has no attributes)."""
    for span in spans:
        if span.attributes.get(sc.GEN_AI_CONVERSATION_ID):
            return str(span.attributes[sc.GEN_AI_CONVERSATION_ID])
    return None


def tool_error(result: Any) -> str | None:
    """ADK reports a tool failure handled by a callback as an ``{"error", "error_type"}`` payload (1.x leaves the
    span unmarked; 2.x marks it TOOL_ERROR): the payload says what actually went wrong."""
    if isinstance(result, dict) and result.get("error"):
        kind = result.get("error_type")
        return f"{kind}: {result['error']}" if kind else str(result["error"])
    return None


def requested_calls(attributes: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    """ADK 1.x: the ``function_call`` parts (id, name, args) of a ``call_llm`` span's response, in order."""
    if sc.ADK_LLM_RESPONSE not in attributes:
        return []
    payload = parse_json(attributes[sc.ADK_LLM_RESPONSE])
    content = payload.get("content") if isinstance(payload, dict) else None
    asked: list[tuple[str | None, str, Any]] = []
    for part in (content.get("parts") or ()) if isinstance(content, dict) else ():
        call = part.get("function_call") if isinstance(part, dict) else None
        if isinstance(call, dict) and call.get("name"):
            asked.append((str(call["id"]) if call.get("id") else None, str(call["name"]), call.get("args")))
    return asked


def prompt_from_requests(descendants: list[SpanRecord]) -> str | None:
    """ADK 1.x: the first ``call_llm``'s request holds the conversation; the user's text is its last user turn."""
    requests = (parse_json(s.attributes.get(sc.ADK_LLM_REQUEST)) for s in descendants)
    request = next((r for r in requests if isinstance(r, dict) and r.get("contents")), None)
    return contents_text(request.get("contents"), "user") if isinstance(request, dict) else None


def response_from_responses(descendants: list[SpanRecord]) -> str | None:
    """ADK 1.x: the text of the last ``call_llm`` response that has text."""
    for span in reversed(descendants):
        payload = parse_json(span.attributes.get(sc.ADK_LLM_RESPONSE))
        if isinstance(payload, dict) and payload.get("content"):
            text = contents_text([payload["content"]], None)
            if text is not None:
                return text
    return None
