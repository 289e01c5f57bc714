"""A stored run as its page shows it: per metric its summary and distribution, per case its status, its verdicts,
the agent's error when it raised, its turns side by side with the call-level diff, and links to the sessions and
traces each case came from (dataset runs, eval-set runs and replays alike). A case's link to a turn names the case
(``run`` and ``case``, its position), so that the turn's page shows what the case expected of it and links back.

One meaning of *failed* everywhere: a case fails when its agent raised (a crash fails its case, whatever its
scores), when an eval-set case's status is FAILED, or when one of its scores fails its metric's pass mark. A
replayed turn is also *changed* or *same* against its recording: that is a second column, never "failed"."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode

from starlette.exceptions import HTTPException

from toolpath.evaluation.catalog import describe_rule
from toolpath.evaluation.verdicts import (
    ReplayStatus,
    RunKind,
    Verdict,
    row_status,
    run_metric_names,
    run_rules,
    verdicts,
)
from toolpath.metrics.diff import argument_diff, trajectory_diff
from toolpath.model import EvalStatus, ToolCall
from toolpath.trajectory import parse_trajectory
from toolpath.ui import params
from toolpath.ui.views import compact

CRASHED = Verdict.CRASH


class CaseSource(NamedTuple):
    """A case of a stored run: the run and the case's position in it."""

    run_id: str
    position: int

    def href(self) -> str:
        """The case on its run's page."""
        return f"/runs/{quote(self.run_id, safe='')}#case-{self.position}"


def source_of(result: Mapping[str, Any]) -> CaseSource | None:
    """The case a stored result is (``None`` for a result that is not one of a stored run's)."""
    run_id, position = result.get("run_id"), result.get("position")
    if run_id is None or not isinstance(position, int):
        return None
    return CaseSource(str(run_id), position)


def case_source(query: Mapping[str, str]) -> CaseSource | None:
    """The case a page was opened from (``run=<run id>&case=<position>``), or ``None``."""
    run_id, case = params.text(query, "run"), params.text(query, "case")
    if run_id is None and case is None:
        return None
    if run_id is None or case is None:
        raise params.BadRequest("run and case: a case is named by its run and its position in it (run=...&case=...)")
    return CaseSource(run_id, params.integer(query, "case", 0, low=0, high=2**31 - 1))


def opened_from(store: Any, query: Mapping[str, str]) -> dict[str, Any] | None:
    """:func:`case_expectations` of the case a page was opened from (:func:`case_source`), or ``None``; a run or
    case the store does not hold is a 404."""
    source = case_source(query)
    if source is None:
        return None
    run = store.get_eval_run(source.run_id)
    if run is None:
        raise HTTPException(404, f"run={source.run_id!r}: no such run in the store")
    found = case_expectations(run, source.position)
    if found is None:
        raise HTTPException(404, f"case={source.position}: run {source.run_id!r} has no case at that position")
    return found


def turn_link(invocation_id: str, source: CaseSource | None = None) -> str:
    """The page of one stored turn (it opens its session at that turn); from ``source``, a case that ran or
    replayed it, that page shows what the case expected and links back to it."""
    link = f"/turn/{quote(invocation_id, safe='')}"
    return f"{link}?{urlencode({'run': source.run_id, 'case': source.position})}" if source is not None else link


