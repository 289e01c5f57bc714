"""Every metric by name: the built-ins, registered here and nowhere else, and the user's own — each with its
:class:`MetricInfo` (what it reads, its range, which way is better, its default pass mark), the one place the
CLI's tables, the HTML report, ``toolpath metrics`` and online labels read.

``resolve_metric`` turns a spec (a name, ``name(key=value, ...)``, ``module:function``, ``exec:PATH``, a
:class:`Metric` or a callable) into a metric; ``criterion_metric`` does the same for an eval set's criterion and its
options (``test_config.json``).

**No request runs code.** A spec that imports or runs code (``module:function``, ``exec:PATH``, an eval set's
custom function) is accepted only from the operator — the command line, Python, the files the operator named;
a spec from a request (:attr:`SpecOrigin.REQUEST`: an MCP call, a UI form, an API body) may name only registered
metrics. This module is the one place that rule is checked. Nothing else in toolpath looks a metric up by name.
Every metric takes ``name=`` besides its own parameters, so two variants can run side by side:
``trajectory_f1(match=name, name=f1_names)``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any

from toolpath.errors import ConfigError, MetricError
from toolpath.evaluation.metric_table import UNKNOWN, MetricInfo
from toolpath.evaluation.metric_table import describe_rule as describe_rule  # where the CLI, report and gates look
from toolpath.evaluation.metric_table import passes as passes
from toolpath.judges.adk_criteria import ADK_JUDGE_METRICS
from toolpath.judges.multi_turn import MULTI_TURN_METRICS
from toolpath.judges.vertex import BUILTIN_TEMPLATES, TemplateMetric, builtin_metric
from toolpath.metrics import analytics, builtin, text, tool_calls, trajectory_match
from toolpath.metrics.base import CustomMetric, Metric, Row, import_callable, parse_spec
from toolpath.metrics.rows import flag
from toolpath.model import MetricResult

__all__ = ["SpecOrigin", "create_metric", "criterion_metric", "metric_names", "register_metric", "resolve_metric"]


class SpecOrigin(StrEnum):
    """Who named a metric spec, and so whether it may import or run code."""

    OPERATOR = "operator"
    """The person running toolpath: its command line, its Python, the files it named. Code is theirs to run."""
    REQUEST = "request"
    """A request to a running toolpath (an MCP tool call, a UI form, an HTTP or gRPC body): registered metrics
    only, never code."""


Factory = Callable[..., Metric]


_CATALOG: dict[str, Factory] = {}
_INFO: dict[str, MetricInfo] = {}
_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


def register_metric(name: str, info: MetricInfo | None = None) -> Callable[[Factory], Factory]:
    """Register a metric factory (a class or function taking keyword parameters) under ``name``, with what it
    reads and what its scores mean."""

    def decorate(factory: Factory) -> Factory:
        _CATALOG[name] = factory
        _INFO[name] = info or UNKNOWN
        return factory

    return decorate


def metric_names() -> list[str]:
    """Every registered metric name, sorted."""
    return sorted(_CATALOG)


def metric_factory(name: str) -> Factory | None:
    return _CATALOG.get(name)


def metric_info(metric: str | Metric) -> MetricInfo:
    """The info of a registered metric (by name, or of a metric made from the catalog, renamed or not)."""
    if isinstance(metric, Metric):
        metric = getattr(metric, "catalog_name", None) or metric.name
    return _INFO.get(metric, UNKNOWN)


def pass_rules(metrics: Sequence[Metric], thresholds: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Per metric name, how its scores pass (``threshold``, ``lower_is_better``): the user's threshold, else the
    metric's own. Saved with a run, so its report judges rows as the run did."""
    return {metric.name: metric_info(metric).rule((thresholds or {}).get(metric.name)) for metric in metrics}


