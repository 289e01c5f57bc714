"""``toolpath sessions`` and ``toolpath watch``: recorded traffic and live online scores."""

from __future__ import annotations

import json

import click

from toolpath.cli import json_as_ascii
from toolpath.cli.options import existing_store_url, open_existing_store, store_option
from toolpath.cli.output import console, emit
from toolpath.cli.read_store import open_read_store, read_store_option
from toolpath.errors import ConfigError


@click.group()
def sessions() -> None:
    """Browse what the store holds."""


@sessions.command(name="list")
@store_option
@read_store_option
@click.option("--agent-name", default=None, help="Only sessions of this agent.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_list(store: str | None, read_store: str | None, agent_name: str | None, limit: int, as_json: bool) -> None:
    """List sessions, newest first."""
    from toolpath.cli.display import sessions_table
    from toolpath.store import session_list
    from toolpath.store.direct import reading
    from toolpath.tracer.semconv import TOOLPATH_EVALUATION

    # through the database's driver, without SQLAlchemy (its import alone would be most of this command's time)
    if read_store is not None:  # checked as the UI checks it: a reachable database at this toolpath's schema
        open_read_store(read_store).engine.dispose()
    with reading(read_store if read_store is not None else existing_store_url(store)) as reader:
        rows = session_list.listed(reader, agent_name=agent_name, limit=limit, evaluation_attribute=TOOLPATH_EVALUATION)
        total = session_list.count(reader, agent_name=agent_name) if len(rows) == limit else len(rows)
    emit(rows, as_json, sessions_table)
    if total > len(rows):  # never a silent cut: say what is left out and how to see it
        click.echo(
            f"{len(rows)} of {total} sessions shown, newest first; --limit {total} lists them all",
            err=as_json,  # beside the JSON, never in it
        )


@sessions.command(name="show")
@click.argument("session_id")
@store_option
@read_store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_show(session_id: str, store: str | None, read_store: str | None, as_json: bool) -> None:
    """Show one session's invocations: prompt, tool calls, response, latency, failure."""
    from toolpath.cli.display import session_table
    from toolpath.evaluation.recorded import calls_dropped
    from toolpath.store.browse import online_scores

    the_store = open_read_store(read_store) if read_store is not None else open_existing_store(store)
    session = the_store.get_session(session_id)
    if session is None:
        raise ConfigError(f"no session {session_id!r} in the store")
    scores = online_scores(the_store, [inv.invocation_id for inv in session.invocations])
    if as_json:
        data = session.model_dump(mode="json")
        for inv, dumped in zip(session.invocations, data["invocations"], strict=True):
            dumped["predicted_trajectory"] = inv.predicted_trajectory
            dumped["tool_calls_dropped"] = calls_dropped(inv.attributes)  # a cap's cut, beside the calls it cut
            dumped["online_scores"] = scores[inv.invocation_id]
        click.echo(json.dumps(data, indent=2, ensure_ascii=json_as_ascii()))
    else:
        console.print(session_table(session, scores))


@click.command()
@store_option
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Seconds between looks at the store.",
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), help="Rows kept on screen.")
@click.option("--once", is_flag=True, help="Print what is there now and exit.")
def watch(store: str | None, interval: float, limit: int, once: bool) -> None:
    """Live tables of the turns and the sessions the online evaluators score, and each evaluator's judge spend
    (Ctrl-C to stop)."""
    import time

    from rich.console import Group
    from rich.live import Live

    from toolpath.cli.watch_display import watch_screen
    from toolpath.store.judge_spend import by_evaluator
    from toolpath.store.online_reads import latest_scored, latest_sessions

    the_store = open_existing_store(store)
    rows = latest_scored(the_store, limit=limit)

    def screen() -> Group:
        return watch_screen(rows, latest_sessions(the_store, limit=limit), by_evaluator(the_store))

    if once:
        console.print(screen())
        return
    try:
        with Live(screen(), console=console, refresh_per_second=4) as live:
            while True:
                time.sleep(interval)
                newer = latest_scored(the_store, after_ns=rows[-1]["scored_at"] if rows else 0, limit=limit)
                rows = (rows + newer)[-limit:]
                live.update(screen())
    except KeyboardInterrupt:
        return
