"""What the pages show, computed from the store's records: a session's turns with their timelines, a run's cases
with their verdicts and call-level diffs, the online series. Plain data for the templates (which escape it)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

from toolpath.evaluation.evalsets.efficiency import spans_under
from toolpath.evaluation.recorded import calls_dropped
from toolpath.model import Invocation
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.store.usage import ModelPrice
from toolpath.tracer import semconv as sc
from toolpath.ui.usage_view import usage_of_spans

_AGENT_OPS = (sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW)
_MODEL_OPS = (sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION)
TIMELINE_WIDTH, TIMELINE_LABEL, ROW = 960, 300, 22
TIMELINE_ROWS = 200
"""Spans a turn's waterfall draws; the rest are counted under it (the trace's spans page lists them all)."""
CALLS_SHOWN = 100
"""Tool calls a turn lists on the session page; the rest are counted."""


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def breakable(name: str) -> Markup:
    """``name`` escaped, with a line-break opportunity after each ``_`` or ``.``: a narrow column header breaks
    ``tool_trajectory_avg_score`` between its words, never inside one."""
    parts = re.split(r"(?<=[_.])", name)
    return Markup("<wbr>").join(escape(part) for part in parts)


def seconds_text(seconds: float | None) -> str:
    """A duration as people read it: milliseconds under a second (``0.4 ms``), else seconds (``1.250 s``)."""
    if seconds is None:
        return "–"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def ns_text(ns: int | None) -> str:
    if not ns:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S")


def turn_view(
    store: Store,
    inv: Invocation,
    scores: Sequence[Mapping[str, Any]],
    prices: Mapping[str, ModelPrice] | None = None,
) -> dict[str, Any]:
    """One turn of a session: prompt, response, calls (and how many a cap left out), online scores, tokens and
    cost, and the timeline of its spans (or of its tool calls' own times when its spans are not stored)."""
    spans = spans_under(store, inv)
    return {
        "usage": usage_of_spans(spans or [], prices or {}),
        "inv": inv,
        "calls": [
            {"call": c, "args": pretty(c.args), "result": pretty(c.result) if c.result is not None else None}
            for c in inv.tool_calls[:CALLS_SHOWN]
        ],
        "more_calls": max(0, len(inv.tool_calls) - CALLS_SHOWN),
        "calls_dropped": calls_dropped(inv.attributes),
        "scores": scores,
        "timeline": timeline(spans) if spans else timeline_of_calls(inv),
        "has_spans": bool(spans),
    }


def span_kind(span: SpanRecord) -> str:
    attributes = span.attributes or {}
    op = attributes.get(sc.GEN_AI_OPERATION_NAME)
    oi = str(attributes.get(sc.OPENINFERENCE_SPAN_KIND, "")).upper()
    if op in _AGENT_OPS or oi in ("AGENT", "CHAIN"):
        return "agent"
    if op == sc.OP_EXECUTE_TOOL or oi == "TOOL":
        return "tool"
    if op in _MODEL_OPS or oi == "LLM" or span.name == sc.ADK_CALL_LLM:
        return "model"
    return "other"


def _tokens(attributes: Mapping[str, Any]) -> tuple[Any, Any]:
    prompt = attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, attributes.get(sc.OI_TOKEN_COUNT_PROMPT))
    completion = attributes.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS, attributes.get(sc.OI_TOKEN_COUNT_COMPLETION))
    return prompt, completion


def timeline(spans: Sequence[SpanRecord]) -> dict[str, Any]:
    """A latency waterfall of ``spans`` in start order, indented by depth."""
    parents = {s.span_id: s.parent_span_id for s in spans}

    def depth(span: SpanRecord) -> int:
        level, parent = 0, span.parent_span_id
        while parent in parents and level < 20:
            level, parent = level + 1, parents[parent]
        return level

    items = []
    for span in sorted(spans, key=lambda s: (s.start_time, depth(s))):
        attributes = span.attributes or {}
        tokens_in, tokens_out = _tokens(attributes)
        items.append(
            {
                "label": span.name,
                "kind": span_kind(span),
                "start": span.start_time,
                "end": span.end_time or span.start_time,
                "depth": depth(span),
                "error": span.status_code == 2,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "trace_id": span.trace_id,
                "span_id": span.span_id,
            }
        )
    return _layout(items)