def create_metric(name: str, /, **params: Any) -> Metric:
    """The metric registered as ``name``, built with ``params`` (plus ``name=``: what the metric's results are
    called, for two variants in one run); unknown names and bad parameters raise :class:`MetricError`."""
    factory = _CATALOG.get(name)
    if factory is None:
        raise MetricError(f"unknown metric {name!r}; known: {', '.join(sorted(_CATALOG))}")
    new_name = params.pop("name", None)
    try:
        metric = factory(**params)
    except ConfigError:  # what the metric needs is missing (an extra): said as it is
        raise
    except (TypeError, ValueError) as exc:
        raise MetricError(f"metric {name!r}: {exc}") from None
    return metric if new_name is None else renamed(metric, new_name, name)


def renamed(metric: Metric, new_name: Any, catalog_name: str | None = None) -> Metric:
    """A copy of ``metric`` whose results go by ``new_name``; it keeps its catalog info."""
    if not isinstance(new_name, str) or not _NAME.match(new_name):
        raise MetricError(f"metric {metric.name!r}: name={new_name!r} is not a name (letters, digits, _ . -)")
    copied = copy.copy(metric)
    object.__setattr__(copied, "catalog_name", catalog_name or getattr(metric, "catalog_name", None) or metric.name)
    object.__setattr__(copied, "name", new_name)  # frozen dataclasses too: this copy is still private here
    return copied


def resolve_metric(spec: str | Metric | Callable[[Row], Any], *, origin: SpecOrigin = SpecOrigin.OPERATOR) -> Metric:
    """Turn a metric spec into a :class:`Metric`; unknown names raise :class:`MetricError`, and so does a spec that
    would import or run code when ``origin`` is :attr:`SpecOrigin.REQUEST` (checked before anything is imported)."""
    if origin is SpecOrigin.REQUEST:
        return _request_metric(spec)
    if isinstance(spec, Metric):
        return spec
    if callable(spec) and not isinstance(spec, str):
        return CustomMetric(spec)
    if not isinstance(spec, str):
        raise MetricError(f"a metric must be a name, a Metric or a callable, got {type(spec).__name__}")
    if spec.strip().startswith("exec:"):  # an executable in any language: toolpath.evaluation.exec_metric
        from toolpath.evaluation.exec_metric import exec_metric

        return exec_metric(spec)
    name, params = parse_spec(spec)
    if name not in _CATALOG and ":" in name:
        custom = CustomMetric(import_callable(name))
        new_name = params.pop("name", None)
        if params:
            raise MetricError(f"custom metric {name!r} takes no parameters but name=, got {', '.join(params)}")
        return custom if new_name is None else renamed(custom, new_name)
    return create_metric(name, **params)


def _request_metric(spec: object) -> Metric:
    """A request's metric: a registered name with its parameters, and nothing that imports or runs code."""
    if not isinstance(spec, str):
        raise MetricError(f"a metric must be given by name in a request, got {type(spec).__name__}")
    refused = MetricError(
        f"metric {spec[:200]!r}: a request may name only toolpath's metrics (toolpath metrics lists them); "
        "metrics that import or run code (module:function, exec:PATH) are given by whoever runs toolpath, "
        "on its command line or in Python"
    )
    if spec.strip().startswith("exec:"):
        raise refused
    name, params = parse_spec(spec)
    if name not in _CATALOG:
        raise refused if ":" in name else MetricError(f"unknown metric {name!r}; known: {', '.join(sorted(_CATALOG))}")
    return create_metric(name, **params)


def criterion_metric(
    name: str, options: Mapping[str, Any], *, custom_function: str | None = None, threshold: float | None = None
) -> Metric:
    """The metric of an eval-set criterion with its options (``threshold`` already taken out). A factory with
    a ``from_criterion`` reads ADK's criterion shape itself (``judge_model_options``, ``rubrics``…).
    ``custom_function`` (``module.function``) makes it an ADK custom metric of that name, which ADK's criterion
    is given with its ``threshold``."""
    if custom_function is not None:
        from toolpath.evaluation.evalsets.custom_metrics import adk_custom_metric

        return adk_custom_metric(name, custom_function, options, 0.0 if threshold is None else threshold)
    factory = _CATALOG.get(name)
    from_criterion = getattr(factory, "from_criterion", None)
    if from_criterion is None:
        return create_metric(name, **options)
    try:
        return from_criterion(dict(options))
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise MetricError(f"metric {name!r}: {exc}") from None


