"""Scoring rows: every metric on every row (judge metrics through one judge, concurrently), and the summary.

No agent is run here: :mod:`toolpath.evaluation.runner` runs agents and then scores; online evaluation scores
stored invocations directly.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.like_with_like import judged_view, scrubber
from toolpath.judges.client import REQUEST_TAG, Ask, Judge, JudgeSettings, settings_from
from toolpath.judges.process_budget import WhenSpent
from toolpath.judges.vertex import JudgeMetric, PairwiseChoice
from toolpath.metrics.base import Metric, MissingInput
from toolpath.metrics.rows import with_parsed_trajectories
from toolpath.model import MetricResult


def score_table(
    rows: Iterable[Mapping[str, Any]],
    metrics: Sequence[Metric],
    *,
    judge: Judge | JudgeSettings | None = None,
    cache: Any = None,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, int] | None]:
    """The metrics table (each row with ``{metric}/score``, ``{metric}/explanation`` and details), the summary
    (docs/spec.md §5) and the judge's usage (``None`` when no judge metric ran)."""
    return score_views(
        ((dict(row), with_parsed_trajectories(row)) for row in rows), metrics, judge=judge, cache=cache, on_row=on_row
    )


def score_views(
    items: Iterable[tuple[dict[str, Any], Mapping[str, Any]]],
    metrics: Sequence[Metric],
    *,
    judge: Judge | JudgeSettings | None = None,
    cache: Any = None,
    on_row: Callable[[int, dict[str, Any]], None] | None = None,
    summarized: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, int] | None]:
    """:func:`score_table` over ``(table row, view)`` pairs: each row's results are added to its table row, which
    the caller gives up; metrics read the view (a mapping of its own: the row with its trajectory cells parsed).
    The pairs are taken one at a time, so a stream of rows is scored as it is read — unless judge metrics ask
    for all rows at once. ``summarized=False``: no summary (an empty one), for a caller that keeps only rows."""
    judge_metrics = [m for m in metrics if isinstance(m, JudgeMetric)]
    judged: dict[tuple[int, str], MetricResult] = {}
    usage = None
    if judge_metrics:
        items = list(items)
        # a judge reads the redacted row: the agent's unredacted values never leave the process
        judged, usage = judge_rows([judged_view(view) for _, view in items], judge_metrics, judge, cache)
    plan: list[tuple[Metric, Callable[[Mapping[str, Any]], MetricResult], str, str, str, bool, list[float]]] = [
        (m, m.score, m.name, f"{m.name}/score", f"{m.name}/explanation", isinstance(m, JudgeMetric), [])
        for m in metrics
    ]
    table: list[dict[str, Any]] = []
    for index, (out, view) in enumerate(items):
        # what a metric says of the agent's unredacted values is redacted in the table (a plain dict: stored values)
        scrub = None if view.__class__ is dict else scrubber(view)
        for metric, score_of, name, score_key, explanation_key, by_judge, kept in plan:
            try:  # score_row, inline
                result = judged[index, name] if by_judge else score_of(view)
            except Exception as exc:
                result = failed(metric, exc)
            score = out[score_key] = result.score
            if score is not None:
                kept.append(score)
            out[explanation_key] = result.explanation if scrub is None else scrub(result.explanation)
            for key, value in result.detail_items():
                out[f"{name}/{key}"] = value if scrub is None else scrub(value)
        table.append(out)
        if on_row is not None:
            on_row(index, out)
    if not summarized:
        return table, {}, usage
    summary = summary_of(len(table), {name: kept for _, _, name, _, _, _, kept in plan})
    for metric in judge_metrics:
        if metric.pairwise:
            summary.update(win_rates(table, metric.name))
    return table, summary, usage


def prepare_judge(
    metrics: Sequence[Metric], judge: Judge | JudgeSettings | None = None, cache: Any = None
) -> Judge | None:
    """The judge that the judge metrics among ``metrics`` will ask, connected now, so that missing credentials
    are a :class:`~toolpath.errors.ConfigError` before any agent runs; ``None`` when no metric needs a judge.
    A :class:`Judge` given keeps its own cache; settings get ``cache`` (the store, or ``None``: no cache)."""
    if not any(isinstance(m, JudgeMetric) for m in metrics):
        return None
    if not isinstance(judge, Judge):
        judge = Judge(judge or settings_from(None), cache=cache)
    return judge.connect()


