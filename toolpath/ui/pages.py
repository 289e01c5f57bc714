"""The UI's pages: sessions, a session's turns, raw spans, runs, eval sets (add, edit, run), jobs; and the
routes of the pages with modules of their own."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from toolpath.evaluation.evalsets.evaluator import criteria_of
from toolpath.evaluation.evalsets.files import EvalConfig, EvalSet
from toolpath.evaluation.evalsets.folder import EditedCall, EditedTurn, parse_args
from toolpath.evaluation.recorded import calls_dropped
from toolpath.evaluation.verdicts import ReplayStatus, RunKind
from toolpath.store import browse, session_order
from toolpath.store.annotations import annotations_of
from toolpath.store.session_order import SessionSort
from toolpath.ui import (
    compare,
    errors_pages,
    evalset_trash,
    online_pages,
    params,
    price_pages,
    review_pages,
    span_pages,
    tools_pages,
)
from toolpath.ui.default_prices import price_table
from toolpath.ui.evalset_trash import deleted_names
from toolpath.ui.run_cases import failed_count, opened_from, run_view
from toolpath.ui.usage_view import usage_of_sessions
from toolpath.ui.views import pretty, turn_view

PAGE_SIZE = 50


def _state(request: Request) -> Any:
    return request.app.state.ui


def _render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    templates = request.app.state.templates
    return templates.TemplateResponse(request, template, context, status_code=status)


def _see(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def home(request: Request) -> Response:
    return _see("/sessions")


def sessions(request: Request) -> Response:
    query = dict(request.query_params)
    where = params.session_filter(query)
    limit = params.integer(query, "limit", PAGE_SIZE, low=1, high=500)
    key, descending = params.session_sort(query)
    after, before = params.cursor(query), params.cursor(query, "before")
    if after is not None and before is not None:
        raise params.BadRequest("after and before: give one page cursor")
    newest_first = key is SessionSort.TIME and descending
    if not newest_first and (after is not None or before is not None):
        raise params.BadRequest(f"after/before: page cursors go with the newest-first order; sort={key.value} pages "
                                "by number (page=...)")  # fmt: skip
    number = params.integer(query, "page", 1, low=1, high=1_000_000)
    if newest_first and number > 1:
        raise params.BadRequest("page: numbered pages go with a sort=...; newest first pages by cursor (after=...)")
    store = _state(request).store
    priced = price_table(store)
    began = time.perf_counter()
    keep = params.query_without(query, "after", "before", "page")
    older_url = newer_url = None
    if newest_first:
        page = browse.session_page(store, where, limit=limit, after=after, before=before)
        if before is not None and page.previous_cursor is None:
            before = None  # back at the newest sessions: the first page as it is, full
            page = browse.session_page(store, where, limit=limit)
        older, newer = params.cursor_text(page.next_cursor), params.cursor_text(page.previous_cursor)
        older_url = f"/sessions?{urlencode({**keep, 'after': older})}" if older else None
        newer_url = f"/sessions?{urlencode({**keep, 'before': newer})}" if newer else None
        first_url = f"/sessions?{urlencode(keep)}" if after or before else None
    else:
        ordered = session_order.ordered_session_page(
            store, where, key, descending=descending, page=number, limit=limit, prices=priced
        )
        page = ordered.page
        older_url = f"/sessions?{urlencode({**keep, 'page': number + 1})}" if ordered.more else None
        newer_url = f"/sessions?{urlencode({**keep, 'page': number - 1})}" if number > 1 else None
        first_url = f"/sessions?{urlencode(keep)}" if number > 1 else None
    usage = usage_of_sessions(store, [r["session_id"] for r in page.rows], priced)
    elapsed = time.perf_counter() - began
    return _render(
        request,
        "sessions.html",
        {
            "rows": [{**r, "usage": usage[r["session_id"]]} for r in page.rows],
            "total": page.total,
            "total_capped": page.total_capped,
            "query": query,
            "agents": browse.agent_names(store),
            "metrics": browse.online_metric_names(store),
            "next_url": older_url,
            "previous_url": newer_url,
            "first_url": first_url,
            "page_number": None if newest_first else number,
            "sorts": sort_links(keep, key, descending),
            "elapsed_ms": elapsed * 1000,
            "presets": params.preset_links("/sessions", query, params.time_range(query).last),
        },
    )


def sort_links(keep: dict[str, Any], key: SessionSort, descending: bool) -> dict[str, dict[str, Any]]:
    """Per column of the sessions list: the URL that orders the whole list by it (the other way round if it is
    the current order), and its ``aria-sort`` (or ``None``)."""
    base = {k: v for k, v in keep.items() if k not in ("sort", "order")}
    out = {}
    for column in SessionSort:
        current = column is key
        first_descending = column not in session_order.TEXT_SORTS
        wanted = not descending if current else first_descending
        fresh = column is SessionSort.TIME and wanted  # the default order: no parameter
        chosen = base if fresh else {**base, "sort": column.value, "order": "desc" if wanted else "asc"}
        url = f"/sessions?{urlencode(chosen)}"
        out[column.value] = {"url": url, "aria": ("descending" if descending else "ascending") if current else None}
    return out


def turn(request: Request) -> Response:
    """A stored turn: its session's page, at the page and anchor of that turn (with the span to open and the case
    the turn was opened from, when given)."""
    invocation_id = request.path_params["invocation_id"]
    place = browse.turn_place(_state(request).store, invocation_id)
    if place is None:
        raise HTTPException(404, f"no turn {invocation_id!r} in the store (its run was not traced into this store)")
    session_id, number = place
    page = (number - 1) // TURNS_PER_PAGE + 1
    where: dict[str, Any] = {"id": session_id, "page": page}
    query = dict(request.query_params)
    # a span to open there; the eval case the turn was opened from; the view of its spans (find, errors only, folds)
    for kept in ("span", "run", "case", "find", "errors", "fold"):
        value = params.text(query, kept)
        if value is not None:
            where[kept] = value
    return _see(f"/session?{urlencode(where)}#turn-{number}")


TURNS_PER_PAGE = 10
"""Turns of a session one page shows (each with its calls and its waterfall)."""


def session(request: Request) -> Response:
    ui = _state(request)
    query = dict(request.query_params)
    session_id = params.text(query, "id")
    if session_id is None:
        raise params.BadRequest("id: which session (id=...)")
    open_span = span_pages.span_param(query)
    found = ui.store.get_session(session_id)
    if found is None:
        raise HTTPException(404, f"no session {session_id!r} in the store")
    pages = max(1, -(-len(found.invocations) // TURNS_PER_PAGE))
    page = params.integer(dict(request.query_params), "page", 1, low=1, high=pages)
    first = (page - 1) * TURNS_PER_PAGE
    shown = found.invocations[first : first + TURNS_PER_PAGE]  # a long session is read a page of turns at a time
    ids = [inv.invocation_id for inv in shown]
    scores, notes, priced = browse.online_scores(ui.store, ids), annotations_of(ui.store, ids), price_table(ui.store)
    turns = [
        {**turn_view(ui.store, i, scores[i.invocation_id], priced), "notes": notes[i.invocation_id]} for i in shown
    ]
    total = usage_of_sessions(ui.store, [found.session_id], priced)[found.session_id]
    drawn = {row["span_id"].lower() for t in turns for row in t["timeline"]["rows"] if row["span_id"]}
    return _render(
        request,
        "session.html",
        {"session": found, "turns": turns, "total": total, "first": first, "page": page, "pages": pages,
         "call_count": sum(len(i.tool_calls) for i in found.invocations),
         "calls_dropped": sum(calls_dropped(i.attributes) for i in found.invocations),
         "latency_total": sum(i.latency_seconds or 0.0 for i in found.invocations),
         "per_page": TURNS_PER_PAGE, "turn_count": len(found.invocations), "evalsets": ui.evalsets.names(),
         "evalset_dir": str(ui.evalsets.folder), "open_span": open_span,
         "span_missing": open_span is not None and open_span.lower() not in drawn,
         "from_case": opened_from(ui.store, query), "whole": browse.session_scores(ui.store, found.session_id)},
    )  # fmt: skip


def spans(request: Request) -> Response:
    trace_id = request.path_params["trace_id"]
    found = _state(request).store.spans_of_trace(trace_id)
    if not found:
        raise HTTPException(404, f"no spans of trace {trace_id!r} in the store")
    return _render(request, "spans.html", {"trace_id": trace_id, "spans": [pretty(s.to_row()) for s in found]})


def runs(request: Request) -> Response:
    store = _state(request).store
    listed = store.list_eval_runs(limit=200)
    outcomes = browse.run_outcomes(store, [r["run_id"] for r in listed])
    for r in listed:  # one meaning of failed: the run page's (its agent raised, or a score failed its mark)
        results = outcomes.get(r["run_id"], [])
        r["failed"] = failed_count(r["kind"], r, results)
        replay = r["kind"] == RunKind.REPLAY
        r["changed"] = sum(x["status"] == ReplayStatus.CHANGED for x in results) if replay else None
    return _render(request, "runs.html", {"runs": listed})


def run(request: Request) -> Response:
    run_id = request.path_params["run_id"]
    found = _state(request).store.get_eval_run(run_id)
    if found is None:
        raise HTTPException(404, f"no run {run_id!r} in the store")
    return _render(request, "run.html", run_view(found))


def evalsets(request: Request) -> Response:
    ui = _state(request)
    return _render(
        request,
        "evalsets.html",
        {"names": ui.evalsets.names(), "folder": str(ui.evalsets.folder), "deleted": deleted_names(ui.evalsets),
         "just_deleted": request.query_params.get("deleted")},
    )  # fmt: skip


def _load(request: Request, name: str) -> EvalSet:
    try:
        return _state(request).evalsets.load(name)
    except FileNotFoundError:
        raise HTTPException(404, f"no eval set {name!r}") from None


def evalset(request: Request) -> Response:
    ui = _state(request)
    name = request.path_params["name"]
    loaded = _load(request, name)
    criteria = criteria_of(loaded)
    return _render(
        request,
        "evalset.html",
        {
            "name": name,
            "evalset": loaded,
            "path": str(ui.evalsets.path(name)),
            "criteria": criteria,
            "agents": list(ui.agents),
            "saved": request.query_params.get("saved"),
            "restored": request.query_params.get("restored"),
        },
    )


async def add_to_evalset(request: Request) -> Response:
    form = await request.form()
    ui = _state(request)
    session_id = str(form.get("session_id") or "")
    name = str(form.get("evalset") or "").strip() or str(form.get("new_evalset") or "").strip()
    if not name:
        raise params.BadRequest("evalset: choose an eval set or name a new one")
    turns = [str(v) for v in form.getlist("turn")]
    found = await run_in_threadpool(ui.store.get_session, session_id)
    if found is None:
        raise HTTPException(404, f"no session {session_id!r} in the store")
    notes = await run_in_threadpool(annotations_of, ui.store, [inv.invocation_id for inv in found.invocations])
    reviews = {turn: [note.exported() for note in kept] for turn, kept in notes.items() if kept}
    eval_id = await run_in_threadpool(ui.evalsets.add_session, name, found, turns, reviews)
    stem = ui.evalsets.path(name).name.removesuffix(".evalset.json")
    return _see(f"/evalsets/{stem}?saved={eval_id}#case-{eval_id}")


async def save_case(request: Request) -> Response:
    form = await request.form()
    ui = _state(request)
    name, eval_id = request.path_params["name"], request.path_params["eval_id"]
    count = params.integer(dict(form), "turns", 0, low=0, high=10_000)  # type: ignore[arg-type]
    edited = []
    for i in range(count):
        calls = []
        for j in range(params.integer(dict(form), f"t{i}-calls", 0, low=0, high=10_000)):  # type: ignore[arg-type]
            call_name = str(form.get(f"t{i}-c{j}-name") or "").strip()
            if not call_name or form.get(f"t{i}-c{j}-remove"):
                continue
            args = parse_args(str(form.get(f"t{i}-c{j}-args") or ""), f"turn {i + 1}, call {j + 1} ({call_name})")
            calls.append(EditedCall(call_name, args))
        new_name = str(form.get(f"t{i}-new-name") or "").strip()
        if new_name:
            new_args = parse_args(str(form.get(f"t{i}-new-args") or ""), f"turn {i + 1}, new call")
            calls.append(EditedCall(new_name, new_args))
        edited.append(EditedTurn(str(form.get(f"t{i}-response") or ""), calls))
    try:
        await run_in_threadpool(ui.evalsets.update_case, name, eval_id, edited)
    except FileNotFoundError:
        raise HTTPException(404, f"no eval case {eval_id!r} in {name!r}") from None
    return _see(f"/evalsets/{name}?saved={eval_id}#case-{eval_id}")


async def start_run(request: Request) -> Response:
    form = await request.form()
    ui = _state(request)
    name = request.path_params["name"]
    agent = str(form.get("agent") or "").strip()
    target = ui.agents.get(agent)
    if target is None:  # a request names one of the operator's agents, never code to import
        offered = ", ".join(ui.agents) or "none (start it with toolpath ui --agent module:attr)"
        raise params.BadRequest(f"agent {agent!r}: not an agent this UI was started with; it runs: {offered}")
    loaded = await run_in_threadpool(_load, request, name)
    if not loaded.cases:
        raise params.BadRequest(f"eval set {name!r} has no cases to run")
    criteria: dict[str, Any] = {}
    for criterion, spec in loaded.criteria.items():
        threshold = params.number(dict(form), f"threshold-{criterion}")  # type: ignore[arg-type]
        if threshold is None:
            criteria[criterion] = spec
        elif isinstance(spec, dict):
            criteria[criterion] = {**spec, "threshold": threshold}
        else:
            criteria[criterion] = threshold
    config = EvalConfig(criteria, dict(loaded.custom_metrics), loaded.config_path)
    criteria_of(loaded, config)  # a bad threshold or criterion is said now, not in the job
    job = ui.jobs.start(name, loaded, target, agent, config)
    return _see(f"/jobs/{job.job_id}")


def job_page(request: Request) -> Response:
    job = _state(request).jobs.get(request.path_params["job_id"])
    if job is None:
        raise HTTPException(404, "no such evaluation job")
    return _render(request, "job.html", {"job": job})


def job_json(request: Request) -> Response:
    job = _state(request).jobs.get(request.path_params["job_id"])
    if job is None:
        raise HTTPException(404, "no such evaluation job")
    return JSONResponse(job.to_dict())


def routes() -> list[Route]:
    return [
        Route("/", home),
        Route("/sessions", sessions),
        Route("/session", session),
        Route("/turn/{invocation_id}", turn),
        Route("/traces/{trace_id}", spans),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/evalsets", evalsets),
        Route("/evalsets/add", add_to_evalset, methods=["POST"]),
        Route("/evalsets/{name}", evalset),
        Route("/evalsets/{name}/cases/{eval_id}", save_case, methods=["POST"]),
        Route("/evalsets/{name}/run", start_run, methods=["POST"]),
        Route("/jobs/{job_id}.json", job_json),
        Route("/jobs/{job_id}", job_page),
        *online_pages.routes(),
        *evalset_trash.routes(),
        *span_pages.routes(),
        *compare.routes(),
        *review_pages.routes(),
        *price_pages.routes(),
        *errors_pages.routes(),
        *tools_pages.routes(),
    ]
