"""Every metric by name: the built-ins, registered here and nowhere else, and the user's own.

``resolve_metric`` turns a spec (a name, ``name(key=value, ...)``, ``module:function``, a :class:`Metric` or a
callable) into a metric; ``criterion_metric`` does the same for an eval set's criterion and its options
(``test_config.json``). Nothing else in toolpath looks a metric up by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolpath.errors import MetricError
from toolpath.evaluators.judge.adk import ADK_JUDGE_METRICS
from toolpath.evaluators.judge.vertex import BUILTIN_TEMPLATES, builtin_metric
from toolpath.evaluators.metrics import analytics, builtin, text, tool_calls, trajectory
from toolpath.evaluators.metrics.registry import CustomMetric, Metric, Row, import_callable, parse_spec
from toolpath.evaluators.metrics.rows import flag
from toolpath.model import MetricResult

Factory = Callable[..., Metric]

_CATALOG: dict[str, Factory] = {}


def register_metric(name: str) -> Callable[[Factory], Factory]:
    """Register a metric factory (a class or function taking keyword parameters) under ``name``."""

    def decorate(factory: Factory) -> Factory:
        _CATALOG[name] = factory
        return factory

    return decorate


def metric_names() -> list[str]:
    """Every registered metric name, sorted."""
    return sorted(_CATALOG)


def metric_factory(name: str) -> Factory | None:
    return _CATALOG.get(name)


def create_metric(name: str, **params: Any) -> Metric:
    """The metric registered as ``name``, built with ``params``; unknown names and bad parameters raise
    :class:`MetricError`."""
    factory = _CATALOG.get(name)
    if factory is None:
        raise MetricError(f"unknown metric {name!r}; known: {', '.join(sorted(_CATALOG))}")
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise MetricError(f"metric {name!r}: {exc}") from None


def resolve_metric(spec: str | Metric | Callable[[Row], Any]) -> Metric:
    """Turn a metric spec into a :class:`Metric`; unknown names raise :class:`MetricError`."""
    if isinstance(spec, Metric):
        return spec
    if callable(spec) and not isinstance(spec, str):
        return CustomMetric(spec)
    if not isinstance(spec, str):
        raise MetricError(f"a metric must be a name, a Metric or a callable, got {type(spec).__name__}")
    name, params = parse_spec(spec)
    if name not in _CATALOG and ":" in name:
        return CustomMetric(import_callable(name))
    return create_metric(name, **params)


def criterion_metric(
    name: str, options: Mapping[str, Any], *, custom_function: str | None = None, threshold: float | None = None
) -> Metric:
    """The metric of an eval-set criterion with its options (``threshold`` already taken out). A factory with
    a ``from_criterion`` reads ADK's criterion shape itself (``judge_model_options``, ``rubrics``…).
    ``custom_function`` (``module.function``) makes it an ADK custom metric of that name, which ADK's criterion
    is given with its ``threshold``."""
    if custom_function is not None:
        from toolpath.evaluation.adk_custom import adk_custom_metric

        return adk_custom_metric(name, custom_function, options, 0.0 if threshold is None else threshold)
    factory = _CATALOG.get(name)
    from_criterion = getattr(factory, "from_criterion", None)
    if from_criterion is None:
        return create_metric(name, **options)
    try:
        return from_criterion(dict(options))
    except (TypeError, ValueError) as exc:
        raise MetricError(f"metric {name!r}: {exc}") from None


# --- the built-ins ----------------------------------------------------------------------------------------

_fn: Callable[..., MetricResult]
for _name, _fn in (
    ("trajectory_exact_match", trajectory.exact_match),
    ("trajectory_in_order_match", trajectory.in_order_match),
    ("trajectory_any_order_match", trajectory.any_order_match),
):
    register_metric(_name)(builtin.reference_metric(_name, _fn))
for _name, _fn in (
    ("trajectory_precision", trajectory.precision),
    ("trajectory_recall", trajectory.recall),
    ("trajectory_f1", trajectory.f1),
):
    register_metric(_name)(builtin.reference_metric(_name, _fn, has_order=True))
register_metric("trajectory_single_tool_use")(builtin.TrajectorySingleToolUse)
register_metric("tool_trajectory_avg_score")(builtin.ToolTrajectoryAvgScore)
register_metric("tool_argument_similarity")(builtin.ToolArgumentSimilarity)
for _behaviour in (
    analytics.tool_call_count,
    analytics.redundant_tool_calls,
    analytics.tool_error_rate,
    analytics.error_recovery,
):
    register_metric(_behaviour.__name__)(lambda fn=_behaviour: builtin.BehaviourMetric(fn.__name__, fn))
register_metric("tool_loop_detected")(builtin.tool_loop_detected)
register_metric("latency_in_seconds")(lambda: builtin.MeasuredColumn("latency_in_seconds"))
register_metric("failure")(lambda: builtin.MeasuredColumn("failure"))

register_metric("exact_match")(lambda: builtin.ResponseMetric("exact_match", text.exact_match))
register_metric("bleu")(
    lambda use_effective_order=True: builtin.ResponseMetric(
        "bleu", text.bleu, (("use_effective_order", flag(use_effective_order, "use_effective_order")),)
    )
)
for _name, _type in (("rouge_1", "rouge1"), ("rouge_2", "rouge2"), ("rouge_l", "rougeL"), ("rouge_l_sum", "rougeLsum")):
    register_metric(_name)(
        lambda _name=_name, _type=_type: builtin.ResponseMetric(_name, text.rouge, (("rouge_type", _type),))
    )
register_metric("rouge")(builtin.rouge)
register_metric("response_match_score")(builtin.ResponseMatchScore)

register_metric("tool_call_valid")(lambda: builtin.ToolCallMetric("tool_call_valid", tool_calls.tool_call_valid, False))
register_metric("tool_name_match")(lambda: builtin.ToolCallMetric("tool_name_match", tool_calls.tool_name_match))
register_metric("tool_parameter_key_match")(
    lambda: builtin.ToolCallMetric("tool_parameter_key_match", tool_calls.tool_parameter_key_match)
)
register_metric("tool_parameter_kv_match")(
    lambda use_strict_string_match=False: builtin.ToolCallMetric(
        "tool_parameter_kv_match",
        tool_calls.tool_parameter_kv_match,
        params=(("use_strict_string_match", flag(use_strict_string_match, "use_strict_string_match")),),
    )
)

# judge metrics (scored by a judge model through the runner)
for _name in [*BUILTIN_TEMPLATES, *(f"pairwise_{n}" for n in BUILTIN_TEMPLATES), "response_follows_trajectory"]:
    register_metric(_name)(lambda _name=_name, **options: builtin_metric(_name, **options))
for _name, _cls in ADK_JUDGE_METRICS.items():
    register_metric(_name)(_cls)