def request_judge(metrics: Sequence[Metric], rows: int, cache: Any, most: int) -> Judge | None:
    """The judge of a request's judge metrics over ``rows`` rows (``None``: none needs one): its calls refused past
    the process's judge budget, never waiting for it, and a :class:`~toolpath.errors.ConfigError` when they would
    ask it more than ``most`` times in all (samples × rows) — a request's judge calls are bounded before it runs."""
    judged = [m for m in metrics if isinstance(m, JudgeMetric)]
    if not judged:
        return None
    asks = sum(max(1, int(m.num_samples or 1)) for m in judged) * rows
    if asks > most:
        raise ConfigError(
            f"these metrics would ask the judge {asks} times for {rows} row(s); one request asks it at most {most} "
            "times (fewer samples, metrics or rows)"
        )
    return Judge(settings_from(None), cache=cache, when_spent=WhenSpent.REFUSE).connect()


def judge_rows(
    views: list[Mapping[str, Any]], metrics: list[JudgeMetric], judge: Judge | JudgeSettings | None, store: Any
) -> tuple[dict[tuple[int, str], MetricResult], dict[str, int] | None]:
    """Every judge metric on every row, concurrently through one :class:`Judge`. Missing credentials raise
    (a configuration error); a request or a metric that fails while it runs is an error of its own results
    only, with the reason (:meth:`Judge._ask`, ``one`` below), so every other metric of the rows still scores."""
    if not metrics:
        return {}, None
    judge = prepare_judge(metrics, judge, store)
    assert judge is not None

    async def work(ask: Ask) -> list[MetricResult]:
        async def one(index: int, metric: JudgeMetric, view: Mapping[str, Any]) -> MetricResult:
            REQUEST_TAG.set((index, metric.name))  # in this task's own context: its requests are this result's
            try:
                return await metric.judge(view, ask)
            except MissingInput as exc:
                return MetricResult.not_evaluated(str(exc))
            except Exception as exc:  # a broken template must not sink the run
                return MetricResult.not_evaluated(f"{metric.name} failed: {type(exc).__name__}: {exc}")

        return list(await asyncio.gather(*(one(i, m, view) for i, view in enumerate(views) for m in metrics)))

    keys = [(index, m.name) for index in range(len(views)) for m in metrics]
    return dict(zip(keys, judge.run(work), strict=True)), judge.usage.to_dict()


def win_rates(table: Sequence[Mapping[str, Any]], name: str) -> dict[str, float | None]:
    """Shares of the rows where the candidate (``response``) or the baseline won a pairwise metric; a row the
    judge gave no verdict counts for neither, as in Vertex AI's summary (``None`` without rows)."""
    choices = [r.get(f"{name}/pairwise_choice") for r in table]
    if not choices:
        return {f"{name}/candidate_model_win_rate": None, f"{name}/baseline_model_win_rate": None}
    return {
        f"{name}/candidate_model_win_rate": choices.count(PairwiseChoice.CANDIDATE) / len(choices),
        f"{name}/baseline_model_win_rate": choices.count(PairwiseChoice.BASELINE) / len(choices),
    }


def score_row(metric: Metric, row: Mapping[str, Any]) -> MetricResult:
    """One metric on one row; a row it cannot score gets score null and the reason, never an exception."""
    try:
        return metric.score(row)
    except Exception as exc:
        return failed(metric, exc)


def failed(metric: Metric, exc: Exception) -> MetricResult:
    """The result of a metric that raised: :class:`MissingInput` says what the row lacks; anything else is the
    metric's own failure (a broken custom metric must not sink the whole run)."""
    if isinstance(exc, MissingInput):
        return MetricResult.not_evaluated(str(exc))
    return MetricResult.not_evaluated(f"{metric.name} failed: {type(exc).__name__}: {exc}")


def summarize(table: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """``row_count`` and, per metric, the mean and sample standard deviation of the non-null scores."""
    keys = {name: f"{name}/score" for name in names}
    return summary_of(len(table), {name: [r[k] for r in table if r.get(k) is not None] for name, k in keys.items()})


def summary_of(row_count: int, scores: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """:func:`summarize` from each metric's non-null scores, in row order."""
    summary: dict[str, Any] = {"row_count": row_count}
    for name, kept in scores.items():
        mean = sum(kept) / len(kept) if kept else None
        std = None
        if len(kept) > 1 and mean is not None:
            std = math.sqrt(sum([(s - mean) ** 2 for s in kept]) / (len(kept) - 1))  # a list: summed faster
        summary[f"{name}/mean"] = mean
        summary[f"{name}/std"] = std
    return summary
