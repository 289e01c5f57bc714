"""What the pages show, computed from the store's records: a session's turns with their timelines, a run's cases
with their verdicts and call-level diffs, the online series. Plain data for the templates (which escape it)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from toolpath.evaluation.catalog import describe_rule
from toolpath.evaluation.evalsets.efficiency import spans_under
from toolpath.evaluation.verdicts import row_status, run_metric_names, run_rules, verdicts
from toolpath.metrics.diff import argument_diff, trajectory_diff
from toolpath.model import Invocation, ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc
from toolpath.trajectory import parse_trajectory

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


def ns_text(ns: int | None) -> str:
    if not ns:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S")


def turn_view(store: Store, inv: Invocation, scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One turn of a session: prompt, response, calls, online scores and the timeline of its spans (or of its
    tool calls' own times when its spans are not stored)."""
    spans = spans_under(store, inv)
    return {
        "inv": inv,
        "calls": [
            {"call": c, "args": pretty(c.args), "result": pretty(c.result) if c.result is not None else None}
            for c in inv.tool_calls[:CALLS_SHOWN]
        ],
        "more_calls": max(0, len(inv.tool_calls) - CALLS_SHOWN),
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
            }
        )
    return _layout(items)


def timeline_of_calls(inv: Invocation) -> dict[str, Any]:
    items = [
        {"label": c.name, "kind": "tool", "start": c.start_time, "end": c.end_time or c.start_time, "depth": 0,
         "error": c.error is not None, "tokens_in": None, "tokens_out": None}
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


def run_view(run: Mapping[str, Any]) -> dict[str, Any]:
    """A stored run: per metric its summary and distribution, per case its verdicts and turns side by side."""
    names = run_metric_names(run)
    rules = run_rules(run, names)
    results = run.get("results", [])
    summary = run.get("summary") or {}
    metrics: list[dict[str, Any]] = []
    cases: list[dict[str, Any]] = []
    for result in results:
        cells = verdicts(result, names, rules)
        css, label = row_status(run["kind"], result, cells)
        turns = [side_by_side(turn) for turn in _turns(result.get("row") or {})]
        hover = "\n\n".join(t["hover"] for t in turns if t["hover"])
        cases.append(
            {
                "case_id": str(result.get("case_id") or result.get("position")),
                "status": css,
                "label": label,
                "error": (result.get("row") or {}).get("error"),  # its agent raised: the case failed unscored
                "cells": [
                    {"metric": n, "score": (result.get("scores") or {}).get(n), "verdict": cells[n],
                     "hover": hover if cells[n] == "fail" else ""}
                    for n in names
                ],
                "turns": turns,
            }
        )  # fmt: skip
    for name in names:
        known = [float(s) for r in results if isinstance(s := (r.get("scores") or {}).get(name), int | float)]
        column = [c["cells"][names.index(name)]["verdict"] for c in cases]
        metrics.append(
            {
                "name": name,
                "mean": summary.get(f"{name}/mean", statistics.fmean(known) if known else None),
                "std": summary.get(f"{name}/std"),
                "scored": len(known),
                "rows": len(results),
                "passed": column.count("pass"),
                "failed": column.count("fail"),
                "mark": describe_rule(rules[name]),
                "bins": distribution(known),
            }
        )
    return {"run": run, "metrics": metrics, "cases": cases, "names": names}


def distribution(values: Sequence[float], bins: int = 10) -> list[dict[str, Any]]:
    """Bars of a histogram of ``values`` over [min(0, low), max(1, high)], laid out for a 200×40 SVG."""
    if not values:
        return []
    low, high = min(0.0, *values), max(1.0, *values)
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, math.floor((v - low) / width))] += 1
    top = max(counts)
    return [
        {"x": i * 20 + 1, "h": round(c / top * 36, 1), "y": round(38 - c / top * 36, 1), "count": c,
         "range": f"{low + i * width:.3g}–{low + (i + 1) * width:.3g}"}
        for i, c in enumerate(counts)
    ]  # fmt: skip


