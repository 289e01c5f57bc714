"""The columns an ``EvalTask``'s metrics need, checked before anything runs, as Vertex AI checks them.

Vertex AI refuses a dataset without the ``response`` and ``reference`` columns its computed metrics read, or
without a column a judge template names; toolpath also asks for the trajectory columns of ``trajectory_*``
metrics. A column is present when a row has it, under its own name or the one ``metric_column_mapping`` gives;
columns the task writes (an agent's ``response`` and ``predicted_trajectory``, a model's ``response``, a
baseline model's ``baseline_model_response``, generated ``rubrics``) count as present.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolpath.errors import DatasetError, MetricError
from toolpath.judges.vertex import VARIABLE
from toolpath.vertex.model_based import PairwiseMetric, PointwiseMetric
from toolpath.vertex.rubric_metrics import RubricBasedMetric

_TEXT = ("response", "reference")
_TRAJECTORIES = ("predicted_trajectory", "reference_trajectory")
_NEEDS: dict[str, tuple[str, ...]] = {
    **{
        name: _TEXT
        for name in (
            "exact_match",
            "bleu",
            "rouge",
            *(f"rouge_{n}" for n in (*range(1, 10), "l", "l_sum")),
            "tool_call_valid",
            "tool_name_match",
            "tool_parameter_key_match",
            "tool_parameter_kv_match",
        )
    },
    **{
        f"trajectory_{name}": _TRAJECTORIES
        for name in ("exact_match", "in_order_match", "any_order_match", "precision", "recall")
    },
    "trajectory_single_tool_use": ("predicted_trajectory",),
}
"""Vertex AI's computed metrics by name, and the columns each reads."""


def _needs(metric: Any) -> tuple[str, tuple[str, ...]]:
    """The metric's name and the columns it reads (none known: an empty tuple)."""
    if isinstance(metric, RubricBasedMetric):
        metric = metric.critique_metric
    name = metric if isinstance(metric, str) else str(getattr(metric, "metric_name", "") or "")
    if isinstance(metric, PointwiseMetric | PairwiseMetric):
        variables = VARIABLE.findall(metric.metric_prompt_template)
        return name, tuple(dict.fromkeys(variables))
    return name, _NEEDS.get(name, ())


def written_columns(*, runnable: Any, model: Any, metrics: Iterable[Any]) -> set[str]:
    """The columns the task itself writes before scoring."""
    written: set[str] = set()
    if runnable is not None:
        written |= {"response", "predicted_trajectory", "latency_in_seconds", "failure"}
    if model is not None:
        written.add("response")
    for metric in metrics:
        if isinstance(metric, RubricBasedMetric):
            written.add("rubrics")
            metric = metric.critique_metric
        if isinstance(metric, PairwiseMetric) and metric.baseline_model is not None:
            written.add("baseline_model_response")
    return written


def check_columns(
    rows: Sequence[Mapping[str, Any]], metrics: Iterable[Any], mapping: Mapping[str, str], written: set[str]
) -> None:
    """Raise :class:`DatasetError` naming the first column a metric needs that no row has."""
    present = {column for row in rows for column in row} | written
    for metric in metrics:
        name, needs = _needs(metric)
        for column in needs:
            source = mapping.get(column, column)
            if column in written or source in present:
                continue
            mapped = f" (mapped to {source!r})" if source != column else ""
            raise DatasetError(
                f"the dataset has no {column!r} column{mapped}, which metric {name} needs (columns: "
                f"{', '.join(sorted(present - written)) or 'none'}); add it, or map another column to it with "
                "metric_column_mapping"
            )


def check_metric_list(metrics: Sequence[Any]) -> None:
    """Raise :class:`MetricError` for no metrics, or for two that would write the same columns."""
    if not metrics:
        raise MetricError("EvalTask has no metrics: give metrics=[...] (names or metric objects)")
    names = [_needs(metric)[0] or str(metric) for metric in metrics]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise MetricError(
            f"metric(s) listed twice: {', '.join(twice)}; each metric's columns are <name>/score…, so list each "
            "name once (two Rouge variants: evaluate them in two EvalTasks, as in Vertex AI)"
        )
