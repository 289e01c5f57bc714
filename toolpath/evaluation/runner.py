"""``toolpath.evaluate``: score a dataset with metrics, optionally running an agent on each prompt first."""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpath.datasets import load_rows
from toolpath.errors import DatasetError, MetricError
from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluation.inference import AgentOutcome, outcome_row, run_agent
from toolpath.evaluators.judge.client import Ask, Judge, JudgeSettings, settings_from
from toolpath.evaluators.judge.vertex import JudgeMetric
from toolpath.evaluators.metrics.registry import Metric, MissingInput
from toolpath.evaluators.metrics.rows import with_parsed_trajectories
from toolpath.model import MetricResult

MEASURED = ("latency_in_seconds", "failure")


@dataclass
class EvalResult:
    """``summary_metrics``: ``row_count``, ``{metric}/mean``, ``{metric}/std``; ``metrics_table``: one row per
    instance with its input columns, ``{metric}/score`` and ``{metric}/explanation`` (SPEC §5)."""

    summary_metrics: dict[str, Any]
    metrics_table: list[dict[str, Any]]
    metric_names: list[str] = field(default_factory=list)
    run_id: str = ""
    judge_usage: dict[str, int] | None = None
    """Requests, cache hits, retries, errors and tokens of the judge model, when judge metrics ran."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"summary_metrics": self.summary_metrics, "metrics_table": self.metrics_table}
        if self.judge_usage is not None:
            out["judge_usage"] = self.judge_usage
        return out

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(
            json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
        )

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
) -> EvalResult:
    """Score every row of ``dataset`` with ``metrics``.

    With ``runnable`` (an ``@agent`` function or any callable taking the prompt), each row's ``prompt`` is sent
    to the agent under tracing, and ``response``, ``predicted_trajectory``, ``latency_in_seconds`` and
    ``failure`` are filled from what was traced; ``latency_in_seconds`` and ``failure`` are then scored too.
    Up to ``concurrency`` rows run at once (each its own traced run; use 1 for an agent that is not
    thread-safe). With ``store`` (a :class:`~toolpath.store.store.Store`), the run and its rows are saved.

    Judge metrics (``fluency``, ``final_response_match_v2``…) are asked of the judge model for all rows at once,
    through ``judge`` (a :class:`Judge` or :class:`JudgeSettings`; by default settings from the environment, with
    the store as the reply cache).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    started_ns = time.time_ns()
    rows = load_rows(dataset, metric_column_mapping)
    resolved = [resolve_metric(m) for m in metrics]
    run_id = uuid.uuid4().hex[:12]
    if runnable is not None:
        resolved += [resolve_metric(name) for name in MEASURED if name not in {m.name for m in resolved}]
    names = [m.name for m in resolved]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise MetricError(f"metric(s) listed twice: {', '.join(sorted(duplicates))}")
    if runnable is not None:
        _run_rows(rows, runnable, run_id, timeout, concurrency)
    views = [with_parsed_trajectories(row) for row in rows]
    judged, usage = judge_rows(views, [m for m in resolved if isinstance(m, JudgeMetric)], judge, store)
    table: list[dict[str, Any]] = []
    for index, (row, view) in enumerate(zip(rows, views, strict=True)):
        out = dict(row)
        for metric in resolved:
            result = judged[index, metric.name] if isinstance(metric, JudgeMetric) else score_row(metric, view)
            out[f"{metric.name}/score"] = result.score
            out[f"{metric.name}/explanation"] = result.explanation
            for key, value in result.details.items():
                out[f"{metric.name}/{key}"] = value
        table.append(out)
        if on_row is not None:
            on_row(index, out)
    summary = summarize(table, names)
    for metric in resolved:
        if isinstance(metric, JudgeMetric) and metric.pairwise:
            summary.update(win_rates(table, metric.name))
    eval_result = EvalResult(summary, table, names, run_id, usage)
    if store is not None:
        from toolpath.evaluation.history import describe_target, save_dataset_run

        name = dataset_name or (
            str(dataset) if isinstance(dataset, str | Path) else f"<{type(dataset).__name__} of {len(rows)} rows>"
        )
        save_dataset_run(
            store, eval_result, dataset=name, agent=describe_target(runnable), metrics=names, started_ns=started_ns
        )
    return eval_result