def _turns(row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if isinstance(row.get("turns"), list):
        return [turn for run in row["turns"] for turn in (run if isinstance(run, list) else [run])]
    return [row]


def _calls(value: Any) -> list[ToolCall]:
    try:
        return list(parse_trajectory(value)) if value is not None else []
    except Exception:  # a bad cell shows no calls; the metrics already said why
        return []


def side_by_side(turn: Mapping[str, Any]) -> dict[str, Any]:
    """Expected (reference) and actual (predicted) calls of one turn, each marked by the call-level diff
    (added, removed, moved, arguments changed — with the changed keys), and a plain-text summary to hover."""
    reference, predicted = _calls(turn.get("reference_trajectory")), _calls(turn.get("predicted_trajectory"))
    changes = trajectory_diff(reference, predicted)
    marks: dict[tuple[str, int], str] = {}
    partner: dict[int, ToolCall] = {}
    for change in changes:
        kind = {"reordered": "moved", "args_changed": "args"}.get(change.kind, change.kind)
        if change.reference_index is not None:
            marks["ref", change.reference_index] = kind
        if change.predicted_index is not None:
            marks["pred", change.predicted_index] = kind
            if change.reference_index is not None:
                partner[change.predicted_index] = reference[change.reference_index]

    def shown(call: ToolCall, mark: str, against: ToolCall | None) -> dict[str, Any]:
        diff = argument_diff(against.args, call.args) if against is not None else {}
        changed = {*diff.get("changed", []), *diff.get("added", [])}
        args = [{"key": k, "value": compact(v), "changed": k in changed} for k, v in (call.args or {}).items()]
        return {"name": call.name, "mark": mark, "args": args, "error": call.error}

    expected = [shown(c, marks.get(("ref", i), ""), None) for i, c in enumerate(reference)]
    actual = [shown(c, marks.get(("pred", i), ""), partner.get(i)) for i, c in enumerate(predicted)]
    lines = [change.describe() for change in changes]
    if turn.get("reference") is not None and turn.get("reference") != turn.get("response"):
        lines.append(f"expected response: {turn.get('reference')}\nactual response: {turn.get('response')}")
    hover = ""
    if lines:
        hover = (
            f"{turn.get('prompt') or 'turn'}\nexpected: {_plain(reference)}\nactual: {_plain(predicted)}\n"
            + "\n".join(lines)
        )
    return {
        "prompt": turn.get("prompt"),
        "reference": turn.get("reference"),
        "response": turn.get("response"),
        "expected": expected,
        "actual": actual,
        "changes": [change.describe() for change in changes],
        "hover": hover,
    }


def _plain(calls: Sequence[ToolCall]) -> str:
    return ", ".join(f"{c.name}({compact(c.args)})" for c in calls) or "none"


def online_view(series: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per metric and agent: the buckets with their pass rates and mean scores, and the overall figures."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for point in series:
        grouped.setdefault((point["metric"], point["agent_name"] or "-"), []).append(point)
    out = []
    for (metric, agent), points in sorted(grouped.items()):
        judged = sum(p["passed"] + p["failed"] for p in points)
        scored = sum(p["scored"] for p in points)
        means = [p["mean"] * p["scored"] for p in points if p["mean"] is not None]
        bars = []
        for n, p in enumerate(points[-48:]):
            rate = p["passed"] / (p["passed"] + p["failed"]) if p["passed"] + p["failed"] else None
            bars.append(
                {**p, "rate": rate, "x": n * 10, "h": round((rate or 0) * 36, 1), "y": round(38 - (rate or 0) * 36, 1),
                 "when": ns_text(p["start_ns"])}
            )  # fmt: skip
        out.append(
            {
                "metric": metric,
                "agent": agent,
                "scored": scored,
                "pass_rate": sum(p["passed"] for p in points) / judged if judged else None,
                "mean": sum(means) / scored if means and scored else None,
                "bars": bars,
            }
        )
    return out
