"""``toolpath ui``: the local web app over a store (sessions, eval sets from traffic, runs, online scores)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Literal

import click

from toolpath.cli.agents import load_agent
from toolpath.cli.options import (
    judge_budget_options,
    open_existing_store,
    set_judge_budget,
    store_option,
    token_option,
)
from toolpath.cli.output import console
from toolpath.cli.read_store import open_read_store, read_store_option
from toolpath.config import MAX_HEAD_BYTES
from toolpath.errors import ConfigError

UI_HINT = "pip install 'toolpath[ui]'"
MAX_CONNECTIONS = 1024
"""Connections ``toolpath ui`` and ``toolpath mcp --transport http`` hold at once (as the collector's port): a
request on one more is answered 503."""


def build_ui(
    store: Any,
    *,
    evalsets: Path,
    token: str | None,
    loopback_only: bool,
    agents: tuple[str, ...] = (),
    behind_tls: bool = False,
    sessions: Any = None,
    reads: Any = None,
) -> Any:
    """The UI's ASGI app (also mounted by ``toolpath collect --ui``); a :class:`ConfigError` naming the extra to
    install when Starlette or Jinja2 is missing. ``agents`` (``module:attr``) are loaded now, each checked: they
    are the only agents the UI will run. ``sessions``: a :class:`~toolpath.ui.login_sessions.LoginSessions`
    (default: in memory, default policy); ``reads``: the store the pages read (``--read-store``), ``store`` taking
    the writes."""
    try:
        from toolpath.ui import create_app
    except ImportError as exc:
        raise ConfigError(f"toolpath ui needs {exc.name or exc} ({UI_HINT})") from None
    loaded = {reference: load_agent(reference) for reference in agents}
    return create_app(
        store,
        evalsets=evalsets,
        agents=loaded,
        token=token,
        loopback_only=loopback_only,
        sessions=sessions,
        behind_tls=behind_tls,
        reads=reads,
    )


def ui_port_app(ui: Any, store: Any, *, token: str, loopback_only: bool) -> Any:
    """What ``toolpath ui`` serves on its port: Vertex AI's evaluateInstances in front of the UI's app ``ui``
    (behind the bearer ``token``), all of it behind the head's size limit and, on loopback, the exact ``Host``
    check."""
    from toolpath.cli.vertex_api import with_evaluate_instances
    from toolpath.hosts import guard_port

    app = with_evaluate_instances(ui, store, token=token, loopback_only=loopback_only)
    return guard_port(app, loopback_only=loopback_only)


def door_config(
    app: Any,
    *,
    header_seconds: float | None = None,
    max_connections: int = MAX_CONNECTIONS,
    lifespan: Literal["auto", "on", "off"] = "auto",
) -> Any:
    """uvicorn's settings for a port people's tools reach (``toolpath ui``, ``toolpath mcp --transport http``),
    the collector's rules for its own port: a request head must arrive whole within ``header_seconds`` (default:
    the collector's) and stay under its size limit, and at most ``max_connections`` are held at once, so that
    connections dribbling their headers hold nothing for long."""
    import uvicorn

    from toolpath.collector.http import HEADER_SECONDS, header_deadline_protocol

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan=lifespan,
        http=header_deadline_protocol(HEADER_SECONDS if header_seconds is None else header_seconds),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        limit_concurrency=max_connections,
    )


def login_sessions(
    idle: str = "12h", lifetime: str = "7d", max_sessions: int = 1000, *, path: Path | None = None
) -> Any:
    """The UI's :class:`~toolpath.ui.login_sessions.LoginSessions` under the options' values (``12h``, ``7d``), in
    memory or in the file ``path``; one error naming the option when a value is not a duration, or the two do not
    fit together."""
    try:
        from toolpath.ui.login_sessions import LoginSessions, SessionPolicy
    except ImportError as exc:
        raise ConfigError(f"toolpath ui needs {exc.name or exc} ({UI_HINT})") from None
    from toolpath.store.retention import parse_duration

    policy = SessionPolicy(
        parse_duration(idle, "--session-idle"),
        parse_duration(lifetime, "--session-lifetime"),
        max_sessions,
        options=("--session-idle", "--session-lifetime", "--max-sessions"),
    )
    return LoginSessions(policy, path=path)


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1", "[::1]") or host.startswith("127.")


@click.command("ui")
@store_option
@read_store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one).")
@token_option("Require this token (default: a new one, in the printed link).")
@click.option(
    "--evalsets",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("evalsets"),
    show_default=True,
    help="Folder of the *.evalset.json files the UI reads and writes.",
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    help="An agent (module:attr) the UI may run (repeatable); it runs no other, whatever a request names.",
)
@click.option(
    "--behind-tls",
    is_flag=True,
    help="Browsers reach the UI through a proxy that terminates TLS: the login cookie is Secure, and changes must "
    "come from its https:// pages.",
)
@click.option(
    "--session-idle", default="12h", show_default=True, help="A login ends after this long without a request."
)
@click.option(
    "--session-lifetime", default="7d", show_default=True, help="A login ends this long after it began, used or not."
)
@click.option(
    "--max-sessions",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Logins kept at once; past it, the oldest ends.",
)
@judge_budget_options
def ui_command(
    store: str | None,
    read_store: str | None,
    host: str,
    port: int,
    token: str | None,
    evalsets: Path,
    agents: tuple[str, ...],
    behind_tls: bool,
    session_idle: str,
    session_lifetime: str,
    max_sessions: int,
    judge_in_flight: int,
    judge_calls_per_minute: int,
    judge_tokens_per_minute: int,
) -> None:
    """Browse sessions and trajectories, turn sessions into eval cases, run and compare evaluations. Also serves
    Vertex AI's evaluateInstances API (docs/vertex.md).

    \b
        toolpath ui --store sqlite:///toolpath.db
        toolpath ui --store postgresql+psycopg://db/toolpath --read-store postgresql+psycopg://replica/toolpath
    """
    import uvicorn

    from toolpath.collector.http import bind

    # checked before anything listens; kept in this process's memory: a restart logs everyone out
    sessions = login_sessions(session_idle, session_lifetime, max_sessions)
    set_judge_budget(judge_in_flight, judge_calls_per_minute, judge_tokens_per_minute)  # runs, evaluateInstances
    try:
        sock = bind(host, port)  # before anything is said or opened: a port in use is one error line
    except ConfigError as exc:
        raise ConfigError(f"--port {port}: {exc}") from None
    port = sock.getsockname()[1]  # --port 0: the one the system gave
    with sock:
        the_store = open_existing_store(store, writing="toolpath ui stores reviews, runs and eval cases in it")
        reads = open_read_store(read_store) if read_store is not None else None
        loopback = is_loopback(host)
        if not token:
            token = secrets.token_urlsafe(24)  # every request needs a credential; the printed link logs in
        app = build_ui(
            the_store,
            evalsets=evalsets,
            token=token,
            loopback_only=loopback,
            agents=agents,
            behind_tls=behind_tls,
            sessions=sessions,
            reads=reads,
        )
        app = ui_port_app(app, the_store, token=token, loopback_only=loopback)  # and Vertex AI's API
        shown = f"[{host}]" if ":" in host else host
        link = f"http://{shown}:{port}/sessions?token={token}"
        reading = f", reading {reads.url}" if reads is not None else ""
        console.print(
            f"toolpath ui on {link} over {the_store.url}{reading} (eval sets in {evalsets}); Ctrl-C stops it",
            soft_wrap=True,
        )
        uvicorn.Server(door_config(app)).run(sockets=[sock])
