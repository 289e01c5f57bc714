"""An eval set's criteria, checked and turned into metrics before anything runs.

ADK accepts any criterion name and any key inside a criterion, and evaluates nothing for what it does not know
(``tool_trajectory_avg_scor`` leaves every case NOT_EVALUATED and the run green). Here each name must be one of
toolpath's metrics (:mod:`toolpath.evaluation.catalog`, which holds ADK's criteria that toolpath computes) or an
ADK custom metric of the config, and each key one the criterion takes (ADK's criterion model's fields, plus
toolpath's own options of that metric); anything else is one :class:`~toolpath.errors.ConfigError` listing the
known names or keys.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolpath.errors import ConfigError, MetricError
from toolpath.evaluation import catalog
from toolpath.evaluation.evalsets import adk_models as adk_schema
from toolpath.evaluation.evalsets.eval_config import canonical_criteria
from toolpath.evaluation.evalsets.files import EvalConfig, EvalSet
from toolpath.metrics.base import Metric

TOOLPATH_OPTIONS: dict[str, tuple[str, ...]] = {"tool_trajectory_avg_score": ("match",)}
"""Options toolpath adds to ADK's criteria (``match``: docs/spec.md §4 matching modes)."""
_JUDGE_FINAL = ("final_response_match_v2", "rubric_based_final_response_quality_v1")
_UNUSED_BY_TOOLPATH = ("include_intermediate_responses_in_final",)


@dataclass(frozen=True)
class Criterion:
    """One criterion ready to score: its metric and threshold, and the options it was given (as ADK's
    ``EvalMetric.criterion`` holds them)."""

    name: str
    threshold: float
    metric: Metric
    options: Mapping[str, Any]
    custom_function_path: str | None = None


def resolve_criteria(
    criteria: Mapping[str, Any], custom_metrics: Mapping[str, str] | None = None, *, source: object = "criteria"
) -> dict[str, Criterion]:
    """Every criterion of ``criteria`` (name -> threshold, or an object with ``threshold`` and options, read as
    ADK reads a ``test_config.json``'s) as a :class:`Criterion`; ``custom_metrics`` maps names to ADK custom
    metric functions (``module.function``). ``source`` names the config in errors."""
    custom = dict(custom_metrics or {})
    if not criteria:
        raise ConfigError(f"{source}: no criteria: nothing would be evaluated")
    criteria = canonical_criteria(criteria, custom, source)
    return {name: _resolve(name, spec, custom.get(name), source) for name, spec in criteria.items()}


def criteria_of(eval_set: EvalSet, override: Mapping[str, Any] | EvalConfig | None = None) -> dict[str, Criterion]:
    """The checked criteria an eval set is judged by (``override`` instead of its own, if given)."""
    if isinstance(override, EvalConfig):
        return resolve_criteria(override.criteria, override.custom_metrics, source=override.path or "criteria")
    if override is not None:
        return resolve_criteria(override, source="criteria")
    source = eval_set.config_path or f"{eval_set.path or eval_set.eval_set_id} (default criteria)"
    return resolve_criteria(eval_set.criteria, eval_set.custom_metrics, source=source)


def known_criteria(custom_metrics: Mapping[str, str] | None = None) -> list[str]:
    return sorted({*catalog.metric_names(), *(custom_metrics or {})})


def _resolve(name: str, spec: Any, custom_path: str | None, source: object) -> Criterion:
    where = f"{source}: criterion {name!r}"
    if isinstance(spec, bool) or not isinstance(spec, int | float | Mapping):
        raise ConfigError(f"{where}: expected a threshold number or an object with 'threshold'")
    options = dict(spec) if isinstance(spec, Mapping) else {"threshold": spec}
    threshold = options.pop("threshold", None)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ConfigError(f"{where}: 'threshold' must be a number, got {threshold!r}")
    if custom_path is not None:
        try:
            metric = catalog.criterion_metric(name, options, custom_function=custom_path, threshold=float(threshold))
        except MetricError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return Criterion(name, float(threshold), metric, options, custom_path)
    if name in adk_schema.EFFICIENCY_METRICS:
        raise ConfigError(f"{where}: an efficiency figure, reported for every case; it takes no threshold")
    if name in adk_schema.ADK_UNSCORED:
        raise ConfigError(f"{where}: google-adk 2.15's criterion, which toolpath does not compute yet")
    factory = catalog.metric_factory(name)
    if factory is None:
        if name in adk_schema.ADK_CRITERIA:
            raise ConfigError(f"{where}: ADK's criterion is not computed by toolpath; known: {_names(None)}")
        close = difflib.get_close_matches(name, known_criteria(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{where}: unknown criterion{hint}; known criteria: {_names(None)}")
    takes = _options_of(name, factory)
    if takes is not None:
        unknown = [key for key in options if key not in takes]
        if unknown:
            raise ConfigError(
                f"{where}: unknown key {unknown[0]!r}; it takes: {', '.join(['threshold', *sorted(takes)])}"
            )
    if options.get("include_intermediate_responses_in_final") and name in _JUDGE_FINAL:
        raise ConfigError(f"{where}: include_intermediate_responses_in_final is not supported by toolpath yet")
    for key in _UNUSED_BY_TOOLPATH:
        options.pop(key, None)
    try:
        metric = catalog.criterion_metric(name, options)
    except MetricError as exc:
        listed = f"; it takes: {', '.join(['threshold', *sorted(takes)])}" if takes is not None else ""
        raise ConfigError(f"{where}: {exc}{listed}") from None
    return Criterion(name, float(threshold), metric, options)


def _options_of(name: str, factory: Any) -> set[str] | None:
    """The keys a criterion takes besides ``threshold``: ADK's criterion model's fields for ADK's criteria (plus
    toolpath's options of that metric), else the metric factory's parameters; ``None`` when open-ended."""
    model = adk_schema.ADK_CRITERIA.get(name)
    if model is not None:
        return {key for key in model.model_fields if key != "threshold"} | set(TOOLPATH_OPTIONS.get(name, ()))
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {
        p.name
        for p in parameters
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        and not p.name.startswith("_")
        and p.name not in ("name", "fn")
    }


def _names(custom_metrics: Mapping[str, str] | None) -> str:
    return ", ".join(known_criteria(custom_metrics))
