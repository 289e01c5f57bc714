"""The ASGI app of ``toolpath ui``: pages over a store, with what guards a local web app needs.

- With a token, every request needs it: ``Authorization: Bearer <token>``, or the cookie a first visit with
  ``?token=<token>`` sets (HttpOnly, SameSite=Strict; the token is then dropped from the address).
- A request that changes something (POST) must come from the app's own pages (its Origin, or else Referer, names
  this host) or carry the bearer token in its header: a page on another site cannot post to it (CSRF).
- On loopback, a Host header that is not a loopback name is refused (DNS rebinding).
- Every page is sent with a Content-Security-Policy that allows only the app's own scripts and styles (no inline
  script), and templates escape everything they show.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import jinja2
from sqlalchemy.exc import DBAPIError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Receive, Scope, Send

from toolpath.config import MAX_HEAD_BYTES
from toolpath.errors import ToolpathError
from toolpath.evaluation.evalsets.folder import EvalSetFiles
from toolpath.evaluation.verdicts import format_score
from toolpath.hosts import is_loopback_host
from toolpath.redact import hide_passwords
from toolpath.store.store import Store
from toolpath.ui import pages
from toolpath.ui.jobs import Jobs
from toolpath.ui.params import BadRequest
from toolpath.ui.views import breakable, compact, ns_text, seconds_text

HERE = Path(__file__).parent
logger = logging.getLogger("toolpath.ui")
COOKIE = "toolpath_ui_session"
"""The session cookie's name; the port the UI answers on is appended (one UI per port, one cookie each)."""
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


@dataclass
class UiState:
    store: Store
    evalsets: EvalSetFiles
    agents: Mapping[str, Any]
    """The only agents the UI runs: the ones the operator named when starting it (``toolpath ui --agent``), by
    the name they were given, each already loaded. A request picks one of these names; it never names code."""
    jobs: Jobs = field(init=False)

    def __post_init__(self) -> None:
        self.jobs = Jobs(self.store)


def create_app(
    store: Store,
    *,
    evalsets: Path,
    agents: Mapping[str, Any] | None = None,
    token: str | None = None,
    loopback_only: bool = True,
) -> Guard:
    """The UI over ``store``; eval sets are read and written in the folder ``evalsets``. ``agents`` (name ->
    loaded agent) are the agents its run form may run, and the only ones."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["when"] = ns_text
    env.filters["num"] = format_score
    env.filters["compact"] = compact
    env.filters["breakable"] = breakable
    env.filters["duration"] = seconds_text
    env.globals["urlencode"] = urlencode
    templates = Jinja2Templates(env=env)
    state = UiState(store, EvalSetFiles(evalsets), dict(agents or {}))

    async def bad_request(request: Request, exc: Exception) -> Response:
        return _error(templates, request, 400, str(exc))

    async def store_down(request: Request, exc: Exception) -> Response:
        # the database's own message can name hosts and users: the page says what happened, the log the rest
        logger.warning("toolpath ui: the store failed: %s", hide_passwords(str(exc).splitlines()[0]))
        response = _error(templates, request, 503, "the store is unavailable now; try again in a moment")
        response.headers["Retry-After"] = "5"
        return response

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        detail = exc.detail if isinstance(exc, HTTPException) else "not found"
        return _error(templates, request, status, str(detail))

    app = Starlette(
        routes=[*pages.routes(), Mount("/static", StaticFiles(directory=HERE / "static"), name="static")],
        exception_handlers={
            BadRequest: bad_request,
            ToolpathError: bad_request,
            HTTPException: not_found,
            DBAPIError: store_down,
        },
    )
    app.state.ui = state
    app.state.templates = templates
    return Guard(app, token=token, loopback_only=loopback_only)


def _error(templates: Jinja2Templates, request: Request, status: int, message: str) -> Response:
    if request.url.path.endswith(".json"):
        return PlainTextResponse(message, status_code=status)
    return templates.TemplateResponse(request, "error.html", {"status": status, "message": message}, status_code=status)


class Guard:
    """Token, CSRF and Host checks in front of the app, and the security headers on every reply."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app, self.token, self.loopback_only = app, token, loopback_only
        self.state = getattr(app, "state", None)
        # The cookie holds a session value derived from the token, never the token itself: a server on another
        # port of this host sees the cookie (cookies ignore ports) but not the token, which with collect --ui
        # is also the ingestion token. Derived, not random, so every --workers process accepts it.
        self._session = hmac.new(token.encode(), b"toolpath ui session", hashlib.sha256).hexdigest() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if head_bytes(scope) > MAX_HEAD_BYTES:
            await PlainTextResponse("request head too large", status_code=431)(scope, receive, send)
            return
        request = Request(scope)
        host = request.headers.get("host", "")
        refusal = self._refusal(request, host)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if self.token and request.query_params.get("token") is not None:
            # a link with ?token= : keep it in a cookie, and drop it from the address bar and history
            rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
            response.set_cookie(cookie_name(host), self._session or "", httponly=True, samesite="strict", path="/")
            await response(scope, receive, send)
            return

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, secured)

    def _authenticated(self, request: Request, host: str, bearer: str | None) -> bool:
        """The bearer token, the session cookie its login link set, or the login link's own ``?token=``."""
        token, session = (self.token or "").encode(), (self._session or "").encode()
        cookie = request.cookies.get(cookie_name(host))
        link = request.query_params.get("token")
        return (
            (bearer is not None and hmac.compare_digest(bearer.encode(), token))
            or (cookie is not None and hmac.compare_digest(cookie.encode(), session))
            or (link is not None and hmac.compare_digest(link.encode(), token))
        )

    def _refusal(self, request: Request, host: str) -> Response | None:
        if self.loopback_only and not _loopback(host):
            return PlainTextResponse("host not allowed", status_code=403)
        bearer = _bearer(request)
        if self.token and not self._authenticated(request, host, bearer):
            return PlainTextResponse(
                "a token is required: open the address toolpath ui printed (…?token=…), or send "
                "'Authorization: Bearer <token>'",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            if self.token and bearer and hmac.compare_digest(bearer.encode(), self.token.encode()):
                return None
            origin = request.headers.get("origin") or request.headers.get("referer")
            if not origin or urlsplit(origin).netloc != host:
                return PlainTextResponse(
                    "cross-site request refused: changes must come from this app's own pages", status_code=403
                )
        return None


def head_bytes(scope: Scope) -> int:
    """The size of a request's head as received: its target and every header."""
    return (
        len(scope.get("raw_path") or b"")
        + len(scope.get("query_string") or b"")
        + sum(len(name) + len(value) + 4 for name, value in scope["headers"])
    )


def cookie_name(host: str) -> str:
    """The session cookie's name for the UI reached at ``host`` (``127.0.0.1:8765`` -> ``toolpath_ui_session_8765``)."""
    port = host.rsplit(":", 1)[1] if ":" in host and not host.endswith("]") else ""
    return f"{COOKIE}_{port}" if port.isdigit() else COOKIE


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def _loopback(host: str) -> bool:
    return is_loopback_host(host)
