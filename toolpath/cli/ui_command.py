"""``toolpath ui``: the local web app over a store (sessions, eval sets from traffic, runs, online scores)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import click

from toolpath.cli.agents import load_agent
from toolpath.cli.options import open_existing_store, store_option, token_option
from toolpath.cli.output import console
from toolpath.config import MAX_HEAD_BYTES
from toolpath.errors import ConfigError

UI_HINT = "pip install 'toolpath[ui]'"


def build_ui(
    store: Any, *, evalsets: Path, token: str | None, loopback_only: bool, agents: tuple[str, ...] = ()
) -> Any:
    """The UI's ASGI app (also mounted by ``toolpath collect --ui``); a :class:`ConfigError` naming the extra to
    install when Starlette or Jinja2 is missing. ``agents`` (``module:attr``) are loaded now, each checked: they
    are the only agents the UI will run."""
    try:
        from toolpath.ui import create_app
    except ImportError as exc:
        raise ConfigError(f"toolpath ui needs {exc.name or exc} ({UI_HINT})") from None
    loaded = {reference: load_agent(reference) for reference in agents}
    return create_app(store, evalsets=evalsets, agents=loaded, token=token, loopback_only=loopback_only)


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1", "[::1]") or host.startswith("127.")


@click.command("ui")
@store_option
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
def ui_command(
    store: str | None, host: str, port: int, token: str | None, evalsets: Path, agents: tuple[str, ...]
) -> None:
    """Browse sessions and trajectories, turn sessions into eval cases, run and compare evaluations. Also serves
    Vertex AI's evaluateInstances API (docs/vertex.md).

    \b
        toolpath ui --store sqlite:///toolpath.db
    """
    import uvicorn

    from toolpath.collector.http import HEADER_SECONDS, bind, header_deadline_protocol

    try:
        sock = bind(host, port)  # before anything is said or opened: a port in use is one error line
    except ConfigError as exc:
        raise ConfigError(f"--port {port}: {exc}") from None
    port = sock.getsockname()[1]  # --port 0: the one the system gave
    with sock:
        the_store = open_existing_store(store)
        loopback = is_loopback(host)
        if not token:
            token = secrets.token_urlsafe(24)  # every request needs a credential; the printed link logs in
        app = build_ui(the_store, evalsets=evalsets, token=token, loopback_only=loopback, agents=agents)
        from toolpath.cli.vertex_api import with_evaluate_instances

        app = with_evaluate_instances(app, the_store, token=token, loopback_only=loopback)  # Vertex AI's API
        shown = f"[{host}]" if ":" in host else host
        link = f"http://{shown}:{port}/sessions?token={token}"
        console.print(
            f"toolpath ui on {link} over {the_store.url} (eval sets in {evalsets}); Ctrl-C stops it", soft_wrap=True
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            http=header_deadline_protocol(HEADER_SECONDS),  # a slowly dribbled request head holds no connection
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
        uvicorn.Server(config).run(sockets=[sock])
