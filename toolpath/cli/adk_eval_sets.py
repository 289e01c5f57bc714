"""ADK eval sets as ``toolpath eval`` runs them: against an agent (``_eval_sets``), or ADK's recorded results
scored again (``--from-results``); their results written as JSON and as ADK's eval history."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from toolpath import tracing
from toolpath.cli.agents import load_agent
from toolpath.cli.output import console, progress, styled
from toolpath.errors import ConfigError
from toolpath.private_files import write_private
from toolpath.store.store import Store


def _nothing_to_check(what: str, allow_empty: bool) -> None:
    """A run that would check nothing (``what`` says why): exit 1 with the reason, or 0 with ``--allow-empty``;
    said before a store is opened or made."""
    if allow_empty:
        console.print(f"nothing checked: {what} (--allow-empty)", highlight=False)
        raise click.exceptions.Exit(0)
    console.print(styled(("FAILED", "red"), f" nothing checked: {what}; --allow-empty lets such a run pass"))
    raise click.exceptions.Exit(1)


def run_eval_sets(
    path: Path,
    agent_ref: str | None,
    config_path: Path | None,
    runs: int,
    output: Path | None,
    adk_history: Path | None,
    quiet: bool,
    store_url: str | None,
    no_cache: bool,
    fresh: bool = False,
    allow_empty: bool = False,
) -> None:
    from toolpath.cli.evalset_display import eval_set_report
    from toolpath.evaluation.evalsets.evaluator import check_runnable, criteria_of, evaluate_eval_sets
    from toolpath.judges.client import Judge, settings_from
    from toolpath.judges.vertex import JudgeMetric

    if not agent_ref:
        raise ConfigError("--agent module:attr is required to run eval sets (or an ADK agent module or folder)")
    _importable_cwd()
    eval_sets = _load_eval_sets(path, config_path)
    if not any(eval_set.cases for eval_set in eval_sets):
        _nothing_to_check(f"{path} holds no eval case", allow_empty)
    judge = Judge(settings_from(None), cache=None) if no_cache else None  # default: the store caches replies
    plans = [criteria_of(eval_set) for eval_set in eval_sets]
    for eval_set, plan in zip(eval_sets, plans, strict=True):  # all checked before the agent is imported or a file made
        check_runnable(eval_set, plan)
    simulated = any(case.conversation_scenario is not None for eval_set in eval_sets for case in eval_set.cases)
    if simulated or any(isinstance(c.metric, JudgeMetric) for plan in plans for c in plan.values()):
        (judge or Judge(settings_from(None), cache=None)).connect()  # no credentials: an error before the store
    agent = load_agent(agent_ref)
    store = Store(store_url, writing="toolpath eval stores its run in it") if store_url else None
    tracing.init(store=store)
    total = sum(len(eval_set.cases) for eval_set in eval_sets)
    with progress(total, "running eval cases", quiet) as bar:
        result = evaluate_eval_sets(
            eval_sets, agent, runs=runs, store=store, on_case=bar.advance, judge=judge, fresh=fresh
        )
    tracing.flush()
    _write(result, output, adk_history)
    eval_set_report(console, result, quiet=quiet)
    if not result.passed:
        raise click.exceptions.Exit(1)


def eval_from_results(
    results_path: Path,
    dataset: Path | None,
    config_path: Path | None,
    output: Path | None,
    adk_history: Path | None,
    quiet: bool,
    store_url: str | None,
) -> None:
    from toolpath.cli.evalset_display import eval_set_report
    from toolpath.evaluation.evalsets.evaluator import save_evalset_run
    from toolpath.evaluation.evalsets.files import load_config
    from toolpath.evaluation.evalsets.history import score_recorded
    from toolpath.evaluation.evalsets.result_files import load_results

    _importable_cwd()
    recorded = load_results(results_path)
    eval_sets = _load_eval_sets(dataset, config_path) if dataset is not None else []
    config = load_config(config_path) if config_path is not None else None
    started_ns = time.time_ns()
    store = Store(store_url, writing="toolpath eval stores its run in it") if store_url else None
    result = score_recorded(recorded, eval_sets=eval_sets, config=config, store=store)
    if store is not None:
        save_evalset_run(
            store,
            result,
            dataset=f"{results_path}" + (f" against {dataset}" if dataset else ""),
            agent=None,
            criteria=config.criteria if config is not None else {str(s.path): s.criteria for s in eval_sets} or None,
            started_ns=started_ns,
        )
    _write(result, output, adk_history)
    eval_set_report(console, result, quiet=quiet)
    if not result.passed:
        raise click.exceptions.Exit(1)


def _load_eval_sets(path: Path, config_path: Path | None) -> list[Any]:
    from toolpath.evaluation.evalsets.files import load_eval_sets

    return load_eval_sets(path, config_path)


def _importable_cwd() -> None:
    """ADK custom metrics (``module.function``) are imported with the working directory importable."""
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))


def _write(result: Any, output: Path | None, adk_history: Path | None) -> None:
    if output is not None:
        write_private(output, json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    if adk_history is not None:
        from toolpath.evaluation.evalsets.history import write_adk_history

        for written in write_adk_history(result, adk_history):
            console.print(f"ADK eval history: {written}", highlight=False)
