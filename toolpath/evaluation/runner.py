"""``toolpath.evaluate``: score a dataset with metrics, optionally running an agent on each prompt first."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpath import tracing
from toolpath.config import INTERRUPT_GRACE_SECONDS
from toolpath.datasets import read_rows
from toolpath.errors import ConfigError, DatasetError, Interrupted, MetricError
from toolpath.evaluation.agent_runs import AgentOutcome, run_agent
from toolpath.evaluation.catalog import pass_rules, resolve_metric
from toolpath.evaluation.like_with_like import produced_views, store_redactor
from toolpath.evaluation.outcome_rows import outcome_row, scored_row
from toolpath.evaluation.scoring import prepare_judge, score_views
from toolpath.evaluation.targets import describe_target, resolve_target
from toolpath.evaluation.tool_names import check_prefixes, strip_views
from toolpath.evaluation.verdicts import RunKind
from toolpath.judges.client import Judge, JudgeSettings
from toolpath.metrics.base import Metric
from toolpath.private_files import write_private
from toolpath.store.store import Store
from toolpath.tracer import content

__all__ = ["EvalResult", "evaluate"]

MEASURED = ("latency_in_seconds", "failure")


@dataclass
class EvalResult:
    """``summary_metrics``: ``row_count``, ``{metric}/mean``, ``{metric}/std``; ``metrics_table``: one row per
    instance with its input columns, ``{metric}/score`` and ``{metric}/explanation`` (docs/spec.md §5)."""

    summary_metrics: dict[str, Any]
    metrics_table: list[dict[str, Any]]
    metric_names: list[str] = field(default_factory=list)
    run_id: str = ""
    judge_usage: dict[str, int] | None = None
    """Requests, cache hits, retries, errors and tokens of the judge model, when judge metrics ran."""
    rules: dict[str, Any] = field(default_factory=dict)
    """Per metric, how a score passes (:func:`toolpath.evaluation.catalog.passes`'s arguments)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"summary_metrics": self.summary_metrics, "metrics_table": self.metrics_table}
        if self.judge_usage is not None:
            out["judge_usage"] = self.judge_usage
        return out

    def write_json(self, path: str | Path) -> None:
        write_private(path, json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")

    def to_pandas(self) -> Any:
        import pandas as pd  # optional

        return pd.DataFrame(self.metrics_table)


def evaluate(
    dataset: Any,
    metrics: Sequence[str | Metric | Callable[..., Any]],
    runnable: Any = None,
    *,
    metric_column_mapping: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
    store: Any = None,
    concurrency: int = 8,
    judge: Judge | JudgeSettings | None = None,
    dataset_name: str | None = None,
    on_agent_run: Callable[[int], None] | None = None,
    run_id: str | None = None,
    experiment: str | None = None,
    strip_tool_prefix: str | Sequence[str] | None = None,
) -> EvalResult:
    """Score every row of ``dataset`` with ``metrics``.

    With ``runnable`` (an ``@agent`` function or any callable taking the prompt), each row's ``prompt`` is sent
    to the agent under tracing, and ``response``, ``predicted_trajectory``, ``latency_in_seconds`` and
    ``failure`` are filled from what was traced; ``latency_in_seconds`` and ``failure`` are then scored too.
    Up to ``concurrency`` rows run at once (each its own traced run; use 1 for an agent that is not
    thread-safe). With ``store`` (a :class:`~toolpath.store.store.Store`), the run and its rows are saved.

    Judge metrics (``fluency``, ``final_response_match_v2``…) are asked of the judge model for all rows at once,
    through ``judge`` (a :class:`Judge` or :class:`JudgeSettings`; by default settings from the environment, with
    the store as the reply cache; a :class:`Judge` keeps its own cache, ``None`` for none). Missing judge
    credentials are an error before any agent runs.

    ``on_agent_run(index)`` is called as each row's agent run ends, ``on_row(index, row)`` as each row is scored.

    ``run_id`` names the run (default: a random id); with ``store``, an id the store already holds is an error
    before anything runs. ``experiment`` is saved with the run (Vertex AI's experiment: runs of one name).

    ``strip_tool_prefix`` (a prefix or several): tool names are compared without it, on the predicted and the
    reference side alike — an MCP server's tools that the agent saw as ``weather_get_forecast`` match a reference's
    ``get_forecast``. Without it names are compared as the agent saw them.
    """
    prefixes = check_prefixes(strip_tool_prefix)
    if isinstance(metrics, str | Metric | Mapping) or callable(metrics) or not isinstance(metrics, Iterable):
        raise ConfigError(
            f"metrics must be a list of metrics (names, Metric objects or callables), got {type(metrics).__name__}"
            + (f": did you mean [{metrics!r}]?" if isinstance(metrics, str) else "")
        )
    metrics = list(metrics)
    if not metrics:
        raise ConfigError("metrics is empty: name at least one metric to score (toolpath.metric_names() lists them)")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    if store is not None and not isinstance(store, Store):
        raise ConfigError(
            f"store= takes a Store (toolpath.Store({store!r}) for a database URL), got {type(store).__name__}"
        )
    if run_id is not None and (not run_id or len(run_id) > 64):
        raise ConfigError(f"run id must be 1 to 64 characters, got {run_id!r}")
    if experiment is not None and store is None:
        raise ConfigError("experiment= needs store=: an experiment's runs are kept in the store")
    if run_id is not None and store is not None and store.get_eval_run(run_id) is not None:
        raise ConfigError(f"the store already holds a run {run_id!r}; name this one differently")
    started_ns = time.time_ns()
    parsed_rows = read_rows(dataset, metric_column_mapping)
    if runnable is not None:
        parsed_rows = iter(list(parsed_rows))  # every row is read and checked before any agent runs
    resolved = [resolve_metric(m) for m in metrics]
    run_id = run_id or uuid.uuid4().hex[:12]
    if runnable is not None:
        resolved += [resolve_metric(name) for name in MEASURED if name not in {m.name for m in resolved}]
    names = check_names(resolved)
    connected = prepare_judge(resolved, judge, store)
    if runnable is not None:
        rows = [row for row, _ in parsed_rows]
        produced: dict[int, dict[str, Any]] = {}  # the agent's values before redaction, by row: in memory only
        with resolve_target(runnable) as target:
            _run_rows(rows, target, run_id, timeout, concurrency, on_agent_run, produced)
        redactor = store_redactor(None, content.policy().redactor)  # the tracer's rules and pseudonym key
        views: Iterable[tuple[dict[str, Any], Mapping[str, Any]]] = produced_views(rows, produced, redactor)
    else:  # streamed: each row is scored as it is read, its trajectories parsed once
        views = ((row, {**row, **parsed}) for row, parsed in parsed_rows)
    if prefixes:
        views = strip_views(views, prefixes)
    table, summary, usage = score_views(views, resolved, judge=connected, cache=store, on_row=on_row)
    eval_result = EvalResult(summary, table, names, run_id, usage, pass_rules(resolved))
    if store is not None:
        name = dataset_name or (
            str(dataset) if isinstance(dataset, str | Path) else f"<{type(dataset).__name__} of {len(table)} rows>"
        )
        save_dataset_run(
            store,
            eval_result,
            dataset=name,
            agent=describe_target(runnable),
            metrics=names,
            started_ns=started_ns,
            experiment=experiment,
        )
    return eval_result


def check_names(metrics: Sequence[Metric]) -> list[str]:
    """The metrics' names; a name listed twice is a :class:`MetricError` (results would overwrite each other)."""
    names = [m.name for m in metrics]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise MetricError(
            f"metric(s) listed twice: {', '.join(sorted(duplicates))} (give each variant a name of its own: "
            "trajectory_f1(match=name, name=f1_names))"
        )
    return names


def _run_rows(
    rows: list[dict[str, Any]],
    runnable: Any,
    run_id: str,
    timeout: float,
    concurrency: int,
    on_done: Callable[[int], None] | None,
    produced: dict[int, dict[str, Any]],
) -> None:
    """Run the agent on every row, ``concurrency`` at a time; each row gets its own measured, traced run.
    ``on_done(index)`` is called, from this thread, as each run ends."""
    for index, row in enumerate(rows):  # check every prompt before running anything
        prompt = row.get("prompt")
        if not isinstance(prompt, str):
            kind = type(prompt).__name__
            raise DatasetError(f"dataset row {index}: 'prompt' must be a string to run the agent, got {kind}")
    done = on_done or (lambda _: None)
    if concurrency == 1 or len(rows) < 2:
        for index, row in enumerate(rows):
            _fill_from_agent(row, runnable, index, run_id, timeout, produced)
            done(index)
        return
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="toolpath-eval")
    futures = {
        pool.submit(_fill_from_agent, row, runnable, i, run_id, timeout, produced): i for i, row in enumerate(rows)
    }
    try:
        for future in as_completed(futures):
            future.result()
            done(futures[future])
    except KeyboardInterrupt:
        raise _stop_runs(pool, futures, min(timeout, INTERRUPT_GRACE_SECONDS)) from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _stop_runs(pool: ThreadPoolExecutor, futures: Mapping[Future[None], int], grace: float) -> Interrupted:
    """Ctrl-C: start no more runs, write the finished runs' traces, wait at most ``grace`` seconds for the running
    ones (a second Ctrl-C stops the waiting), write theirs too; what was kept, as an :class:`Interrupted`."""
    pool.shutdown(wait=False, cancel_futures=True)
    with contextlib.suppress(KeyboardInterrupt):
        tracing.flush(grace)
        running = [f for f in futures if not f.done()]
        wait(running, timeout=grace)
        tracing.flush(grace)
    finished = sum(f.done() and not f.cancelled() for f in futures)
    unfinished = sum(not f.done() for f in futures)
    return Interrupted(finished, len(futures), unfinished)


def _fill_from_agent(
    row: dict[str, Any], runnable: Any, index: int, run_id: str, timeout: float, produced: dict[int, dict[str, Any]]
) -> None:
    prompt = row.get("prompt")
    if not isinstance(prompt, str):
        raise DatasetError(
            f"dataset row {index}: 'prompt' must be a string to run the agent, got {type(prompt).__name__}"
        )
    session_id = str(row.get("session_id") or f"eval-{run_id}-{index}")
    outcome: AgentOutcome = run_agent(runnable, prompt, session_id=session_id, timeout=timeout)
    row.update(outcome_row(outcome, prompt))  # as stored: what the table, the store and a judge get
    if outcome.produced is not None:  # what the agent did: what the computed metrics score
        produced[index] = scored_row(outcome, prompt)
    if outcome.error:
        row["error"] = outcome.error
    if outcome.invocation is not None:
        row["invocation_id"] = outcome.invocation.invocation_id


def save_dataset_run(
    store: Store,
    result: EvalResult,
    *,
    dataset: str,
    agent: str | None,
    metrics: Sequence[str],
    started_ns: int,
    experiment: str | None = None,
) -> None:
    described: dict[str, Any] = {"metrics": list(metrics), "rules": result.rules}
    if experiment is not None:
        described["experiment"] = experiment
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": RunKind.DATASET,
            "dataset": dataset,
            "agent": agent,
            "metrics": described,
            "started_at": started_ns,
            "finished_at": time.time_ns(),
            "row_count": len(result.metrics_table),
            "failed_count": None,
            "summary": result.summary_metrics,
        },
        [
            {
                "run_id": result.run_id,
                "position": i,
                "case_id": _case_id(row, i),
                "invocation_id": row.get("invocation_id"),
                "status": None,
                "scores": {name: row.get(f"{name}/score") for name in result.metric_names},
                "row": row,
            }
            for i, row in enumerate(result.metrics_table)
        ],
    )


def _case_id(row: dict[str, Any], index: int) -> str:
    for key in ("case_id", "eval_id", "id"):
        if row.get(key) is not None:
            return str(row[key])
    return str(index)