# --- the built-ins ----------------------------------------------------------------------------------------

TRAJECTORIES = ("predicted_trajectory", "reference_trajectory")
PREDICTED = ("predicted_trajectory",)
RESPONSES = ("response", "reference")
BINARY = MetricInfo(TRAJECTORIES, binary=True, threshold=1.0)
FRACTION = MetricInfo(TRAJECTORIES, threshold=1.0)

_fn: Callable[..., MetricResult]
for _name, _fn in (
    ("trajectory_exact_match", trajectory_match.exact_match),
    ("trajectory_in_order_match", trajectory_match.in_order_match),
    ("trajectory_any_order_match", trajectory_match.any_order_match),
):
    register_metric(_name, BINARY)(builtin.reference_metric(_name, _fn))
for _name, _fn in (
    ("trajectory_precision", trajectory_match.precision),
    ("trajectory_recall", trajectory_match.recall),
    ("trajectory_f1", trajectory_match.f1),
):
    register_metric(_name, FRACTION)(builtin.reference_metric(_name, _fn, has_order=True))
register_metric("trajectory_single_tool_use", MetricInfo(PREDICTED, binary=True, threshold=1.0))(
    builtin.TrajectorySingleToolUse
)
register_metric("tool_trajectory_avg_score", FRACTION)(builtin.ToolTrajectoryAvgScore)
register_metric("tool_argument_similarity", FRACTION)(builtin.ToolArgumentSimilarity)
for _behaviour, _info in (
    (analytics.tool_call_count, MetricInfo(PREDICTED, high=None, lower_is_better=True)),
    (analytics.redundant_tool_calls, MetricInfo(PREDICTED, high=None, lower_is_better=True, threshold=0.0)),
    (analytics.tool_error_rate, MetricInfo(PREDICTED, lower_is_better=True, threshold=0.0)),
    (analytics.error_recovery, MetricInfo(PREDICTED, threshold=1.0)),
):
    register_metric(_behaviour.__name__, _info)(lambda fn=_behaviour: builtin.BehaviourMetric(fn.__name__, fn))
register_metric("tool_loop_detected", MetricInfo(PREDICTED, binary=True, lower_is_better=True, threshold=0.0))(
    builtin.tool_loop_detected
)
register_metric("latency_in_seconds", MetricInfo(("latency_in_seconds",), high=None, lower_is_better=True))(
    lambda: builtin.MeasuredColumn("latency_in_seconds")
)
register_metric("failure", MetricInfo(("failure",), binary=True, lower_is_better=True, threshold=0.0))(
    lambda: builtin.MeasuredColumn("failure")
)

register_metric("exact_match", MetricInfo(RESPONSES, binary=True, threshold=1.0))(
    lambda: builtin.ResponseMetric("exact_match", text.exact_match)
)
register_metric("bleu", MetricInfo(RESPONSES))(
    lambda use_effective_order=True: builtin.ResponseMetric(
        "bleu", text.bleu, (("use_effective_order", flag(use_effective_order, "use_effective_order")),)
    )
)
for _name, _type in (("rouge_1", "rouge1"), ("rouge_2", "rouge2"), ("rouge_l", "rougeL"), ("rouge_l_sum", "rougeLsum")):
    register_metric(_name, MetricInfo(RESPONSES))(
        lambda _name=_name, _type=_type: builtin.ResponseMetric(_name, text.rouge, (("rouge_type", _type),))
    )
register_metric("rouge", MetricInfo(RESPONSES))(builtin.rouge)
register_metric("response_match_score", MetricInfo(RESPONSES, threshold=0.8))(builtin.ResponseMatchScore)

