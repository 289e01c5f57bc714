"""Evaluators: metrics (pure functions over records), the registry, and the runner."""

from toolpath.evaluators.registry import CustomMetric, Metric, metric_names, register_metric, resolve_metric
from toolpath.evaluators.runner import EvalResult, evaluate

__all__ = ["CustomMetric", "EvalResult", "Metric", "evaluate", "metric_names", "register_metric", "resolve_metric"]