def timeline_of_calls(inv: Invocation) -> dict[str, Any]:
    items = [
        {"label": c.name, "kind": "tool", "start": c.start_time, "end": c.end_time or c.start_time, "depth": 0,
         "error": c.error is not None, "tokens_in": None, "tokens_out": None, "trace_id": None, "span_id": None}
        for c in inv.tool_calls
        if c.start_time
    ]  # fmt: skip
    return _layout(items)


def _layout(items: list[dict[str, Any]]) -> dict[str, Any]:
    if not items:
        return {"rows": [], "height": 0, "width": TIMELINE_WIDTH, "total_ms": 0.0, "more": 0}
    first = min(i["start"] for i in items)
    last = max(i["end"] for i in items)
    more = max(0, len(items) - TIMELINE_ROWS)  # the first rows drawn, the rest counted (a page stays small)
    items = items[:TIMELINE_ROWS]
    span = max(last - first, 1)
    area = TIMELINE_WIDTH - TIMELINE_LABEL - 90
    rows = []
    for n, item in enumerate(items):
        x = TIMELINE_LABEL + (item["start"] - first) / span * area
        width = max((item["end"] - item["start"]) / span * area, 2.0)
        rows.append(
            {
                **item,
                "y": n * ROW + 4,
                "x": round(x, 1),
                "w": round(width, 1),
                "text_x": 6 + 12 * min(item["depth"], 8),
                "ms": (item["end"] - item["start"]) / 1e6,
                "offset_ms": (item["start"] - first) / 1e6,
            }
        )
    return {"rows": rows, "height": len(rows) * ROW + 8, "width": TIMELINE_WIDTH, "total_ms": span / 1e6, "more": more}


RATE_LEFT, RATE_BAR, RATE_TOP, RATE_HEIGHT = 34, 10, 6, 40
"""The pass-rate chart: the y axis's labels take the left, each bucket a bar, 0–100 % over ``RATE_HEIGHT``."""


def online_view(series: Sequence[Mapping[str, Any]], bucket_ns: int) -> list[dict[str, Any]]:
    """Per metric and agent: the buckets with their pass rates and mean scores, laid out on a chart with a
    0–100 % axis and the dates of its first and last bucket; and the overall figures (results, scored, errored,
    pass rate of the judged ones, mean of the scored ones)."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for point in series:
        grouped.setdefault((point["metric"], point["agent_name"] or "-"), []).append(point)
    out = []
    for (metric, agent), points in sorted(grouped.items()):
        judged = sum(p["passed"] + p["failed"] for p in points)
        scored = sum(p["scored"] for p in points)
        means = [p["mean"] * p["scored"] for p in points if p["mean"] is not None]
        shown = points[-48:]
        bars = []
        for n, p in enumerate(shown):
            rate = p["passed"] / (p["passed"] + p["failed"]) if p["passed"] + p["failed"] else None
            height = round((rate or 0) * RATE_HEIGHT, 1)
            bars.append(
                {**p, "rate": rate, "x": RATE_LEFT + n * RATE_BAR, "h": max(height, 1.0),
                 "y": round(RATE_TOP + RATE_HEIGHT - max(height, 1.0), 1), "when": ns_text(p["start_ns"])}
            )  # fmt: skip
        out.append(
            {
                "metric": metric,
                "agent": agent,
                "results": sum(p.get("results", p["scored"]) for p in points),
                "scored": scored,
                "errors": sum(p.get("errors", 0) for p in points),
                "pass_rate": sum(p["passed"] for p in points) / judged if judged else None,
                "mean": sum(means) / scored if means and scored else None,
                "bars": bars,
                "chart_width": RATE_LEFT + max(len(shown), 12) * RATE_BAR + 4,
                "first": ns_text(shown[0]["start_ns"]) if shown else "",
                "last": ns_text(shown[-1]["start_ns"] + bucket_ns) if shown else "",
            }
        )
    return out
