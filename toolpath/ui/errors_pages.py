"""The Errors page: what failed in a time window, grouped by error type × tool × agent (failed tool calls, and
turns whose agent raised), the most frequent first, each with its count, first and last time (UTC), the latest
message and links to the latest failure's span and turn and to the sessions that had it."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolpath.store.error_groups import GROUP_CAP, ErrorGroup, error_groups
from toolpath.tracer import semconv as sc
from toolpath.ui import params

TOOL_NAME_KEYS = (sc.GEN_AI_TOOL_NAME, sc.OI_TOOL_NAME)
"""The span attributes that name a tool span's tool (GenAI's, OpenInference's)."""


def group_view(group: ErrorGroup, query: dict[str, str]) -> dict[str, Any]:
    """One group as the page shows it: its fields, and the links to its latest span, its latest turn and the
    sessions with failures of its kind in the same times (the sessions list's filters: the tool's errors, or
    failed turns)."""
    turn = f"/turn/{group.invocation_id}"
    sessions: dict[str, str] = {"tool": group.tool, "tool_error": "1"} if group.tool else {"failures": "1"}
    if group.agent:
        sessions["agent"] = group.agent
    sessions.update({k: v for k, v in query.items() if k in ("last", "since", "until", "hide_eval") and v})
    return {
        "group": group,
        "span_url": f"{turn}?{urlencode({'span': group.span_id})}" if group.span_id else None,
        "turn_url": turn,
        "sessions_url": f"/sessions?{urlencode(sessions)}",
    }


def errors_page(request: Request) -> Response:
    query = dict(request.query_params)
    window, times = params.turn_window(query)
    began = time.perf_counter()
    found = error_groups(request.app.state.ui.store, window, tool_name_keys=TOOL_NAME_KEYS)
    elapsed = time.perf_counter() - began
    return request.app.state.templates.TemplateResponse(
        request,
        "errors.html",
        {
            "groups": [group_view(g, query) for g in found.groups],
            "more": found.more,
            "cap": GROUP_CAP,
            "failures": sum(g.count for g in found.groups),
            "query": query,
            "times": times,
            "presets": params.preset_links("/errors", query, times.last),
            "elapsed_ms": elapsed * 1000,
        },
    )


def routes() -> list[Route]:
    return [Route("/errors", errors_page)]