def case_expectations(run: Mapping[str, Any], position: int) -> dict[str, Any] | None:
    """What the case at ``position`` of ``run`` expected of each stored turn it ran, replayed or recorded: the
    run, the case and where it is, and per invocation id its turn side by side (:func:`side_by_side`: expected
    and actual calls, marked by the call-level diff); ``None`` when the run has no case there."""
    result = next((r for r in run.get("results", []) if r.get("position") == position), None)
    if result is None:
        return None
    source = CaseSource(str(run["run_id"]), position)
    row = result.get("row") or {}
    turns = turns_of(row)
    by_turn: dict[str, dict[str, Any]] = {}
    for turn in turns:
        shown = side_by_side(turn, source)
        for key in ("invocation_id", "recorded_invocation_id"):
            if turn.get(key):
                by_turn.setdefault(str(turn[key]), shown)
    if not by_turn and len(turns) == 1 and result.get("invocation_id"):  # a one-turn row linked by its result
        by_turn[str(result["invocation_id"])] = side_by_side(turns[0], source)
    return {
        "run_id": source.run_id,
        "kind": str(run.get("kind")),
        "case_id": str(result.get("case_id") or position),
        "href": source.href(),
        "turns": by_turn,
    }


def session_link(session_id: str) -> str:
    return f"/session?{urlencode({'id': session_id})}"


def case_error(kind: str, result: Mapping[str, Any]) -> str | None:
    """Why the case's agent raised (its first error), or ``None``: the case's own, else its first turn's."""
    row = result.get("row") or {}
    if row.get("error"):
        return str(row["error"])
    for turn in turns_of(row):
        if turn.get("error"):
            return str(turn["error"])
    return None


def case_failed(kind: str, result: Mapping[str, Any], cells: Mapping[str, str]) -> bool:
    """The one meaning of a failed case (see the module docstring)."""
    if case_error(kind, result) is not None or result.get("status") == EvalStatus.FAILED:
        return True
    return any(verdict == Verdict.FAIL for verdict in cells.values())


def case_status(kind: str, result: Mapping[str, Any], cells: Mapping[str, str]) -> tuple[str, str]:
    """(css class, label) of a case: ``crashed`` when its agent raised, else as the CLI and report say."""
    if case_error(kind, result) is not None:
        return Verdict.FAIL, "crashed"
    css, label = row_status(kind, result, cells)
    if kind == RunKind.REPLAY:
        return css, label
    return (Verdict.FAIL, "failed") if case_failed(kind, result, cells) else (css, label)