def judge_rows(
    views: list[Mapping[str, Any]], metrics: list[JudgeMetric], judge: Judge | JudgeSettings | None, store: Any
) -> tuple[dict[tuple[int, str], MetricResult], dict[str, int] | None]:
    """Every judge metric on every row, concurrently through one :class:`Judge`."""
    if not metrics:
        return {}, None
    if not isinstance(judge, Judge):
        judge = Judge(judge or settings_from(None), cache=store)

    async def work(ask: Ask) -> list[MetricResult]:
        async def one(metric: JudgeMetric, view: Mapping[str, Any]) -> MetricResult:
            try:
                return await metric.judge(view, ask)
            except MissingInput as exc:
                return MetricResult.not_evaluated(str(exc))
            except Exception as exc:  # a broken template must not sink the run
                return MetricResult.not_evaluated(f"{metric.name} failed: {type(exc).__name__}: {exc}")

        return list(await asyncio.gather(*(one(m, view) for view in views for m in metrics)))

    results = iter(judge.run(work))
    scored = {(index, m.name): next(results) for index in range(len(views)) for m in metrics}
    return scored, judge.usage.to_dict()


def win_rates(table: Sequence[Mapping[str, Any]], name: str) -> dict[str, float | None]:
    """Shares of judged rows where the candidate (``response``) or the baseline won a pairwise metric."""
    choices = [r.get(f"{name}/pairwise_choice") for r in table if r.get(f"{name}/pairwise_choice")]
    if not choices:
        return {f"{name}/candidate_model_win_rate": None, f"{name}/baseline_model_win_rate": None}
    return {
        f"{name}/candidate_model_win_rate": choices.count("CANDIDATE") / len(choices),
        f"{name}/baseline_model_win_rate": choices.count("BASELINE") / len(choices),
    }


def score_row(metric: Metric, row: Mapping[str, Any]) -> MetricResult:
    """One metric on one row; a row it cannot score gets score null and the reason, never an exception."""
    try:
        return metric.score(row)
    except MissingInput as exc:
        return MetricResult.not_evaluated(str(exc))
    except Exception as exc:  # a broken custom metric must not sink the whole run
        return MetricResult.not_evaluated(f"{metric.name} failed: {type(exc).__name__}: {exc}")


def summarize(table: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """``row_count`` and, per metric, the mean and sample standard deviation of the non-null scores."""
    summary: dict[str, Any] = {"row_count": len(table)}
    for name in names:
        scores = [r[f"{name}/score"] for r in table if r.get(f"{name}/score") is not None]
        mean = sum(scores) / len(scores) if scores else None
        std = None
        if len(scores) > 1 and mean is not None:
            std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
        summary[f"{name}/mean"] = mean
        summary[f"{name}/std"] = std
    return summary


def _run_rows(rows: list[dict[str, Any]], runnable: Any, run_id: str, timeout: float, concurrency: int) -> None:
    """Run the agent on every row, ``concurrency`` at a time; each row gets its own measured, traced run."""
    for index, row in enumerate(rows):  # check every prompt before running anything
        prompt = row.get("prompt")
        if not isinstance(prompt, str):
            kind = type(prompt).__name__
            raise DatasetError(f"dataset row {index}: 'prompt' must be a string to run the agent, got {kind}")
    if concurrency == 1 or len(rows) < 2:
        for index, row in enumerate(rows):
            _fill_from_agent(row, runnable, index, run_id, timeout)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="toolpath-eval") as pool:
        futures = [pool.submit(_fill_from_agent, row, runnable, i, run_id, timeout) for i, row in enumerate(rows)]
        for future in futures:
            future.result()


def _fill_from_agent(row: dict[str, Any], runnable: Any, index: int, run_id: str, timeout: float) -> None:
    prompt = row.get("prompt")
    if not isinstance(prompt, str):
        raise DatasetError(
            f"dataset row {index}: 'prompt' must be a string to run the agent, got {type(prompt).__name__}"
        )
    session_id = str(row.get("session_id") or f"eval-{run_id}-{index}")
    outcome: AgentOutcome = run_agent(runnable, prompt, session_id=session_id, timeout=timeout)
    row.update(outcome_row(outcome, prompt))
    if outcome.error:
        row["error"] = outcome.error
    if outcome.invocation is not None:
        row["invocation_id"] = outcome.invocation.invocation_id