register_metric("tool_call_valid", MetricInfo(("response",), binary=True, threshold=1.0))(
    lambda: builtin.ToolCallMetric("tool_call_valid", tool_calls.tool_call_valid, False)
)
register_metric("tool_name_match", MetricInfo(RESPONSES, binary=True, threshold=1.0))(
    lambda: builtin.ToolCallMetric("tool_name_match", tool_calls.tool_name_match)
)
register_metric("tool_parameter_key_match", MetricInfo(RESPONSES, threshold=1.0))(
    lambda: builtin.ToolCallMetric("tool_parameter_key_match", tool_calls.tool_parameter_key_match)
)
register_metric("tool_parameter_kv_match", MetricInfo(RESPONSES, threshold=1.0))(
    lambda use_strict_string_match=False: builtin.ToolCallMetric(
        "tool_parameter_kv_match",
        tool_calls.tool_parameter_kv_match,
        params=(("use_strict_string_match", flag(use_strict_string_match, "use_strict_string_match")),),
    )
)


# judge metrics (scored by a judge model through the runner)
def _template_info(metric: TemplateMetric) -> MetricInfo:
    """A template metric's info from its template: the columns it shows the judge, its rating scale."""
    inputs = (*metric.template.input_variables, "response")
    if metric.pairwise:  # candidate 1, same 0.5, baseline 0: passing means not worse than the baseline
        return MetricInfo((*inputs, "baseline_model_response"), threshold=0.5, judge=True)
    scale = metric.template.scale()
    if scale == [0.0, 1.0]:
        return MetricInfo(inputs, binary=True, threshold=1.0, judge=True)
    best = 0.0 if scale[0] < 0 < scale[-1] else None  # verbosity: 0 is "just right"
    return MetricInfo(inputs, low=scale[0], high=scale[-1], best=best, judge=True)  # the user sets a pass mark


for _name in [*BUILTIN_TEMPLATES, *(f"pairwise_{n}" for n in BUILTIN_TEMPLATES), "response_follows_trajectory"]:
    _judged = builtin_metric(_name)
    assert isinstance(_judged, TemplateMetric)
    register_metric(_name, _template_info(_judged))(lambda _name=_name, **options: builtin_metric(_name, **options))
_ADK_INFO = {
    "final_response_match_v2": MetricInfo(("prompt", "reference", "response"), binary=True, threshold=1.0),
    "rubric_based_final_response_quality_v1": MetricInfo(("prompt", "response", "rubrics"), threshold=1.0),
    "rubric_based_tool_use_quality_v1": MetricInfo(("prompt", "predicted_trajectory", "rubrics"), threshold=1.0),
    "hallucinations_v1": MetricInfo(("prompt", "predicted_trajectory", "response"), threshold=1.0),
    "safety_v1": MetricInfo(("prompt", "response"), binary=True, threshold=1.0),
}
for _name, _cls in ADK_JUDGE_METRICS.items():
    register_metric(_name, replace(_ADK_INFO[_name], judge=True))(_cls)
# ADK's multi-turn criteria: a whole conversation (an eval set's case), judged once or turn by turn
_CONVERSATION = ("prompt", "predicted_trajectory", "response")
_MULTI_TURN_INFO = {
    "multi_turn_task_success_v1": MetricInfo(_CONVERSATION, threshold=1.0),
    "multi_turn_trajectory_quality_v1": MetricInfo(_CONVERSATION, threshold=1.0),
    "multi_turn_tool_use_quality_v1": MetricInfo(_CONVERSATION, threshold=1.0),
    "rubric_based_multi_turn_trajectory_quality_v1": MetricInfo((*_CONVERSATION, "rubrics"), threshold=1.0),
    "per_turn_user_simulator_quality_v1": MetricInfo(("prompt", "response", "conversation_scenario"), threshold=1.0),
}
for _name, _cls in MULTI_TURN_METRICS.items():
    register_metric(_name, replace(_MULTI_TURN_INFO[_name], judge=True))(_cls)
