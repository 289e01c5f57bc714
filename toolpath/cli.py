"""The ``toolpath`` command. Commands stay thin: they parse options and call the library.

Every :class:`ToolpathError` (missing file, bad JSON line, unknown metric, bad store URL) is printed as one
``error:`` line and exits 2, without a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from toolpath import tracer
from toolpath.collector.store import STORE_ENV, Store, resolve_store_url
from toolpath.errors import ConfigError, ToolpathError

console = Console()

store_option = click.option(
    "--store",
    envvar=STORE_ENV,
    default=None,
    help=f"Database URL (default: ${STORE_ENV} or sqlite:///toolpath.db).",
)


@click.group()
@click.version_option(package_name="toolpath")
def cli() -> None:
    """Trace the tool calls of LLM agents, store them, and score them."""


@cli.command()
@store_option
@click.option("--worst", default=6, show_default=True, help="How many of the worst cases to show.")
def demo(store: str | None, worst: int) -> None:
    """Run the bundled smart-home agent over 24 cases and score its trajectories.

    No network and no API key: the agent is rule-based. Everything it does is traced into the store
    (sqlite:///toolpath.db by default), then scored.

        toolpath demo
        toolpath sessions list
    """
    from toolpath.demo import run_demo

    run_demo(store, console, worst)


@cli.command(name="eval")
@click.argument("dataset", type=click.Path(path_type=Path), required=False)
@click.option("--from-store", "from_store", is_flag=True, help="Score recorded invocations from the store.")
@click.option("--agent-name", default=None, help="With --from-store: only this agent's invocations.")
@click.option("--session", "session_id", default=None, help="With --from-store: only this session.")
@click.option("--limit", default=None, type=int, help="With --from-store: at most this many invocations.")
@click.option(
    "--metrics",
    "metrics_text",
    default=None,
    help="Comma-separated metrics for a JSONL/CSV dataset, e.g. trajectory_exact_match,"
    "trajectory_single_tool_use(tool_name=get_weather).",
)
@click.option("--agent", "agent_ref", default=None, help="module:attr of the agent to run (required for eval sets).")
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None, help="test_config.json.")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(min=1), help="Runs of each eval case.")
@click.option("--output", type=click.Path(path_type=Path), default=None, help="Write results as JSON here.")
@click.option("--quiet", is_flag=True, help="Print only the summary line.")
@store_option
def eval_command(
    dataset: Path | None,
    from_store: bool,
    agent_name: str | None,
    session_id: str | None,
    limit: int | None,
    metrics_text: str | None,
    agent_ref: str | None,
    config_path: Path | None,
    runs: int,
    output: Path | None,
    quiet: bool,
    store: str | None,
) -> None:
    """Score a JSONL/CSV dataset with metrics, or run ADK eval sets against an agent.

    \b
        toolpath eval cases.jsonl --metrics trajectory_exact_match,trajectory_recall
        toolpath eval cases.csv --metrics trajectory_precision --agent my_app.agent:answer
        toolpath eval tests/weather.evalset.json --agent my_app.agent:root_agent --runs 3
        toolpath eval --from-store --agent-name support_bot --metrics tool_loop_detected,error_recovery

    Eval sets (*.evalset.json, legacy *.test.json, or a folder of them) are judged by the criteria of the
    test_config.json beside them (or --config); the command exits 1 when a case fails.
    """
    from toolpath.datasets.adk import EVALSET_SUFFIX, LEGACY_SUFFIX

    if from_store:
        if dataset is not None or agent_ref:
            raise ConfigError("--from-store scores recorded traffic: give no DATASET and no --agent")
        if not metrics_text:
            raise ConfigError("--metrics is required")
        _eval_recorded(store, metrics_text, agent_name, session_id, limit, output, quiet)
        return
    if dataset is None:
        raise ConfigError("give a DATASET file or folder, or --from-store")
    is_eval_set = dataset.is_dir() or dataset.name.endswith((EVALSET_SUFFIX, LEGACY_SUFFIX))
    the_store = Store(store) if agent_ref or store else None
    if is_eval_set:
        if metrics_text:
            raise ConfigError("eval sets are judged by their criteria: give --config test_config.json, not --metrics")
        _eval_sets(dataset, agent_ref, config_path, runs, output, quiet, the_store)
    else:
        if not metrics_text:
            raise ConfigError("--metrics is required for a JSONL or CSV dataset")
        if config_path is not None or runs != 1:
            raise ConfigError("--config and --runs apply to eval sets (*.evalset.json, *.test.json)")
        _eval_dataset(dataset, metrics_text, agent_ref, output, quiet, the_store)


def _eval_recorded(
    store_url: str | None,
    metrics_text: str,
    agent_name: str | None,
    session_id: str | None,
    limit: int | None,
    output: Path | None,
    quiet: bool,
) -> None:
    from toolpath.datasets.recorded import rows_from_store
    from toolpath.display import summary_table
    from toolpath.evaluators.registry import resolve_metric, split_metric_list
    from toolpath.evaluators.runner import evaluate

    store = _open_existing_store(store_url)
    rows = rows_from_store(store, session_id=session_id, agent_name=agent_name, limit=limit)
    if not rows:
        raise ConfigError(f"no recorded invocations in {store.url} match the filters")
    metrics = [resolve_metric(spec) for spec in split_metric_list(metrics_text)]
    result = evaluate(rows, metrics, store=store)
    if output is not None:
        result.write_json(output)
    if not quiet:
        console.print(
            summary_table(result.summary_metrics, result.metric_names, title=f"{len(rows)} recorded invocations")
        )
    _print_run_line(result, output)


def _eval_dataset(
    dataset: Path, metrics_text: str, agent_ref: str | None, output: Path | None, quiet: bool, store: Store | None
) -> None:
    from toolpath.display import summary_table
    from toolpath.evaluators.registry import resolve_metric, split_metric_list
    from toolpath.evaluators.runner import evaluate

    metrics = [resolve_metric(spec) for spec in split_metric_list(metrics_text)]
    if not metrics:
        raise ConfigError("--metrics names no metric")
    runnable = load_object(agent_ref) if agent_ref else None
    if runnable is not None:
        tracer.init(store=store)
    from toolpath.datasets import load_rows

    rows = load_rows(dataset)
    with _progress(len(rows), "scoring rows", quiet) as advance:
        result = evaluate(
            rows, metrics, runnable=runnable, store=store, on_row=lambda *_: advance(), dataset_name=str(dataset)
        )
    tracer.flush()
    if output is not None:
        result.write_json(output)
    if not quiet:
        title = f"{dataset} ({len(result.metrics_table)} rows)"
        console.print(summary_table(result.summary_metrics, result.metric_names, title=title))
    _print_run_line(result, output)


def _eval_sets(
    path: Path,
    agent_ref: str | None,
    config_path: Path | None,
    runs: int,
    output: Path | None,
    quiet: bool,
    store: Store | None,
) -> None:
    from toolpath.datasets.adk import load_criteria, load_eval_sets
    from toolpath.display import eval_set_report
    from toolpath.evaluators.evalset import evaluate_eval_sets

    if not agent_ref:
        raise ConfigError("--agent module:attr is required to run eval sets")
    eval_sets = load_eval_sets(path)
    criteria = load_criteria(config_path) if config_path else None
    agent = load_object(agent_ref)
    tracer.init(store=store)
    total = sum(len(eval_set.cases) for eval_set in eval_sets)
    with _progress(total, "running eval cases", quiet) as advance:
        result = evaluate_eval_sets(
            eval_sets, agent, runs=runs, criteria=criteria, store=store, on_case=lambda _: advance()
        )
    tracer.flush()
    if output is not None:
        output.write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    eval_set_report(console, result, quiet=quiet)
    if not result.passed:
        raise click.exceptions.Exit(1)


@cli.command()
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--http-port", default=4318, show_default=True, type=int, help="OTLP/HTTP port (0: off).")
@click.option("--grpc-port", default=4317, show_default=True, type=int, help="OTLP/gRPC port (0: off).")
@click.option("--token", envvar="TOOLPATH_TOKEN", default=None, help="Require 'Authorization: Bearer <token>'.")
@click.option("--max-body-bytes", default=16 * 1024 * 1024, show_default=True, type=int, help="Largest request body.")
@click.option(
    "--max-in-flight",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="Exports being written at once; more get 503 / UNAVAILABLE so exporters retry later.",
)
@click.option("--redact-key", "redact_keys", multiple=True, help="Also replace values of this key (repeatable).")
@click.option(
    "--redact-pattern", "redact_patterns", multiple=True, help="NAME=REGEX replaced inside strings (repeatable)."
)
@click.option("--no-redact", is_flag=True, help="Store spans as they come (no secret or personal-data redaction).")
@click.option(
    "--max-attribute-length", default=64 * 1024, show_default=True, type=int, help="Longer values are cut, marked."
)
@click.option("--max-spans-per-trace", default=10_000, show_default=True, type=int, help="More are dropped, counted.")
@click.option(
    "--max-tool-calls", default=1_000, show_default=True, type=int, help="Per invocation; more are dropped, marked."
)
@click.option(
    "--online",
    "online_path",
    type=click.Path(path_type=Path),
    default=None,
    help="online.toml: score stored invocations as they arrive (metrics, sample, filters, references).",
)
def collect(
    store: str | None,
    host: str,
    http_port: int,
    grpc_port: int,
    token: str | None,
    max_body_bytes: int,
    max_in_flight: int,
    redact_keys: tuple[str, ...],
    redact_patterns: tuple[str, ...],
    no_redact: bool,
    max_attribute_length: int,
    max_spans_per_trace: int,
    max_tool_calls: int,
    online_path: Path | None,
) -> None:
    """Receive OTLP traces from agents in other processes and store their invocations.

    \b
        toolpath collect --store postgresql+psycopg://user@db/toolpath
        OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py

    A success reply means the spans are committed. SIGTERM or Ctrl-C stops accepting and finishes the
    requests in flight.
    """
    import signal
    import threading

    from toolpath.collector.receiver import Ingestor, make_grpc_server, make_http_server

    the_store = Store(store)
    online = None
    if online_path is not None:
        from toolpath.evaluators.online import OnlineEvaluator

        online = OnlineEvaluator(the_store, online_path).start()
    redactor = None if no_redact else _redactor(redact_keys, redact_patterns)
    from toolpath.collector.limits import Limits

    limits = Limits(max_attribute_length, max_spans_per_trace, max_tool_calls)
    ingestor = Ingestor(
        the_store,
        token=token,
        max_body_bytes=max_body_bytes,
        max_in_flight=max_in_flight,
        redactor=redactor,
        limits=limits,
    )
    stop = threading.Event()
    http_server = make_http_server(ingestor, host, http_port) if http_port else None
    grpc_server = make_grpc_server(ingestor, host, grpc_port) if grpc_port else None
    if http_server is None and grpc_server is None:
        raise ConfigError("both --http-port and --grpc-port are 0: nothing to listen on")
    if grpc_server is not None:
        grpc_server.start()
    if http_server is not None:
        threading.Thread(target=http_server.serve_forever, name="toolpath-http", daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    where = ", ".join(
        f"{kind} on {host}:{port}" for kind, port in (("OTLP/HTTP", http_port), ("OTLP/gRPC", grpc_port)) if port
    )
    console.print(f"toolpath collecting {where} into {ingestor.store.url}" + (" (token required)" if token else ""))
    if online is not None:
        console.print(f"online evaluation: {', '.join(online.config.metrics)} on {online.config.workers} worker(s)")
    stop.wait()
    if http_server is not None:
        http_server.shutdown()
        http_server.server_close()
    if grpc_server is not None:
        grpc_server.stop(grace=10).wait()
    if online is not None:
        online.stop()
        console.print(f"online: {online.stats.scored} invocation(s) scored, {online.queue.stats.shed} shed")
    hits = ", ".join(f"{what.replace('_', ' ')}: {n}" for what, n in sorted(limits.hits.items()))
    console.print(f"stopped; {ingestor.spans_stored} span(s) stored" + (f"; limits hit ({hits})" if hits else ""))


@cli.group()
def runs() -> None:
    """Evaluation runs saved in the store."""


@runs.command(name="list")
@store_option
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_list(store: str | None, limit: int, as_json: bool) -> None:
    """List evaluation runs, newest first, with their summaries."""
    from toolpath.display import runs_table

    _emit(_open_existing_store(store).list_eval_runs(limit=limit), as_json, runs_table)


@runs.command(name="show")
@click.argument("run_id")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_show(run_id: str, store: str | None, as_json: bool) -> None:
    """Show one evaluation run: its summary and every result row."""
    from toolpath.display import summary_table

    run = _open_existing_store(store).get_eval_run(run_id)
    if run is None:
        raise ConfigError(f"no evaluation run {run_id!r} in the store")
    if as_json:
        click.echo(json.dumps(run, indent=2, ensure_ascii=False, default=str))
        return
    names = sorted({k.rsplit("/", 1)[0] for k in run["summary"] if "/" in k})
    console.print(f"run {run['run_id']} ({run['kind']}) of {run['dataset']}, agent {run['agent'] or '-'}")
    console.print(summary_table(run["summary"], names, title=f"{run['row_count']} rows"))


@cli.group()
def sessions() -> None:
    """Browse what the store holds."""


@sessions.command(name="list")
@store_option
@click.option("--agent-name", default=None, help="Only sessions of this agent.")
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_list(store: str | None, agent_name: str | None, limit: int, as_json: bool) -> None:
    """List sessions, newest first."""
    from toolpath.display import sessions_table

    _emit(_open_existing_store(store).list_sessions(agent_name=agent_name, limit=limit), as_json, sessions_table)


@sessions.command(name="show")
@click.argument("session_id")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions_show(session_id: str, store: str | None, as_json: bool) -> None:
    """Show one session's invocations: prompt, tool calls, response, latency, failure."""
    from toolpath.display import session_table

    session = _open_existing_store(store).get_session(session_id)
    if session is None:
        raise ConfigError(f"no session {session_id!r} in the store")
    if as_json:
        data = session.model_dump(mode="json")
        for inv, dumped in zip(session.invocations, data["invocations"], strict=True):
            dumped["predicted_trajectory"] = inv.predicted_trajectory
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        console.print(session_table(session))


def _selection_options(fn: Any) -> Any:
    """--session / --since / --agent-name / --limit: which recorded sessions a command works on."""
    fn = click.option("--limit", type=int, default=None, help="At most this many sessions.")(fn)
    fn = click.option("--agent-name", default=None, help="Only sessions of this agent.")(fn)
    fn = click.option(
        "--since", type=click.DateTime(), default=None, help="Only sessions active since then (e.g. 2026-11-01)."
    )(fn)
    return click.option("--session", "session_ids", multiple=True, help="A recorded session id (repeatable).")(fn)


def _recorded(store: Store, session_ids: tuple[str, ...], since: Any, agent_name: str | None, limit: int | None):
    from datetime import UTC

    from toolpath.evaluators.replay import recorded_sessions

    since_utc = since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since
    sessions = recorded_sessions(store, session_ids=session_ids, agent_name=agent_name, since=since_utc, limit=limit)
    if not sessions:
        raise ConfigError(f"no recorded sessions in {store.url} match the selection")
    return sessions


@cli.command()
@click.option("--agent", "agent_ref", required=True, help="module:attr of the agent version to replay against.")
@store_option
@_selection_options
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

    from toolpath.display import replay_report
    from toolpath.evaluators.history import describe_target, save_replay_run
    from toolpath.evaluators.registry import split_metric_list
    from toolpath.evaluators.replay import DEFAULT_METRICS, replay_sessions

    the_store = _open_existing_store(store)
    sessions = _recorded(the_store, session_ids, since, agent_name, limit)
    metrics = split_metric_list(metrics_text) if metrics_text else list(DEFAULT_METRICS)
    limits = _thresholds(thresholds)
    agent = load_object(agent_ref)
    tracer.init(store=the_store)
    started = time.time_ns()
    with _progress(len(sessions), "replaying sessions", quiet) as advance:
        result = replay_sessions(sessions, agent, metrics=metrics, thresholds=limits, on_session=lambda _: advance())
    tracer.flush()
    save_replay_run(the_store, result, agent=describe_target(agent_ref), started_ns=started)
    if output is not None:
        output.write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    replay_report(console, result, quiet=quiet)
    if not result.passed:
        raise click.exceptions.Exit(1)


def _redactor(keys: tuple[str, ...], patterns: tuple[str, ...]) -> Any:
    import re

    from toolpath.redact import Redactor

    named = {}
    for item in patterns:
        name, eq, regex = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise ConfigError(f"--redact-pattern {item!r}: expected NAME=REGEX")
        try:
            re.compile(regex)
        except re.error as exc:
            raise ConfigError(f"--redact-pattern {name}: not a valid regular expression ({exc})") from None
        named[name.strip()] = regex
    return Redactor.build(keys, named)


def _thresholds(items: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--threshold {item!r}: expected metric=number") from None
        if not eq or not name.strip():
            raise ConfigError(f"--threshold {item!r}: expected metric=number")
    return out


@contextlib.contextmanager
def _progress(total: int, description: str, quiet: bool) -> Iterator[Callable[[], None]]:
    """A rich progress bar with rate and ETA (nothing with --quiet); yields the function that advances it."""
    if quiet:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.speed}/s"))
    with Progress(*columns, TimeRemainingColumn(), console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda: progress.advance(task)


@cli.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["evalset", "jsonl"]), required=True, help="Output format.")
@store_option
@_selection_options
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
    """Turn recorded sessions into an ADK eval set or Vertex-style JSONL, to run with `toolpath eval`.

    \b
        toolpath export --format evalset --agent-name support_bot --output support.evalset.json
        toolpath eval support.evalset.json --agent my_app.agent:answer
    """
    from toolpath.datasets.export import write_export

    sessions = _recorded(_open_existing_store(store), session_ids, since, agent_name, limit)
    turns = write_export(sessions, fmt, output, eval_set_id=eval_set_id)
    console.print(f"wrote {len(sessions)} session(s), {turns} turn(s) to {output}")


