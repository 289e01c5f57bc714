"""The ASGI app of ``toolpath ui``: pages over a store, with what guards a local web app needs.

- With a token, every request needs it: ``Authorization: Bearer <token>``, or the cookie a first visit with
  ``?token=<token>`` sets. That cookie holds the random id of a login session the server keeps
  (:mod:`toolpath.ui.login_sessions`: it ends when idle, at its lifetime, at logout), never the token; HttpOnly,
  SameSite=Strict, ``Secure`` over TLS (or ``behind_tls``). The login redirects, without the token, to a path of
  this host only.
- A request that changes something (POST) must come from the app's own pages (its Origin, or else Referer, is
  exactly this scheme, host and port) or carry the bearer token in its header: a page on another site, or on
  another port of this host, cannot post to it (CSRF).
- On loopback, a Host header that is not exactly a loopback name or address with the port served is refused
  (DNS rebinding): 400 when it is no Host at all, 421 when it names another host or port.
- Every page is sent with a Content-Security-Policy that allows only the app's own scripts and styles (no inline
  script), and templates escape everything they show.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

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
from toolpath.hosts import head_bytes, host_refusal
from toolpath.redact import hide_passwords
from toolpath.store.store import Store
from toolpath.ui import pages
from toolpath.ui.jobs import Jobs
from toolpath.ui.login_sessions import LoginSessions
from toolpath.ui.params import BadRequest
from toolpath.ui.replica import replica_status
from toolpath.ui.views import breakable, compact, ns_text, seconds_text

HERE = Path(__file__).parent
logger = logging.getLogger("toolpath.ui")
COOKIE = "toolpath_ui_session"
"""The session cookie's name; the port the UI answers on is appended (one UI per port, one cookie each)."""
LOGOUT_PATH = "/logout"
"""``POST`` here ends the session of the cookie sent (a change like any other: same origin or the bearer token)."""
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


@dataclass
class UiState:
    store: Store
    """The store the pages read: ``--store``, or the replica of ``toolpath ui --read-store``."""
    evalsets: EvalSetFiles
    agents: Mapping[str, Any]
    """The only agents the UI runs: the ones the operator named when starting it (``toolpath ui --agent``), by
    the name they were given, each already loaded. A request picks one of these names; it never names code."""
    writes: Store | None = None
    """The store the UI writes (reviews, prices, runs): ``--store``; ``None``: the one it reads."""
    jobs: Jobs = field(init=False)

    def __post_init__(self) -> None:
        if self.writes is None:
            self.writes = self.store
        self.jobs = Jobs(self.writes)

    @property
    def primary(self) -> Store:
        """The store written to (a replica read by the pages never is)."""
        return self.writes if self.writes is not None else self.store


