"""The price table the UI prices token counts with: per model, per million input and output tokens, kept in the
store (every UI over it agrees); a call that reported its own cost (``gen_ai.usage.cost.*``) keeps it."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolpath.store.usage import prices, remove_price, set_price
from toolpath.ui import params


def prices_page(request: Request) -> Response:
    store = request.app.state.ui.store
    return request.app.state.templates.TemplateResponse(
        request, "prices.html", {"prices": list(prices(store).values()), "saved": request.query_params.get("saved")}
    )


async def save_price(request: Request) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    model = params.text(form, "model") or ""
    cost_in = params.number(form, "input", low=0)
    cost_out = params.number(form, "output", low=0)
    if cost_in is None or cost_out is None:
        raise params.BadRequest("input and output: give both prices (per million tokens)")
    store = request.app.state.ui.primary
    if form.get("remove"):
        await run_in_threadpool(remove_price, store, model)
    else:
        await run_in_threadpool(set_price, store, model, cost_in, cost_out)
    return RedirectResponse(f"/prices?saved={model}", status_code=303)


def routes() -> list[Route]:
    return [Route("/prices", prices_page), Route("/prices", save_price, methods=["POST"])]