def failed_count(kind: str, run: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``results`` failed, by :func:`case_failed` and the run's own pass rules."""
    names = run_metric_names(run)
    rules = run_rules(run, names)
    return sum(case_failed(kind, r, verdicts(r, names, rules)) for r in results)


def case_links(kind: str, result: Mapping[str, Any]) -> list[dict[str, str]]:
    """Where a case came from: its traced turns (each opens its session at that turn), else its sessions."""
    row = result.get("row") or {}
    source = source_of(result)
    links: list[dict[str, str]] = []
    if kind == RunKind.REPLAY:
        if row.get("invocation_id"):
            links.append({"label": "replayed turn", "href": turn_link(str(row["invocation_id"]), source)})
        elif row.get("session_id"):
            links.append({"label": "replayed session", "href": session_link(str(row["session_id"]))})
        recorded = row.get("recorded_invocation_id") or result.get("invocation_id")
        if recorded:
            links.append({"label": "recorded turn", "href": turn_link(str(recorded), source)})
        return links
    turns = [t for t in turns_of(row) if t.get("invocation_id")]
    if turns:
        for n, turn in enumerate(turns, start=1):
            label = "trace" if len(turns) == 1 else f"turn {n}"
            links.append({"label": label, "href": turn_link(str(turn["invocation_id"]), source)})
        return links
    if result.get("invocation_id"):
        return [{"label": "trace", "href": turn_link(str(result["invocation_id"]), source)}]
    listed = row.get("sessions")
    sessions: list[Any] = listed if isinstance(listed, list) else []
    return [{"label": "session" if len(sessions) == 1 else f"session {n}", "href": session_link(str(s))}
            for n, s in enumerate(sessions, start=1)]  # fmt: skip


def run_view(run: Mapping[str, Any]) -> dict[str, Any]:
    """A stored run: per metric its summary and distribution, per case its verdicts and turns side by side."""
    kind = str(run["kind"])
    names = run_metric_names(run)
    rules = run_rules(run, names)
    results = run.get("results", [])
    summary = run.get("summary") or {}
    metrics: list[dict[str, Any]] = []
    cases: list[dict[str, Any]] = []
    for result in results:
        cells = verdicts(result, names, rules)
        error = case_error(kind, result)
        if error is not None:  # a crash: a passing score of it measures nothing; a failing one stays a fail
            cells = {n: v if v == Verdict.FAIL else CRASHED for n, v in cells.items()}
        css, label = case_status(kind, result, cells)
        turns = [side_by_side(turn, source_of(result)) for turn in turns_of(result.get("row") or {})]
        hover = "\n\n".join(t["hover"] for t in turns if t["hover"])
        cases.append(
            {
                "case_id": str(result.get("case_id") or result.get("position")),
                "position": result.get("position"),
                "status": css,
                "label": label,
                "failed": case_failed(kind, result, cells),
                "error": error,
                "links": case_links(kind, result),
                "cells": [
                    {"metric": n, "score": (result.get("scores") or {}).get(n) if cells[n] != CRASHED else None,
                     "verdict": cells[n], "hover": hover if cells[n] == Verdict.FAIL else "",
                     "note": "the agent raised: not scored" if cells[n] == CRASHED else ""}
                    for n in names
                ],
                "turns": turns,
            }
        )  # fmt: skip
    for name in names:
        column = [c["cells"][names.index(name)] for c in cases]
        known = [float(c["score"]) for c in column if isinstance(c["score"], int | float)]
        verdict = [c["verdict"] for c in column]
        metrics.append(
            {
                "name": name,
                "mean": summary.get(f"{name}/mean", statistics.fmean(known) if known else None),
                "std": summary.get(f"{name}/std"),
                "scored": len(known),
                "rows": len(results),
                "passed": verdict.count(Verdict.PASS),
                "failed": verdict.count(Verdict.FAIL),
                "crashed": verdict.count(CRASHED),
                "mark": describe_rule(rules[name]),
                "bins": distribution(known),
            }
        )
    return {
        "run": run,
        "metrics": metrics,
        "cases": cases,
        "names": names,
        "failed": sum(c["failed"] for c in cases),
        "crashed": sum(c["error"] is not None for c in cases),
        "changed": sum(c["status"] == ReplayStatus.CHANGED for c in cases) if kind == RunKind.REPLAY else None,
    }


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


def turns_of(row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if isinstance(row.get("turns"), list):
        return [turn for run in row["turns"] for turn in (run if isinstance(run, list) else [run])]
    return [row]


def calls_of(value: Any) -> list[ToolCall]:
    try:
        return list(parse_trajectory(value)) if value is not None else []
    except Exception:  # a bad cell shows no calls; the metrics already said why
        return []


def side_by_side(turn: Mapping[str, Any], source: CaseSource | None = None) -> dict[str, Any]:
    """Expected (reference) and actual (predicted) calls of one turn, each marked by the call-level diff
    (added, removed, moved, arguments changed — with the changed keys), the agent's error if the turn raised, a
    link to the turn's trace (naming ``source``, the case the turn is of), and a plain-text summary to hover."""
    reference, predicted = calls_of(turn.get("reference_trajectory")), calls_of(turn.get("predicted_trajectory"))
    changes = trajectory_diff(reference, predicted)
    marks: dict[tuple[str, int], str] = {}
    partner: dict[int, ToolCall] = {}
    for change in changes:
        kind = change.kind.mark
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
    error = str(turn["error"]) if turn.get("error") else None
    if error is not None:
        lines.append(f"the agent raised: {error}")
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
        "error": error,
        "trace": turn_link(str(turn["invocation_id"]), source) if turn.get("invocation_id") else None,
        "hover": hover,
    }


def _plain(calls: Sequence[ToolCall]) -> str:
    return ", ".join(f"{c.name}({compact(c.args)})" for c in calls) or "none"
