"""``toolpath eval``: score a dataset, eval sets or recorded traffic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolpath import setup
from toolpath.cli.common import console, load_agent, open_existing_store, print_run_line, progress, store_option
from toolpath.errors import ConfigError
from toolpath.store.store import Store


@click.command(name="eval")
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
@click.option(
    "--agent",
    "agent_ref",
    default=None,
    help="The agent to run (required for eval sets): module:attr, or an ADK agent module or folder (its root_agent).",
)
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
        toolpath eval home_agent/ --agent home_agent
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
    if is_eval_set:
        if metrics_text:
            raise ConfigError("eval sets are judged by their criteria: give --config test_config.json, not --metrics")
        if not agent_ref:
            raise ConfigError("--agent module:attr is required to run eval sets (or an ADK agent module or folder)")
    else:
        if not metrics_text:
            raise ConfigError("--metrics is required for a JSONL or CSV dataset")
        if config_path is not None or runs != 1:
            raise ConfigError("--config and --runs apply to eval sets (*.evalset.json, *.test.json)")
    agent = load_agent(agent_ref) if agent_ref else None  # before any store is created
    the_store = Store(store) if agent_ref or store else None
    if is_eval_set:
        _eval_sets(dataset, agent, config_path, runs, output, quiet, the_store)
    else:
        _eval_dataset(dataset, metrics_text or "", agent, output, quiet, the_store)


def _eval_recorded(
    store_url: str | None,
    metrics_text: str,
    agent_name: str | None,
    session_id: str | None,
    limit: int | None,
    output: Path | None,
    quiet: bool,
) -> None:
    from toolpath.cli.display import summary_table
    from toolpath.evaluation.catalog import resolve_metric
    from toolpath.evaluation.recorded import rows_from_store
    from toolpath.evaluation.runner import evaluate
    from toolpath.evaluators.metrics.registry import split_metric_list

    store = open_existing_store(store_url)
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
    print_run_line(result, output)


def _eval_dataset(
    dataset: Path, metrics_text: str, runnable: Any, output: Path | None, quiet: bool, store: Store | None
) -> None:
    from toolpath.cli.display import summary_table
    from toolpath.evaluation.catalog import resolve_metric
    from toolpath.evaluation.runner import evaluate
    from toolpath.evaluators.metrics.registry import split_metric_list

    metrics = [resolve_metric(spec) for spec in split_metric_list(metrics_text)]
    if not metrics:
        raise ConfigError("--metrics names no metric")
    if runnable is not None:
        setup.init(store=store)
    from toolpath.datasets import load_rows

    rows = load_rows(dataset)
    with progress(len(rows), "scoring rows", quiet) as advance:
        result = evaluate(
            rows, metrics, runnable=runnable, store=store, on_row=lambda *_: advance(), dataset_name=str(dataset)
        )
    setup.flush()
    if output is not None:
        result.write_json(output)
    if not quiet:
        title = f"{dataset} ({len(result.metrics_table)} rows)"
        console.print(summary_table(result.summary_metrics, result.metric_names, title=title))
    print_run_line(result, output)


def _eval_sets(
    path: Path,
    agent: Any,
    config_path: Path | None,
    runs: int,
    output: Path | None,
    quiet: bool,
    store: Store | None,
) -> None:
    from toolpath.cli.display import eval_set_report
    from toolpath.datasets.adk import load_criteria, load_eval_sets
    from toolpath.evaluation.evalset import evaluate_eval_sets

    eval_sets = load_eval_sets(path)
    criteria = load_criteria(config_path) if config_path else None
    setup.init(store=store)
    total = sum(len(eval_set.cases) for eval_set in eval_sets)
    with progress(total, "running eval cases", quiet) as advance:
        result = evaluate_eval_sets(
            eval_sets, agent, runs=runs, criteria=criteria, store=store, on_case=lambda _: advance()
        )
    setup.flush()
    if output is not None:
        output.write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    eval_set_report(console, result, quiet=quiet)
    if not result.passed:
        raise click.exceptions.Exit(1)
