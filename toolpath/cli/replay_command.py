"""``toolpath replay`` and ``toolpath export``: recorded sessions against a new agent, or out as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolpath import tracing
from toolpath.cli.agents import load_agent
from toolpath.cli.options import (
    open_existing_store,
    parse_thresholds,
    select_sessions,
    selection_options,
    store_option,
    writable,
)
from toolpath.cli.output import console, progress
from toolpath.private_files import write_private


@click.command()
@click.option(
    "--agent",
    "agent_ref",
    required=True,
    help="The agent version to replay against: module:attr, or an ADK agent module or folder (its root_agent).",
)
@store_option
@selection_options
@click.option(
    "--metrics", "metrics_text", default=None, help="Comma-separated metrics (default: trajectory and response ones)."
)
@click.option("--threshold", "thresholds", multiple=True, help="metric=value: exit 1 when its mean is below (repeat).")
@click.option("--output", type=click.Path(path_type=Path), default=None, help="Write the replay as JSON here.")
@click.option("--quiet", is_flag=True, help="No progress bar or tables; the summary line only.")
def replay(
    agent_ref: str,
    store: str | None,
    session_ids: tuple[str, ...],
    since: Any,
    agent_name: str | None,
    limit: int | None,
    metrics_text: str | None,
    thresholds: tuple[str, ...],
    output: Path | None,
    quiet: bool,
) -> None:
    """Re-run recorded sessions against an agent and show what changed.

    \b
        toolpath replay --agent my_app.agent_v2:answer --agent-name support_bot --since 2026-11-01 \\
            --threshold trajectory_exact_match=1.0 --output replay.json

    Each session's user messages are replayed in order in a new session, traced into the store, scored
    against the recording (its tool calls and answers as references) and diffed call by call.
    """
    import time

    from toolpath.cli.display import replay_report
    from toolpath.evaluation.replay import DEFAULT_METRICS, replay_sessions, save_replay_run
    from toolpath.evaluation.targets import describe_target
    from toolpath.metrics.base import split_metric_list

    writable(output, "--output")  # checked first: the replay is saved before the output is written
    limits = parse_thresholds(thresholds)
    metrics = split_metric_list(metrics_text) if metrics_text else list(DEFAULT_METRICS)
    agent = load_agent(agent_ref)
    the_store = open_existing_store(store, writing="toolpath replay stores the replay in it")
    sessions = select_sessions(the_store, session_ids, since, agent_name, limit)
    tracing.init(store=the_store)
    started = time.time_ns()
    with progress(len(sessions), "replaying sessions", quiet) as bar:
        result = replay_sessions(sessions, agent, metrics=metrics, thresholds=limits, on_session=bar.advance)
    tracing.flush()
    save_replay_run(the_store, result, agent=describe_target(agent_ref), started_ns=started)
    if output is not None:
        write_private(output, json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    replay_report(console, result, quiet=quiet)
    if not result.passed:
        raise click.exceptions.Exit(1)


@click.command(name="export")
@click.option(
    "--format", "fmt", type=click.Choice(["evalset", "jsonl", "agent_data"]), required=True, help="Output format."
)
@store_option
@selection_options
@click.option("--output", type=click.Path(path_type=Path), required=True, help="File to write.")
@click.option("--eval-set-id", default=None, help="eval_set_id of an evalset (default: from the file name).")
def export_command(
    fmt: str,
    store: str | None,
    session_ids: tuple[str, ...],
    since: Any,
    agent_name: str | None,
    limit: int | None,
    output: Path,
    eval_set_id: str | None,
) -> None:
    """Turn recorded sessions into an ADK eval set, Vertex-style JSONL or Google's agent_data JSONL, to run with
    `toolpath eval`.

    \b
        toolpath export --format evalset --agent-name support_bot --output support.evalset.json
        toolpath eval support.evalset.json --agent my_app.agent:answer
    """
    from toolpath.datasets.export import write_export
    from toolpath.store.annotations import annotations_of

    writable(output, "--output")
    the_store = open_existing_store(store)
    sessions = select_sessions(the_store, session_ids, since, agent_name, limit)
    notes = annotations_of(the_store, [inv.invocation_id for s in sessions for inv in s.invocations])
    reviews = {turn: [note.exported() for note in found] for turn, found in notes.items() if found}
    turns = write_export(sessions, fmt, output, eval_set_id=eval_set_id, annotations=reviews)
    console.print(f"wrote {len(sessions)} session(s), {turns} turn(s) to {output}")
    from toolpath.evaluation.recorded import calls_dropped

    for session in sessions:  # a capped turn exported is a part of what the agent did: said, never silent
        for number, inv in enumerate(session.invocations, start=1):
            if dropped := calls_dropped(inv.attributes):
                kept = len(inv.tool_calls)
                click.echo(
                    f"warning: session {session.session_id!r} turn {number}: the collector kept {kept} of its "
                    f"{kept + dropped} tool calls (--max-tool-calls); its exported trajectory is that part",
                    err=True,
                )
