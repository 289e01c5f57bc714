"""``toolpath runs`` and ``toolpath report``: saved evaluation runs and their HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolpath.cli import json_as_ascii
from toolpath.cli.options import open_existing_store, store_option, writable
from toolpath.cli.output import console, emit
from toolpath.errors import ConfigError
from toolpath.private_files import write_private


@click.group()
def runs() -> None:
    """Evaluation runs saved in the store."""


@runs.command(name="list")
@store_option
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_list(store: str | None, limit: int, as_json: bool) -> None:
    """List evaluation runs, newest first, with their summaries."""
    from toolpath.cli.display import runs_table

    emit(open_existing_store(store).list_eval_runs(limit=limit), as_json, runs_table)


@runs.command(name="show")
@click.argument("run_id")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_show(run_id: str, store: str | None, as_json: bool) -> None:
    """Show one evaluation run: its summary and every result row."""
    from toolpath.cli.display import response_notes, summary_table

    run = open_existing_store(store).get_eval_run(run_id)
    if run is None:
        raise ConfigError(f"no evaluation run {run_id!r} in the store")
    if as_json:
        click.echo(json.dumps(run, indent=2, ensure_ascii=json_as_ascii(), default=str))
        return
    names = sorted({k.rsplit("/", 1)[0] for k in run["summary"] if k.endswith("/mean")})
    console.print(f"run {run['run_id']} ({run['kind']}) of {run['dataset']}, agent {run['agent'] or '-'}")
    rows = [{f"{n}/score": (r["scores"] or {}).get(n) for n in names} for r in run["results"]]
    console.print(summary_table(run["summary"], names, title=f"{run['row_count']} rows", rows=rows))
    for line in response_notes(run["results"]):  # why a response metric left such a row unscored
        console.print(line, highlight=False)


@click.command()
@store_option
@click.option("--run", "run_id", default=None, help="An evaluation run id (default: the latest run or replay).")
@click.option("--replay", "replay_id", default=None, help="A replay id (printed by toolpath replay).")
@click.option("--html", "html_path", type=click.Path(path_type=Path), required=True, help="HTML file to write.")
def report(store: str | None, run_id: str | None, replay_id: str | None, html_path: Path) -> None:
    """Write one self-contained HTML report of an evaluation run or a replay (the latest one by default).

    \b
        toolpath report --html report.html
        toolpath report --run 1a2b3c4d5e6f --html report.html
    """
    from toolpath.cli.report import render_report
    from toolpath.evaluation.verdicts import RunKind

    if run_id is not None and replay_id is not None:
        raise ConfigError("give one of --run ID or --replay ID (or neither, for the latest)")
    writable(html_path, "--html")
    the_store = open_existing_store(store)
    if run_id is None and replay_id is None:
        latest = the_store.list_eval_runs(limit=1)
        if not latest:
            raise ConfigError(f"no evaluation run or replay in {the_store.url} yet (toolpath eval, toolpath replay)")
        run_id = latest[0]["run_id"]
        console.print(f"reporting the latest {latest[0]['kind']} run, {run_id} (--run ID for another)")
    run = the_store.get_eval_run(run_id or replay_id or "")
    if run is None:
        raise ConfigError(f"no {'run' if run_id else 'replay'} {run_id or replay_id!r} in {the_store.url}")
    if replay_id and run["kind"] != RunKind.REPLAY:
        raise ConfigError(f"{replay_id!r} is a {run['kind']} run, not a replay (use --run)")
    write_private(html_path, render_report(run))
    console.print(f"wrote {html_path} ({run['kind']} {run['run_id']}, {run['row_count']} row(s))")