@cli.command()
@store_option
@click.option("--run", "run_id", default=None, help="An evaluation run id (toolpath runs list).")
@click.option("--replay", "replay_id", default=None, help="A replay id (printed by toolpath replay).")
@click.option("--html", "html_path", type=click.Path(path_type=Path), required=True, help="HTML file to write.")
def report(store: str | None, run_id: str | None, replay_id: str | None, html_path: Path) -> None:
    """Write one self-contained HTML report of an evaluation run or a replay.

    \b
        toolpath report --run 1a2b3c4d5e6f --html report.html
    """
    from toolpath.report import render_report

    if (run_id is None) == (replay_id is None):
        raise ConfigError("give exactly one of --run ID or --replay ID")
    the_store = _open_existing_store(store)
    run = the_store.get_eval_run(run_id or replay_id or "")
    if run is None:
        raise ConfigError(f"no {'run' if run_id else 'replay'} {run_id or replay_id!r} in {the_store.url}")
    if replay_id and run["kind"] != "replay":
        raise ConfigError(f"{replay_id!r} is a {run['kind']} run, not a replay (use --run)")
    html_path.write_text(render_report(run), encoding="utf-8")
    console.print(f"wrote {html_path} ({run['kind']} {run['run_id']}, {run['row_count']} row(s))")


