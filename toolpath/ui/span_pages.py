"""One stored span as JSON, for the session page's span panel (the page draws it; every value is shown as text):
its name, kind, status, times and duration, attributes, events and resource; and the ``span`` parameter of a
session page, the span its panel opens on load (a link to a span: the panel's "copy link")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolpath.store.spanrecord import STATUS_ERROR, STATUS_OK, SpanRecord
from toolpath.ui import params
from toolpath.ui.views import ns_text, span_kind

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUSES = {0: "unset", STATUS_OK: "ok", STATUS_ERROR: "error"}
_SPAN_ID = re.compile(r"[0-9a-fA-F]{1,32}")


def span_param(query: Mapping[str, str]) -> str | None:
    """The span a session page opens on load (``span=<span id>``), or ``None``: hex digits, as span ids are
    stored."""
    span_id = params.text(query, "span")
    if span_id is not None and not _SPAN_ID.fullmatch(span_id):
        raise params.BadRequest(f"span={span_id[:40]!r}: a span id is hex digits (16 of them, as OTLP gives them)")
    return span_id


def span_json(span: SpanRecord) -> dict[str, Any]:
    duration = (span.end_time - span.start_time) / 1e6 if span.end_time is not None else None
    return {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name,
        "kind": KINDS.get(span.kind, str(span.kind)),
        "role": span_kind(span),
        "status": STATUSES.get(span.status_code, str(span.status_code)),
        "status_message": span.status_message,
        "start": ns_text(span.start_time),
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "duration_ms": duration,
        "attributes": span.attributes or {},
        "events": [
            {**event, "when": ns_text(event.get("time_unix_nano"))} if isinstance(event, dict) else event
            for event in span.events or []
        ],
        "resource": span.resource or {},
        "scope": span.scope,
    }


async def span_page(request: Request) -> Response:
    trace_id, span_id = request.path_params["trace_id"], request.path_params["span_id"]
    spans = await run_in_threadpool(request.app.state.ui.store.spans_of_trace, trace_id)
    found = next((s for s in spans if s.span_id == span_id), None)
    if found is None:
        raise HTTPException(404, f"no span {span_id!r} of trace {trace_id!r} in the store")
    return JSONResponse(span_json(found))


def routes() -> list[Route]:
    return [Route("/traces/{trace_id}/spans/{span_id}.json", span_page)]
