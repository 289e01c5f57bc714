"""A reviewer annotates a stored turn from its session's page: a label (pass or fail), a score, a comment, and
the reviewer's name; every annotation is kept with its time (:mod:`toolpath.store.annotations`)."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolpath.store.annotations import REVIEW_LABELS, ReviewLabel, annotate
from toolpath.ui import params


async def annotate_page(request: Request) -> Response:
    invocation_id = request.path_params["invocation_id"]
    form: dict[str, Any] = {k: str(v) for k, v in (await request.form()).items()}
    raw_label = params.text(form, "label")
    if raw_label is not None and raw_label not in REVIEW_LABELS:
        raise params.BadRequest(f"label={raw_label!r}: expected pass or fail (or none)")
    label = ReviewLabel(raw_label) if raw_label is not None else None
    score = params.number(form, "score")
    await run_in_threadpool(
        lambda: annotate(
            request.app.state.ui.primary,
            invocation_id,
            author=form.get("author", ""),
            label=label,
            score=score,
            comment=form.get("comment"),
        )
    )
    return RedirectResponse(f"/turn/{invocation_id}", status_code=303)


def routes() -> list[Route]:
    return [Route("/turn/{invocation_id}/annotations", annotate_page, methods=["POST"])]
