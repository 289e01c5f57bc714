"""``toolpath mcp``: toolpath as an MCP server over a store, on stdio or Streamable HTTP (docs/cli.md)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from toolpath.cli.options import (
    judge_budget_options,
    open_existing_store,
    set_judge_budget,
    store_option,
    token_option,
)
from toolpath.errors import ConfigError


@click.command("mcp")
@store_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio (the client starts this command) or Streamable HTTP (at /mcp).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="With --transport http: address to bind.")
@click.option(
    "--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="With --transport http: port."
)
@token_option("With --transport http: require this bearer token (default: a new one, printed at start).")
@click.option(
    "--evalsets",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("evalsets"),
    show_default=True,
    help="Folder of the *.evalset.json files the tools read (and, with --allow-write, write).",
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    help="An agent (module:attr) score_evalset may run (repeatable); it runs no other.",
)
@click.option("--allow-write", is_flag=True, help="Offer add_session_to_evalset and save eval set runs to the store.")
@judge_budget_options
def mcp_command(
    store: str | None,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    evalsets: Path,
    agents: tuple[str, ...],
    allow_write: bool,
    judge_in_flight: int,
    judge_calls_per_minute: int,
    judge_tokens_per_minute: int,
) -> None:
    """Serve the store to MCP clients (coding assistants): list and search sessions, show trajectories, score a
    session or an eval set; read-only unless --allow-write.

    \b
        toolpath mcp --store sqlite:///toolpath.db                     # stdio
        toolpath mcp --transport http --port 8766 --token "$TOKEN"     # Streamable HTTP on loopback
    """
    from toolpath.cli.agents import load_agent
    from toolpath.mcp_server.serving import build_server
    from toolpath.mcp_server.store_tools import StoreTools

    given = click.get_current_context().get_parameter_source
    if transport == "stdio" and any(given(o) is ParameterSource.COMMANDLINE for o in ("token", "host", "port")):
        raise ConfigError("--token, --host and --port apply to --transport http only (stdio needs no token)")
    loaded = {reference: load_agent(reference) for reference in agents}
    set_judge_budget(judge_in_flight, judge_calls_per_minute, judge_tokens_per_minute)  # score_evalset's judges
    if transport == "http":
        _serve_http(store, host, port, token, evalsets, allow_write, loaded)
        return
    writing = "toolpath mcp --allow-write stores runs in it" if allow_write else None
    tools = StoreTools(open_existing_store(store, writing=writing), evalsets, allow_write=allow_write, agents=loaded)
    build_server(tools).run("stdio")


def _serve_http(
    store: str | None,
    host: str,
    port: int,
    token: str | None,
    evalsets: Path,
    allow_write: bool,
    agents: dict[str, Any],
) -> None:
    import uvicorn

    from toolpath.cli.ui_command import door_config, is_loopback
    from toolpath.collector.http import bind
    from toolpath.mcp_server.serving import http_app
    from toolpath.mcp_server.store_tools import StoreTools

    try:
        sock = bind(host, port)  # before anything is opened: a port in use is one error line
    except ConfigError as exc:
        raise ConfigError(f"--port {port}: {exc}") from None
    with sock:
        writing = "toolpath mcp --allow-write stores runs in it" if allow_write else None
        the_store = open_existing_store(store, writing=writing)
        loopback = is_loopback(host)
        made_up = not token
        token = token or secrets.token_urlsafe(24)  # every request needs a credential
        tools = StoreTools(the_store, evalsets, allow_write=allow_write, agents=agents)
        app = http_app(tools, token=token, loopback_only=loopback)
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{sock.getsockname()[1]}/mcp"
        mode = "read-write" if allow_write else "read-only"
        said = f"; bearer token {token}" if made_up else ""
        print(
            f"toolpath mcp on {url} over {the_store.url} ({mode}){said}; Ctrl-C stops it", file=sys.stderr, flush=True
        )
        # the UI's rules for its port: a head deadline, a head size limit, a cap on connections
        uvicorn.Server(door_config(app, lifespan="on")).run(sockets=[sock])
