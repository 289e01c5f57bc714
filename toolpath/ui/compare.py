"""Two stored runs side by side, case by case (two evaluations of one dataset, two eval-set runs, or a run and a
replay): each case's status in both (what started or stopped failing), each metric's score in both and the change
read by the metric's direction (better or worse; a case differs by a score only on a metric with a pass mark, not
by a latency that varies from run to run), and the calls of one against the other (the call-level diff of
``toolpath replay``). Cases are matched by id (the n-th row of an id with the n-th); a case of one run only is
listed as such.

A is the baseline and B is set against it (fixed: failed in A, passes in B; a score better or worse in B than in
A): the older of the two runs, whatever order the two were picked in, unless ``base=<run id>`` names the other
one; the page says which and how it was chosen, and links to the comparison the other way round."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolpath.evaluation.verdicts import RunKind, run_metric_names, run_rules
from toolpath.metrics.diff import trajectory_diff
from toolpath.ui import params
from toolpath.ui.run_cases import calls_of, run_view, turns_of

EPSILON = 1e-9


def _keyed(cases: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], Mapping[str, Any]]:
    seen: dict[str, int] = {}
    out = {}
    for case in cases:
        n = seen.get(case["case_id"], 0)
        seen[case["case_id"]] = n + 1
        out[case["case_id"], n] = case
    return out


def direction(before: Any, after: Any, lower_is_better: bool) -> str:
    """``better``, ``worse``, ``same`` or ``""`` (a score missing on either side)."""
    if not isinstance(before, int | float) or not isinstance(after, int | float):
        return ""
    if abs(after - before) <= EPSILON:
        return "same"
    return "better" if (after < before) == lower_is_better else "worse"


def _actual_calls(result: Mapping[str, Any]) -> list[Any]:
    return [call for turn in turns_of(result.get("row") or {}) for call in calls_of(turn.get("predicted_trajectory"))]


def _as_cases_of(replay: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """``replay`` with each replayed turn named as the case of ``run`` whose turn it replayed (a replay of the
    sessions a run traced compares with that run case by case)."""
    by_turn = {r["invocation_id"]: r.get("case_id") for r in run["results"] if r.get("invocation_id")}
    results = []
    for result in replay["results"]:
        recorded = (result.get("row") or {}).get("recorded_invocation_id") or result.get("invocation_id")
        case_id = by_turn.get(recorded)
        results.append({**result, "case_id": case_id} if case_id is not None else result)
    return {**replay, "results": results}


def compare_view(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    if second["kind"] == RunKind.REPLAY and first["kind"] != RunKind.REPLAY:
        second = _as_cases_of(second, first)
    elif first["kind"] == RunKind.REPLAY and second["kind"] != RunKind.REPLAY:
        first = _as_cases_of(first, second)
    a, b = run_view(first), run_view(second)
    names = [n for n in a["names"] if n in b["names"]] + [n for n in b["names"] if n not in a["names"]]
    rules = {**run_rules(first, run_metric_names(first)), **run_rules(second, run_metric_names(second))}
    results_a = _keyed([{**r, "case_id": str(r.get("case_id") or r.get("position"))} for r in first["results"]])
    results_b = _keyed([{**r, "case_id": str(r.get("case_id") or r.get("position"))} for r in second["results"]])
    cases_a, cases_b = _keyed(a["cases"]), _keyed(b["cases"])
    rows = []
    for key in [*cases_a, *(k for k in cases_b if k not in cases_a)]:
        left, right = cases_a.get(key), cases_b.get(key)
        scores = []
        for name in names:
            before = _score(left, name)
            after = _score(right, name)
            lower = bool(rules.get(name, {}).get("lower_is_better"))
            scores.append({"metric": name, "a": before, "b": after, "change": direction(before, after, lower),
                           "delta": after - before if direction(before, after, lower) else None,
                           "marked": rules.get(name, {}).get("threshold") is not None})  # fmt: skip
        calls: list[str] = []
        if key in results_a and key in results_b:
            diff = trajectory_diff(_actual_calls(results_a[key]), _actual_calls(results_b[key]))
            calls = [change.describe() for change in diff]
        status_a = left["label"] if left else None
        status_b = right["label"] if right else None
        rows.append(
            {
                "case_id": key[0],
                "a": left,
                "b": right,
                "status_a": status_a,
                "status_b": status_b,
                "flip": "fixed" if left and right and left["failed"] and not right["failed"]
                else "broken" if left and right and not left["failed"] and right["failed"] else "",
                "scores": scores,
                "calls": calls,
                "changed": left is None or right is None or left["failed"] != right["failed"] or bool(calls)
                or any(s["change"] in ("better", "worse") and s["marked"] for s in scores),
            }
        )  # fmt: skip
    means = []
    for name in names:
        before = next((m["mean"] for m in a["metrics"] if m["name"] == name), None)
        after = next((m["mean"] for m in b["metrics"] if m["name"] == name), None)
        lower = bool(rules.get(name, {}).get("lower_is_better"))
        means.append({"metric": name, "a": before, "b": after, "change": direction(before, after, lower)})
    return {
        "first": first,
        "second": second,
        "rows": rows,
        "names": names,
        "means": means,
        "failed": (a["failed"], b["failed"]),
        "fixed": sum(r["flip"] == "fixed" for r in rows),
        "broken": sum(r["flip"] == "broken" for r in rows),
        "only_a": sum(r["b"] is None for r in rows),
        "only_b": sum(r["a"] is None for r in rows),
        "changed": sum(r["changed"] for r in rows),
    }


def _score(case: Mapping[str, Any] | None, name: str) -> Any:
    if case is None:
        return None
    return next((cell["score"] for cell in case["cells"] if cell["metric"] == name), None)


def baseline_first(
    runs: Sequence[Mapping[str, Any]], base: str | None
) -> tuple[Mapping[str, Any], Mapping[str, Any], bool]:
    """The two ``runs`` as (baseline, compared with it), and whether ``base`` chose the baseline: the run whose id
    is ``base``, else the one that started first (the order given when both started at once). A ``base`` that
    names neither run is a :class:`~toolpath.ui.params.BadRequest`."""
    first, second = runs
    if base is not None:
        if base not in (first["run_id"], second["run_id"]):
            raise params.BadRequest(
                f"base={base!r}: the baseline must be one of the two runs compared "
                f"({first['run_id']!r} or {second['run_id']!r})"
            )
        return (first, second, True) if first["run_id"] == base else (second, first, True)
    if _started(second) < _started(first):
        return second, first, False
    return first, second, False


def _started(run: Mapping[str, Any]) -> datetime:
    return datetime.fromisoformat(str(run["started_at"]))


def compare_url(baseline: str, other: str) -> str:
    """The comparison of ``other`` against ``baseline`` (``baseline`` as A, whichever started first)."""
    return f"/compare?{urlencode([('run', baseline), ('run', other), ('base', baseline)])}"


async def compare_page(request: Request) -> Response:
    picked = [v for v in request.query_params.getlist("run") if v.strip()]
    if len(picked) != 2:
        raise params.BadRequest(f"run: pick two runs to compare (got {len(picked)})")
    base = params.text(dict(request.query_params), "base")
    store = request.app.state.ui.store
    runs = []
    for run_id in picked:
        found = await run_in_threadpool(store.get_eval_run, run_id)
        if found is None:
            raise HTTPException(404, f"no run {run_id!r} in the store")
        runs.append(found)
    baseline, other, chosen = baseline_first(runs, base)
    context = {
        **compare_view(baseline, other),
        "chosen": chosen,
        "older": _started(baseline) <= _started(other),
        "swap_url": compare_url(other["run_id"], baseline["run_id"]),
    }
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "compare.html", context)


def routes() -> list[Route]:
    return [Route("/compare", compare_page)]