@cli.command()
@store_option
@click.option("--interval", default=1.0, show_default=True, type=float, help="Seconds between looks at the store.")
@click.option("--limit", default=20, show_default=True, type=int, help="Rows kept on screen.")
@click.option("--once", is_flag=True, help="Print what is there now and exit.")
def watch(store: str | None, interval: float, limit: int, once: bool) -> None:
    """Live table of invocations as the online evaluator scores them (Ctrl-C to stop)."""
    import time

    from rich.live import Live

    from toolpath.collector.jobs import latest_scored
    from toolpath.display import watch_table

    the_store = _open_existing_store(store)
    rows = latest_scored(the_store, limit=limit)
    if once:
        console.print(watch_table(rows))
        return
    try:
        with Live(watch_table(rows), console=console, refresh_per_second=4) as live:
            while True:
                time.sleep(interval)
                newer = latest_scored(the_store, after_ns=rows[-1]["scored_at"] if rows else 0, limit=limit)
                rows = (rows + newer)[-limit:]
                live.update(watch_table(rows))
    except KeyboardInterrupt:
        return


@cli.group()
def db() -> None:
    """The store's schema (Alembic migrations; opening a store also upgrades it)."""


@db.command(name="upgrade")
@store_option
@click.option("--revision", default="head", show_default=True, help="Alembic revision to upgrade to.")
def db_upgrade(store: str | None, revision: str) -> None:
    """Create the store's tables, or bring them to the newest schema."""
    from sqlalchemy.exc import OperationalError

    from toolpath.collector import migrate
    from toolpath.collector.store import Store

    the_store = Store(store, create=False)
    try:
        reached = migrate.upgrade(the_store.engine, revision)
    except OperationalError as exc:
        raise ConfigError(f"store {the_store.url}: cannot open ({exc.orig})") from None
    click.echo(f"{the_store.url}: schema at revision {reached} (newest: {migrate.HEAD})")


