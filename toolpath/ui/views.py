"""What the pages show, computed from the store's records: a session's turns with their timelines, a run's cases
with their verdicts and call-level diffs. Plain data for the templates (which escape it)."""

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


def _span_order(spans: Sequence[SpanRecord]) -> list[tuple[SpanRecord, int]]:
    """``spans`` as a tree read depth first, each with its depth: every span right after its parent, its children
    in start order, so that a span's subtree is the run of rows after it (a span whose parent is not among them is
    a root)."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in ids and span.parent_span_id != span.span_id else None
        children.setdefault(parent, []).append(span)
    for kids in children.values():
        kids.sort(key=lambda s: (s.start_time, s.end_time or s.start_time))
    out: list[tuple[SpanRecord, int]] = []
    seen: set[str] = set()
    stack = [(span, 0) for span in reversed(children.get(None, []))]
    while stack:
        span, level = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        out.append((span, level))
        stack.extend((kid, level + 1) for kid in reversed(children.get(span.span_id, [])))
    for span in sorted(spans, key=lambda s: s.start_time):  # spans of a parent cycle: no root reaches them
        if span.span_id not in seen:
            seen.add(span.span_id)
            out.append((span, 0))
    return out


FIND_VALUE, FIND_TEXT = 120, 600
"""Find in a trace reads each span's name and attribute keys and values: each value's first ``FIND_VALUE``
characters, ``FIND_TEXT`` characters of them a span (the whole value is in the span's panel)."""


def _find_text(attributes: Mapping[str, Any]) -> str:
    parts = []
    for key, value in attributes.items():
        text = value if isinstance(value, str) else compact(value)
        parts.append(f"{key}={text[:FIND_VALUE]}")
    return " ".join(parts)[:FIND_TEXT]


def _count(value: Any) -> int | float | str | None:
    """A token count as the page shows it: a number, else its text (never an object the page must parse)."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    return str(value)


def timeline(spans: Sequence[SpanRecord]) -> dict[str, Any]:
    """A latency waterfall of every one of ``spans``: depth first, each subtree after its span."""
    ordered = _span_order(spans)
    items = []
    for span, level in ordered:
        attributes = span.attributes or {}
        tokens_in, tokens_out = _tokens(attributes)
        items.append(
            {
                "label": span.name,
                "kind": span_kind(span),
                "start": span.start_time,
                "end": span.end_time or span.start_time,
                "depth": level,
                "error": span.status_code == 2,
                "tokens_in": _count(tokens_in),
                "tokens_out": _count(tokens_out),
                "trace_id": span.trace_id,
                "span_id": span.span_id,
                "find": _find_text(attributes),
            }
        )
    depths = [level for _, level in ordered]
    open_rows: list[int] = []  # each row's descendants: the rows after it up to the next row no deeper than it
    for n, level in enumerate(depths):
        while open_rows and depths[open_rows[-1]] >= level:
            row = open_rows.pop()
            items[row]["under"] = n - row - 1
        open_rows.append(n)
    for row in open_rows:
        items[row]["under"] = len(items) - row - 1
    return _layout(items)


def timeline_of_calls(inv: Invocation) -> dict[str, Any]:
    items = [
        {"label": c.name, "kind": "tool", "start": c.start_time, "end": c.end_time or c.start_time, "depth": 0,
         "error": c.error is not None, "tokens_in": None, "tokens_out": None, "trace_id": None, "span_id": None,
         "find": "", "under": 0}
        for c in inv.tool_calls
        if c.start_time
    ]  # fmt: skip
    return _layout(items)


BAR_SCALE = 1000
"""A bar's start and width, in thousandths of the turn's time (the bar's SVG stretches to the row's width)."""


def _layout(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Every row of a waterfall, as the page's script draws them: a list of short lists (label, kind, depth,
    descendants, bar start, bar width, ms, error, span id, tokens in, tokens out, offset ms, text to find, trace id
    when it is not the waterfall's)."""
    if not items:
        return {"rows": [], "data": [], "trace": None, "total_ms": 0.0, "errors": 0}
    first = min(i["start"] for i in items)
    last = max(i["end"] for i in items)
    span = max(last - first, 1)
    trace = next((i["trace_id"] for i in items if i["trace_id"]), None)
    data = []
    for item in items:
        x = (item["start"] - first) / span * BAR_SCALE
        width = (item["end"] - item["start"]) / span * BAR_SCALE
        data.append(
            [item["label"], item["kind"], item["depth"], item["under"], round(x, 1), round(max(width, 0.0), 1),
             round((item["end"] - item["start"]) / 1e6, 2), 1 if item["error"] else 0, item["span_id"] or "",
             item["tokens_in"], item["tokens_out"], round((item["start"] - first) / 1e6, 2), item["find"],
             item["trace_id"] if item["trace_id"] and item["trace_id"] != trace else ""]
        )  # fmt: skip
    return {"rows": items, "data": data, "trace": trace, "total_ms": span / 1e6,
            "errors": sum(1 for i in items if i["error"])}  # fmt: skip
