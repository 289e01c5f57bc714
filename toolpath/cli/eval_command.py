"""``toolpath eval``: score a dataset, eval sets or recorded traffic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolpath import tracing
from toolpath.cli.adk_eval_sets import eval_from_results, run_eval_sets
from toolpath.cli.agents import load_agent
from toolpath.cli.options import IsoTime, open_existing_store, parse_thresholds, store_option, writable
from toolpath.cli.output import console, print_run_line, progress, styled
from toolpath.config import DEFAULT_STORE_URL
from toolpath.errors import ConfigError
from toolpath.store.store import Store, resolve_store_url


@click.command(name="eval")
@click.argument("dataset", type=click.Path(path_type=Path), required=False)
@click.option("--from-store", "from_store", is_flag=True, help="Score recorded invocations from the store.")
@click.option(
    "--from-spans",
    "from_spans",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Score an eval set against these trace files (OTLP/JSON lines, OTLP protobuf, Jaeger JSON; repeat).",
)
@click.option(
    "--match",
    type=click.Choice(["id", "exact", "normalized"]),
    default=None,
    help="Eval set against recorded traffic: pair cases by session id only (default), or also by user text.",
)
@click.option(
    "--each", is_flag=True, help="Eval set against recorded traffic: score a case on each session it pairs with."
)
@click.option("--since", type=IsoTime(), default=None, help="Recorded traffic: only sessions active since then (UTC).")
@click.option(
    "--otlp-endpoint",
    default=None,
    help="Eval set against recorded traffic: also send each result as a gen_ai.evaluation.result event to this "
    "OTLP/HTTP endpoint (http://host:4318), parented to the evaluated span.",
)
@click.option(
    "--session-attribute",
    "session_attributes",
    multiple=True,
    help="Eval set against recorded traffic: only sessions whose turns carry KEY=VALUE (repeat).",
)
@click.option("--agent-name", default=None, help="With --from-store: only this agent's invocations.")
@click.option("--session", "session_id", default=None, help="With --from-store: only this session.")
@click.option(
    "--limit", default=None, type=click.IntRange(min=1), help="With --from-store: at most this many invocations."
)
@click.option(
    "--metrics",
    "metrics_text",
    default=None,
    help="Comma-separated metrics for a JSONL/CSV dataset, e.g. trajectory_exact_match,"
    "trajectory_single_tool_use(tool_name=get_weather).",
)
@click.option(
    "--agent",
    "agent_ref",
    default=None,
    help="The agent to run (required for eval sets): module:attr, or an ADK agent module or folder (its root_agent).",
)
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None, help="test_config.json.")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(min=1), help="Runs of each eval case.")
@click.option(
    "--fresh",
    is_flag=True,
    help="Simulated users (conversation_scenario cases) ask their model again instead of replaying the store's "
    "cached replies.",
)
@click.option(
    "--from-results",
    "from_results",
    type=click.Path(path_type=Path),
    default=None,
    help="Score ADK's recorded *.evalset_result.json (a file, or a folder such as .adk/eval_history) instead of "
    "running an agent; DATASET, if given, is the eval set to judge them against.",
)
@click.option(
    "--adk-history",
    "adk_history",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also save the eval-set results as ADK's eval history of this ADK app folder (APP/.adk/eval_history/).",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    help="metric=value: exit 1 when the metric's mean misses it (repeat); without one, a metric's own pass mark.",
)
@click.option(
    "--strip-tool-prefix",
    "strip_prefixes",
    multiple=True,
    help="Compare tool names without this prefix, predicted and reference alike (an MCP server's prefix; repeat).",
)
@click.option("--output", type=click.Path(path_type=Path), default=None, help="Write results as JSON here.")
@click.option("--no-cache", is_flag=True, help="Ask the judge model again: do not read or keep cached replies.")
@click.option("--quiet", is_flag=True, help="Print only the summary line.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Exit 0 when nothing was checked (a dataset without rows, an eval set without cases, a metric that scored "
    "no row); by default such a run fails: a green run must have checked something.",
)
@store_option
def eval_command(
    dataset: Path | None,
    from_store: bool,
    from_spans: tuple[Path, ...],
    match: str | None,
    each: bool,
    since: Any,
    otlp_endpoint: str | None,
    session_attributes: tuple[str, ...],
    agent_name: str | None,
    session_id: str | None,
    limit: int | None,
    metrics_text: str | None,
    agent_ref: str | None,
    config_path: Path | None,
    runs: int,
    fresh: bool,
    from_results: Path | None,
    adk_history: Path | None,
    thresholds: tuple[str, ...],
    strip_prefixes: tuple[str, ...],
    output: Path | None,
    no_cache: bool,
    quiet: bool,
    allow_empty: bool,
    store: str | None,
) -> None:
    """Score a JSONL/CSV/JSON dataset with metrics, or run ADK eval sets against an agent.

    \b
        toolpath eval cases.jsonl --metrics trajectory_exact_match,trajectory_recall
        toolpath eval cases.jsonl --metrics trajectory_recall --threshold trajectory_recall=0.9
        toolpath eval cases.csv --metrics trajectory_precision --agent my_app.agent:answer
        toolpath eval tests/weather.evalset.json --agent my_app.agent:root_agent --runs 3
        toolpath eval home_agent/ --agent home_agent
        toolpath eval tests/weather.evalset.json:case_a,case_b --agent my_app.agent:root_agent
        toolpath eval --from-results my_app/.adk/eval_history --config tests/test_config.json
        toolpath eval --from-store --agent-name support_bot --metrics tool_loop_detected,error_recovery
        toolpath eval tests/weather.evalset.json --from-store --match normalized --since 2026-11-01
        toolpath eval tests/weather.evalset.json --from-spans otel-traces.jsonl

    Eval sets (*.evalset.json, legacy *.test.json, or a folder of them; FILE:case_a,case_b picks cases) are
    judged by the criteria of the test_config.json beside them (or --config); the command exits 1 when a case
    fails. A dataset's summary shows how many rows each metric scored and why the others were not; the command
    exits 1 when a metric scored no row at all, or when a metric's mean misses its --threshold (else its own
    pass mark, as `toolpath metrics` lists it). An eval set with --from-store or --from-spans is scored against
    recorded sessions, each case paired by session id (or by user text with --match): nothing is run, and the
    command exits 1 when a case failed or paired with no session (or several, without --each). Without a store
    (--store, $TOOLPATH_STORE, or --agent's default), nothing is kept.
    """
    from toolpath.evaluation.evalsets.files import EVALSET_SUFFIX, LEGACY_SUFFIX, split_selector

    writable(output, "--output")
    limits = parse_thresholds(thresholds)
    if store is not None:
        resolve_store_url(store)  # a bad --store is an error now, not after the work
    if not from_store and not from_spans and (agent_name or session_id or limit is not None):
        given = [o for o, v in (("--agent-name", agent_name), ("--session", session_id), ("--limit", limit)) if v]
        raise ConfigError(
            f"{', '.join(given)}: only with --from-store or --from-spans (they pick recorded traffic to score)"
        )
    if strip_prefixes and (
        from_spans or from_results is not None or (dataset is not None and _names_eval_sets(dataset))
    ):
        raise ConfigError("--strip-tool-prefix applies to a dataset's or --from-store's metrics; eval sets compare "
                          "tool names as ADK does")  # fmt: skip
    if any(not prefix.strip() for prefix in strip_prefixes):
        raise ConfigError("--strip-tool-prefix: a prefix must not be empty")
    if from_spans or (from_store and dataset is not None and _names_eval_sets(dataset)):
        _eval_sets_recorded(dataset, from_store, from_spans, match, each, since, session_attributes, agent_name,
                            session_id, limit, metrics_text, agent_ref, config_path, runs, fresh, from_results,
                            thresholds, output, adk_history, quiet, no_cache, store, otlp_endpoint)  # fmt: skip
        return
    if match or each or session_attributes or otlp_endpoint or (since and not from_store):
        raise ConfigError(
            "--match, --each, --session-attribute and --otlp-endpoint apply to an eval set scored against recorded "
            "traffic: give an eval "
            "set with --from-store or --from-spans (--since: with --from-store)"
        )
    if from_store:
        if dataset is not None or agent_ref or from_results is not None:
            raise ConfigError("--from-store scores recorded traffic: give no DATASET, --agent or --from-results")
        if not metrics_text:
            raise ConfigError("--metrics is required")
        _eval_recorded(
            store, metrics_text, agent_name, session_id, limit, output, quiet, no_cache, limits, since, strip_prefixes,
            allow_empty,
        )  # fmt: skip
        return
    base, case_ids = split_selector(dataset) if dataset is not None else ("", None)
    is_eval_set = dataset is not None and (Path(base).is_dir() or base.endswith((EVALSET_SUFFIX, LEGACY_SUFFIX)))
    if dataset is not None and not is_eval_set and case_ids is not None:
        raise ConfigError(f"{dataset}: a case selector (:case_a,case_b) picks cases of an eval set file")
    if limits and (from_results is not None or is_eval_set):
        raise ConfigError("--threshold gates a dataset's metrics; eval sets are judged by their criteria' thresholds")
    if from_results is not None:
        if agent_ref or metrics_text or runs != 1 or fresh:
            raise ConfigError("--from-results scores what ADK recorded: give no --agent, --metrics, --runs or --fresh")
        if dataset is not None and not is_eval_set:
            raise ConfigError(f"{dataset}: with --from-results, DATASET is the eval set (*.evalset.json, *.test.json)")
        eval_from_results(from_results, dataset, config_path, output, adk_history, quiet, store)
        return
    if dataset is None:
        raise ConfigError("give a DATASET file or folder, --from-results or --from-store")
    store_url = store if store or not agent_ref else DEFAULT_STORE_URL  # an agent's runs are traced into a store
    if fresh and not is_eval_set:
        raise ConfigError("--fresh applies to eval sets with conversation_scenario cases (simulated users)")
    if is_eval_set:
        if metrics_text:
            raise ConfigError("eval sets are judged by their criteria: give --config test_config.json, not --metrics")
        run_eval_sets(
            dataset, agent_ref, config_path, runs, output, adk_history, quiet, store_url, no_cache, fresh, allow_empty
        )
    else:
        if not metrics_text:
            raise ConfigError("--metrics is required for a dataset (JSONL, CSV or JSON)")
        if config_path is not None or runs != 1 or adk_history is not None:
            raise ConfigError("--config, --runs and --adk-history apply to eval sets (*.evalset.json, *.test.json)")
        _eval_dataset(
            dataset, metrics_text, agent_ref, output, quiet, store_url, no_cache, limits, strip_prefixes, allow_empty
        )


def _names_eval_sets(dataset: Path) -> bool:
    from toolpath.evaluation.evalsets.files import EVALSET_SUFFIX, LEGACY_SUFFIX, split_selector

    base = split_selector(dataset)[0]
    return Path(base).is_dir() or base.endswith((EVALSET_SUFFIX, LEGACY_SUFFIX))


def _eval_sets_recorded(
    dataset: Path | None, from_store: bool, from_spans: tuple[Path, ...], match: str | None, each: bool, since: Any,
    session_attributes: tuple[str, ...], agent_name: str | None, session_id: str | None, limit: int | None,
    metrics_text: str | None, agent_ref: str | None, config_path: Path | None, runs: int, fresh: bool,
    from_results: Path | None, thresholds: tuple[str, ...], output: Path | None, adk_history: Path | None,
    quiet: bool, no_cache: bool, store: str | None, otlp_endpoint: str | None = None,
) -> None:  # fmt: skip
    """An eval set scored against recorded sessions (the store's, or trace files'): nothing is run."""
    from toolpath.cli.eval_recorded import RecordedSelection, eval_recorded_sets

    source = "--from-spans" if from_spans else "--from-store"
    if from_spans and from_store:
        raise ConfigError("give --from-store (the store's sessions) or --from-spans FILE (trace files), not both")
    if dataset is None or not _names_eval_sets(dataset):
        raise ConfigError(f"{source} with a DATASET scores an eval set (*.evalset.json, *.test.json, or a folder)")
    if agent_ref or metrics_text or runs != 1 or fresh or from_results is not None or thresholds or limit:
        raise ConfigError(
            f"{source} scores recorded traffic by the eval set's criteria: give no --agent, --metrics, --runs, "
            "--fresh, --from-results, --threshold or --limit"
        )
    selection = RecordedSelection(
        match or "id", each, agent_name, since, session_attributes, (session_id,) if session_id else ()
    )
    eval_recorded_sets(
        dataset, config_path=config_path, store_url=store, from_spans=from_spans, selection=selection,
        output=output, adk_history=adk_history, quiet=quiet, no_cache=no_cache, otlp_endpoint=otlp_endpoint,
    )  # fmt: skip


def _finish(
    result: Any,
    output: Path | None,
    quiet: bool,
    title: str,
    stored: bool,
    limits: dict[str, float],
    allow_empty: bool = False,
) -> None:
    """Write the results, print the summary (rows scored per metric, and why not), the run line; exit 1 when a
    metric scored no row (nothing was checked; unless ``allow_empty``) or a mean missed its threshold (the summary
    names which)."""
    from toolpath.cli.display import not_scored, print_summary, summary_line
    from toolpath.evaluation.gates import missed_gates

    if output is not None:
        result.write_json(output)
    names, table = result.metric_names, result.metrics_table
    empty = [n for n in names if all(row.get(f"{n}/score") is None for row in table)]
    if quiet:
        console.print(summary_line(result.summary_metrics, names, table, title), highlight=False)
        for line in not_scored(table, empty):
            console.print(f"not scored {line}", highlight=False)
    else:
        print_summary(console, result.summary_metrics, names, table, title)
    print_run_line(result, output, stored=stored)
    missed = missed_gates(result.summary_metrics, names, result.rules, limits)
    for gate in missed:
        console.print(styled(("FAILED", "red"), f" {gate.describe()}"))
    if empty:
        console.print(styled(("FAILED", "red") if not allow_empty else ("allowed", "yellow"),
                             f" nothing scored by: {', '.join(empty)}"))  # fmt: skip
    if (empty and not allow_empty) or missed:
        raise click.exceptions.Exit(1)


def _eval_recorded(
    store_url: str | None,
    metrics_text: str,
    agent_name: str | None,
    session_id: str | None,
    limit: int | None,
    output: Path | None,
    quiet: bool,
    no_cache: bool,
    limits: dict[str, float],
    since: Any = None,
    strip_prefixes: tuple[str, ...] = (),
    allow_empty: bool = False,
) -> None:
    from datetime import UTC

    from toolpath.evaluation.catalog import resolve_metric
    from toolpath.evaluation.gates import check_gate_names
    from toolpath.evaluation.recorded import rows_from_store
    from toolpath.evaluation.runner import check_names, evaluate
    from toolpath.evaluation.scoring import prepare_judge
    from toolpath.metrics.base import split_metric_list

    metrics = [resolve_metric(spec) for spec in split_metric_list(metrics_text)]
    check_gate_names(limits, check_names(metrics))
    judge = prepare_judge(metrics)  # no credentials: an error now, not after the work
    store = open_existing_store(store_url, writing="toolpath eval stores its run in it")
    since = since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since
    rows = rows_from_store(store, session_id=session_id, agent_name=agent_name, since=since, limit=limit)
    if not rows:
        raise ConfigError(f"no recorded invocations in {store.url} match the filters")
    if judge is not None and not no_cache:
        judge.cache = store
    result = evaluate(rows, metrics, store=store, judge=judge, strip_tool_prefix=strip_prefixes)
    _finish(result, output, quiet, f"{len(rows)} recorded invocations", True, limits, allow_empty)


def _eval_dataset(
    dataset: Path,
    metrics_text: str,
    agent_ref: str | None,
    output: Path | None,
    quiet: bool,
    store_url: str | None,
    no_cache: bool,
    limits: dict[str, float],
    strip_prefixes: tuple[str, ...] = (),
    allow_empty: bool = False,
) -> None:
    from toolpath.datasets import load_rows
    from toolpath.evaluation.catalog import resolve_metric
    from toolpath.evaluation.gates import check_gate_names
    from toolpath.evaluation.runner import MEASURED, check_names, evaluate
    from toolpath.evaluation.scoring import prepare_judge
    from toolpath.metrics.base import split_metric_list

    # everything that can be wrong is checked before the store is opened and any agent runs
    metrics = [resolve_metric(spec) for spec in split_metric_list(metrics_text)]
    if not metrics:
        raise ConfigError("--metrics names no metric")
    names = check_names(metrics)
    check_gate_names(limits, [*names, *(MEASURED if agent_ref else ())])
    rows = load_rows(dataset)  # a dataset without rows is bad input (exit 2), said by the loader
    runnable = load_agent(agent_ref) if agent_ref else None
    judge = prepare_judge(metrics)  # no credentials: an error now, not after the agent ran
    store = Store(store_url, writing="toolpath eval stores its run in it") if store_url else None
    if judge is not None and store is not None and not no_cache:
        judge.cache = store
    if runnable is not None:
        tracing.init(store=store)
    with progress(len(rows), "running the agent" if runnable else "scoring rows", quiet) as bar:

        def scored(*_: Any) -> None:  # the agent's runs are done: the bar starts again for the scoring
            bar.phase("scoring rows", len(rows))
            bar.advance()

        result = evaluate(
            rows,
            metrics,
            runnable=runnable,
            store=store,
            judge=judge,
            on_agent_run=bar.advance,
            on_row=scored,
            dataset_name=str(dataset),
            strip_tool_prefix=strip_prefixes,
        )
    tracing.flush()
    title = f"{dataset} ({len(result.metrics_table)} rows)"
    _finish(result, output, quiet, title, store is not None, limits, allow_empty)