def create_app(
    store: Store,
    *,
    evalsets: Path,
    agents: Mapping[str, Any] | None = None,
    token: str | None = None,
    loopback_only: bool = True,
    sessions: LoginSessions | None = None,
    behind_tls: bool = False,
    reads: Store | None = None,
) -> Guard:
    """The UI over ``store``; eval sets are read and written in the folder ``evalsets``. ``agents`` (name ->
    loaded agent) are the agents its run form may run, and the only ones. ``sessions``: where its logins are kept
    (default: in this process's memory, with the default idle time and lifetime); ``behind_tls``: browsers reach
    it through a proxy that terminates TLS (its cookie is ``Secure``, its pages' origin ``https://``). ``reads``: a
    store the pages read instead (a streaming replica of ``store``, whose lag the header shows), ``store`` still
    taking every write."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["when"] = ns_text
    env.filters["num"] = format_score
    env.filters["compact"] = compact
    env.filters["breakable"] = breakable
    env.filters["duration"] = seconds_text
    env.globals["urlencode"] = urlencode
    env.globals["logout"] = LOGOUT_PATH if token else None
    env.globals["replica"] = (lambda: replica_status(reads)) if reads is not None else None
    templates = Jinja2Templates(env=env)
    state = UiState(reads if reads is not None else store, EvalSetFiles(evalsets), dict(agents or {}), writes=store)

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
    return Guard(app, token=token, loopback_only=loopback_only, sessions=sessions, behind_tls=behind_tls)


def _error(templates: Jinja2Templates, request: Request, status: int, message: str) -> Response:
    if request.url.path.endswith(".json"):
        return PlainTextResponse(message, status_code=status)
    return templates.TemplateResponse(request, "error.html", {"status": status, "message": message}, status_code=status)


class Guard:
    """Token, login session, CSRF and Host checks in front of the app, and the security headers on every reply."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        loopback_only: bool,
        sessions: LoginSessions | None = None,
        behind_tls: bool = False,
    ) -> None:
        self.app, self.token, self.loopback_only, self.behind_tls = app, token, loopback_only, behind_tls
        self.sessions = sessions if sessions is not None else LoginSessions()
        self.state = getattr(app, "state", None)

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
            await self._login(request, host)(scope, receive, send)
            return
        if request.method == "POST" and request.url.path == LOGOUT_PATH:
            await self._logout(request, host)(scope, receive, send)
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

    def _login(self, request: Request, host: str) -> Response:
        """The login link: a new session (the one the browser held, if any, ends: an id is never reused from
        before a login), its id in the cookie, and the same page without the token, on this host."""
        name = cookie_name(host)
        session = self.sessions.open(replacing=request.cookies.get(name))
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        path = local_path(request.scope["path"])  # as decoded: %2F%2F is two slashes to a browser too
        response = RedirectResponse(path + (f"?{rest}" if rest else ""), status_code=303)
        lifetime = int(self.sessions.policy.lifetime_seconds)
        response.set_cookie(
            name, session, max_age=lifetime, httponly=True, samesite="strict", path="/", secure=self._tls(request)
        )
        return response

    def _logout(self, request: Request, host: str) -> Response:
        name = cookie_name(host)
        session = request.cookies.get(name)
        if session is not None:
            self.sessions.revoke(session)
        response = PlainTextResponse(
            "logged out: open the address toolpath ui printed (…?token=…) to log in again",
            headers={"Cache-Control": "no-store"},
        )
        response.delete_cookie(name, path="/", httponly=True, samesite="strict", secure=self._tls(request))
        return response

    def _tls(self, request: Request) -> bool:
        """Whether browsers reach this app over TLS: its own (``https``), or a proxy's (``behind_tls``)."""
        return self.behind_tls or request.url.scheme == "https"

    def _authenticated(self, request: Request, host: str, bearer: str | None) -> bool:
        """The login link's own ``?token=`` (a link with a wrong one logs no one in, whatever else the request
        holds: only the right token opens a session), else the bearer token or the cookie of an open session."""
        token = (self.token or "").encode()
        link = request.query_params.get("token")
        if link is not None:
            return hmac.compare_digest(link.encode(), token)
        cookie = request.cookies.get(cookie_name(host))
        return (bearer is not None and hmac.compare_digest(bearer.encode(), token)) or (
            cookie is not None and self.sessions.check(cookie)
        )

    def _refusal(self, request: Request, host: str) -> Response | None:
        if self.loopback_only:
            wrong = host_refusal(host, request.scope.get("server"), request.url.scheme)
            if wrong is not None:
                return PlainTextResponse(wrong[1], status_code=wrong[0])
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
            if not self._same_origin(request, host):
                return PlainTextResponse(
                    "cross-site request refused: changes must come from this app's own pages", status_code=403
                )
        return None

    def _same_origin(self, request: Request, host: str) -> bool:
        """Whether the request's ``Origin`` (or, without one, its ``Referer``) is exactly this app's origin: the
        scheme browsers reach it by and the host and port of the request (checked above on loopback). A page of
        another port of this host has another origin, though browsers send it this host's cookies."""
        own = f"{'https' if self._tls(request) else 'http'}://{host}".lower()
        origin = request.headers.get("origin")
        if origin is None:
            referer = urlsplit(request.headers.get("referer") or "")
            origin = f"{referer.scheme}://{referer.netloc}" if referer.scheme and referer.netloc else ""
        return bool(host) and hmac.compare_digest(origin.lower().encode(), own.encode())


def local_path(path: str) -> str:
    """``path`` as a path of this host, and nothing else: browsers read ``//evil.test/x`` (and ``///evil.test``,
    ``/\\evil.test``) as another host, so the leading slashes (and backslashes) become one, and the rest is
    percent-encoded as a path."""
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")


def cookie_name(host: str) -> str:
    """The session cookie's name for the UI reached at ``host`` (``127.0.0.1:8765`` -> ``toolpath_ui_session_8765``)."""
    port = host.rsplit(":", 1)[1] if ":" in host and not host.endswith("]") else ""
    return f"{COOKIE}_{port}" if port.isdigit() else COOKIE


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None
