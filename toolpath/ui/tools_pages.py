"""The Tools page: per tool and agent, over the calls of the turns in a time window, how many calls, how many
failed and their share, the latency's median, 95th percentile and maximum, the slowest and the latest failed call;
a chosen tool's slowest and latest failed calls; and per model, the model calls' tokens and cost."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolpath.store.tool_stats import GROUP_CAP, CallOrder, ToolStat, calls_of_tool, tool_stats
from toolpath.ui import params
from toolpath.ui.default_prices import price_table
from toolpath.ui.usage_view import usage_of_models

CALLS_LISTED = 10
"""Calls each of a chosen tool's lists shows (slowest, latest failed)."""


class ToolSort(StrEnum):
    """What the tools table can be ordered by (``sort``): the largest first, but the tool's name."""

    CALLS = "calls"
    ERRORS = "errors"
    RATE = "rate"
    """The share of calls that failed."""
    P50 = "p50"
    P95 = "p95"
    MAX = "max"
    TOOL = "tool"


def _value(row: ToolStat, key: ToolSort) -> Any:
    match key:
        case ToolSort.CALLS:
            return row.calls
        case ToolSort.ERRORS:
            return row.errors
        case ToolSort.RATE:
            return row.error_rate
        case ToolSort.P50:
            return row.p50
        case ToolSort.P95:
            return row.p95
        case ToolSort.MAX:
            return row.max
    return row.tool


def ordered(rows: list[ToolStat], key: ToolSort) -> list[ToolStat]:
    """``rows`` by ``key`` (rows without a value last), ties by tool and agent."""
    tied = sorted(rows, key=lambda r: (r.tool, r.agent or ""))
    if key is ToolSort.TOOL:
        return tied
    valued = [r for r in tied if _value(r, key) is not None]
    return sorted(valued, key=lambda r: _value(r, key), reverse=True) + [r for r in tied if _value(r, key) is None]


def tool_url(query: dict[str, str], row: ToolStat) -> str:
    """The page with ``row``'s tool (by its agent) chosen, in the same times and order."""
    chosen = {"tool": row.tool, **({"agent": row.agent} if row.agent else {})}
    return f"/tools?{urlencode({**params.query_without(query, 'tool', 'agent'), **chosen})}"


def tools_page(request: Request) -> Response:
    query = dict(request.query_params)
    window, times = params.turn_window(query)
    raw_sort = params.text(query, "sort") or ToolSort.CALLS.value
    try:
        key = ToolSort(raw_sort)
    except ValueError:
        raise params.BadRequest(f"sort={raw_sort!r}: expected one of {', '.join(k.value for k in ToolSort)}") from None
    chosen, agent = params.text(query, "tool"), params.text(query, "agent")
    if agent is not None and chosen is None:
        raise params.BadRequest("agent: give the tool it narrows (tool=...)")
    store = request.app.state.ui.store
    began = time.perf_counter()
    stats = tool_stats(store, window)
    slowest = calls_of_tool(store, window, chosen, CallOrder.SLOWEST, agent=agent, limit=CALLS_LISTED) if chosen else []
    failed = (
        calls_of_tool(store, window, chosen, CallOrder.LATEST_FAILED, agent=agent, limit=CALLS_LISTED) if chosen else []
    )
    models = sorted(usage_of_models(store, window, price_table(store)).items())
    elapsed = time.perf_counter() - began
    keep = params.query_without(query, "sort")
    return request.app.state.templates.TemplateResponse(
        request,
        "tools.html",
        {
            "rows": ordered(stats.rows, key),
            "tool_urls": {(r.tool, r.agent): tool_url(query, r) for r in stats.rows},
            "more": stats.more,
            "cap": GROUP_CAP,
            "chosen": chosen,
            "chosen_agent": agent,
            "slowest": slowest,
            "failed": failed,
            "models": models,
            "query": query,
            "times": times,
            "presets": params.preset_links("/tools", query, times.last),
            "sorts": {
                k.value: {"url": f"/tools?{urlencode({**keep, 'sort': k.value})}", "current": k is key}
                for k in ToolSort
            },
            "keep": params.query_without(query, "tool", "agent"),
            "elapsed_ms": elapsed * 1000,
        },
    )


def routes() -> list[Route]:
    return [Route("/tools", tools_page)]
