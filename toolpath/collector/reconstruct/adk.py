"""Google ADK's own attributes: 1.x's ``gcp.vertex.agent.*`` requests and responses (google-genai ``contents``),
and the error payload a tool failure handled by a callback returns."""

from __future__ import annotations

from typing import Any

from toolpath.collector.reconstruct.common import parse_json
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


def tool_error(result: Any) -> str | None:
    """ADK reports a tool failure handled by a callback as an ``{"error", "error_type"}`` payload (1.x leaves the
    span unmarked; 2.x marks it TOOL_ERROR): the payload says what actually went wrong."""
    if isinstance(result, dict) and result.get("error"):
        kind = result.get("error_type")
        return f"{kind}: {result['error']}" if kind else str(result["error"])
    return None


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