@db.command(name="current")
@store_option
def db_current(store: str | None) -> None:
    """Print the store's schema revision."""
    from toolpath.collector import migrate

    the_store = _open_existing_store(store, create=False)
    with the_store.engine.connect() as conn:
        current = migrate.current_revision(conn)
    click.echo(f"{the_store.url}: schema at revision {current or 'none'} (newest: {migrate.HEAD})")


def _print_run_line(result: Any, output: Path | None) -> None:
    usage = result.judge_usage
    if usage:
        console.print(
            f"judge: {usage['requests']} request(s), {usage['cached']} from the cache, {usage['retries']} retried, "
            f"{usage['errors']} failed, {usage['over_budget']} over budget; "
            f"{usage['input_tokens']} input and {usage['output_tokens']} output token(s)"
        )
    console.print(f"run {result.run_id}" + (f": results written to {output}" if output else ""))


def _emit(rows: Any, as_json: bool, render: Any) -> None:
    """Print ``rows`` as JSON, or as the table ``render`` makes of them."""
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
    else:
        console.print(render(rows))


def _open_existing_store(url: str | None, *, create: bool = True) -> Store:
    resolved = resolve_store_url(url)
    if resolved.startswith("sqlite:///") and not resolved.endswith(":memory:"):
        path = Path(resolved.removeprefix("sqlite:///"))
        if not path.exists():
            raise ConfigError(f"store {path} does not exist (run `toolpath demo`, or set --store / ${STORE_ENV})")
    return Store(resolved, create=create)


def load_object(reference: str) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted); the working directory is importable."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--agent {reference!r}: expected module:attribute, e.g. my_app.agent:answer")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--agent {reference!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"--agent {reference!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def main(argv: list[str] | None = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="toolpath", standalone_mode=False)
        if isinstance(code, int) and code:  # an Exit raised inside a command comes back as a return value
            sys.exit(code)
    except ToolpathError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    finally:
        tracer.shutdown()


if __name__ == "__main__":
    main()
