"""Google's ``OnlineEvaluator`` resource (Agent Platform, ``v1beta1``) as an online config: ``toolpath collect
--online evaluator.json`` reads the resource as its REST API writes it (camelCase keys, or the protos' snake_case),
parsed by the installed message types (``google-cloud-aiplatform``, ``toolpath[vertex]``), into the one
``[[evaluator]]`` table it declares (docs/collector.md, "Google's OnlineEvaluator").

What toolpath computes is mapped; what it does not is one :class:`~toolpath.errors.ConfigError` naming the field:
registered metrics, Google's managed metrics, judge templates, code, a trace filter on tokens, and a trace filter
on duration (the type gives no unit for it, so toolpath will not guess one). The fields that point at Google's
own trace and log store (``agentResource``, ``cloudObservability.logView`` / ``traceView`` / ``openTelemetry``)
select where Google reads traces; toolpath scores the traffic its collector receives, and says so in the docs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError
from toolpath.metrics.text import ROUGE_TYPES

__all__ = ["online_evaluator_config"]

ROUGE_METRICS = {"rouge1": "rouge_1", "rouge2": "rouge_2", "rougel": "rouge_l", "rougelsum": "rouge_l_sum"}
"""``rougeSpec.rougeType`` in any case -> toolpath's metric of that type (no stemmer, no summary splitting)."""
COMPUTATION_TYPES = {"EXACT_MATCH": "exact_match_spec", "BLEU": "bleu_spec", "ROUGE": "rouge_spec"}
"""``computationBasedMetricSpec.type`` -> the spec its ``parameters`` are read as."""
REFUSED_SPECS = {
    "predefined_metric_spec": "Google's managed metrics are judged with prompts and rubrics held by Google's "
    "service, which toolpath does not have",
    "llm_based_metric_spec": "a judge template metric is not an online metric of toolpath's: name one of "
    "toolpath's judged metrics in online.toml instead",
    "pointwise_metric_spec": "a judge template metric is not an online metric of toolpath's: name one of "
    "toolpath's judged metrics in online.toml instead",
    "pairwise_metric_spec": "online scoring scores one turn; a pairwise metric compares two responses",
    "custom_code_execution_spec": "toolpath never runs code a config sends",
}
SUSPENDED = 2
"""``OnlineEvaluator.State.SUSPENDED``: Google's evaluator evaluates nothing in this state."""
UNNAMED = "default"


def online_evaluator_config(path: str | Path) -> dict[str, Any]:
    """The online config (``OnlineConfig.load``'s mapping) of the ``OnlineEvaluator`` resource in the JSON file
    ``path``: one ``[[evaluator]]`` table. Each field it cannot map is a :class:`ConfigError` naming it."""
    where = str(path)
    try:
        from google.cloud.aiplatform_v1beta1.types import OnlineEvaluator
        from google.protobuf import json_format
    except ImportError:
        raise ConfigError(
            f"{where}: a .json online config is Google's OnlineEvaluator resource, read with google-cloud-aiplatform's "
            "types: pip install 'toolpath[vertex]' (or give an online.toml)"
        ) from None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected an OnlineEvaluator resource (a JSON object), got {type(data).__name__}")
    resource = OnlineEvaluator.pb()()
    try:
        json_format.ParseDict(data, resource)
    except json_format.ParseError as exc:
        said = str(exc).split("\n Available Fields", 1)[0]
        raise ConfigError(f"{where}: not an OnlineEvaluator resource: {said}") from None
    return {"evaluator": [_table(resource, f"{where}: ")]}


def _table(resource: Any, where: str) -> dict[str, Any]:
    if resource.state == SUSPENDED:
        raise ConfigError(f"{where}state is SUSPENDED: this evaluator evaluates nothing (remove state to score)")
    table: dict[str, Any] = {
        "name": _name(resource),
        "version": resource.update_time.ToJsonString() if resource.HasField("update_time") else "1",
        "metrics": _metrics(resource, where),
    }
    config = resource.config
    if not config.HasField("random_sampling"):
        raise ConfigError(f"{where}config.randomSampling.percentage is required (a whole number from 1 to 100)")
    percentage = config.random_sampling.percentage
    if not 1 <= percentage <= 100:
        raise ConfigError(
            f"{where}config.randomSampling.percentage = {percentage}: expected a whole number from 1 to 100"
        )
    table["sample_rate"] = percentage / 100
    if config.max_evaluated_samples_per_run < 0:
        raise ConfigError(
            f"{where}config.maxEvaluatedSamplesPerRun = {config.max_evaluated_samples_per_run}: expected 0 "
            "(unbounded) or more"
        )
    if config.max_evaluated_samples_per_run:  # toolpath scores continuously: a run's cap is the hour's
        table["max_per_hour"] = config.max_evaluated_samples_per_run
    for index, predicate in enumerate(resource.cloud_observability.trace_scope.filter):
        field = predicate.WhichOneof("predicate")
        place = f"{where}cloudObservability.traceScope.filter[{index}]"
        if field == "duration":
            raise ConfigError(
                f"{place}.duration: the OnlineEvaluator type states no unit for a trace's duration, so toolpath "
                "will not guess one; filter on latency with min_latency_seconds / max_latency_seconds in an "
                "online.toml"
            )
        if field == "total_token_usage":
            raise ConfigError(
                f"{place}.totalTokenUsage: toolpath's online evaluators do not filter turns by token usage"
            )
        raise ConfigError(f"{place}: a predicate needs duration or totalTokenUsage")
    return table


def _name(resource: Any) -> str:
    """The resource name's id (``projects/…/onlineEvaluators/{id}``), else its display name, made an evaluator name:
    letters, digits, ``_``, ``.`` and ``-``, at most 64, first a letter or a digit."""
    given = resource.name.rsplit("/", 1)[-1] or resource.display_name
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", given).lstrip("_.-")[:64]
    return name or UNNAMED


def _metrics(resource: Any, where: str) -> list[str]:
    if not resource.metric_sources:
        raise ConfigError(f"{where}metricSources names no metric (at least one is required)")
    names: list[str] = []
    for index, source in enumerate(resource.metric_sources):
        place = f"{where}metricSources[{index}]"
        if source.WhichOneof("metric_source") == "metric_resource_name":
            raise ConfigError(
                f"{place}.metricResourceName = {source.metric_resource_name!r}: a metric registered in a Google "
                "project is defined there, out of toolpath's reach"
            )
        if not source.HasField("metric"):
            raise ConfigError(f"{place}: needs metric or metricResourceName")
        name = _metric_name(source.metric, f"{place}.metric")
        if name in names:
            raise ConfigError(f"{place}: names {name} a second time")
        names.append(name)
    return names


def _metric_name(metric: Any, place: str) -> str:
    """toolpath's metric for a computation spec (exact match, BLEU, ROUGE) whose options are its options."""
    if metric.aggregation_metrics:
        raise ConfigError(
            f"{place}.aggregationMetrics: online scoring scores each turn; aggregate the stored scores instead"
        )
    kind = metric.WhichOneof("metric_spec")
    if kind is None:
        raise ConfigError(f"{place}: has no metric spec (exactMatchSpec, bleuSpec, rougeSpec, …)")
    if kind in REFUSED_SPECS:
        raise ConfigError(f"{place}.{_camel(kind)}: {REFUSED_SPECS[kind]}")
    spec = getattr(metric, kind)
    if kind == "computation_based_metric_spec":
        kind, spec = _computation_spec(metric, f"{place}.computationBasedMetricSpec")
        place += ".computationBasedMetricSpec.parameters"
    else:
        place += f".{_camel(kind)}"
    if kind == "exact_match_spec":
        return "exact_match"
    if kind == "bleu_spec":
        if not spec.use_effective_order:
            raise ConfigError(
                f"{place}.useEffectiveOrder is false: toolpath's online bleu uses the effective order "
                "(set useEffectiveOrder to true to score with it)"
            )
        return "bleu"
    rouge = ROUGE_METRICS.get(spec.rouge_type.lower())
    if rouge is None:
        known = ", ".join(t for t in ROUGE_TYPES if t.lower() in ROUGE_METRICS)
        raise ConfigError(f"{place}.rougeType = {spec.rouge_type!r}: toolpath's online ROUGE metrics are {known}")
    for option in ("use_stemmer", "split_summaries"):
        if getattr(spec, option):
            raise ConfigError(f"{place}.{_camel(option)} is true: toolpath's online {rouge} does not take it")
    return rouge


def _computation_spec(metric: Any, place: str) -> tuple[str, Any]:
    """``computationBasedMetricSpec`` as the spec of its type, its ``parameters`` read as that spec's fields."""
    from google.protobuf import json_format

    spec = metric.computation_based_metric_spec
    type_name = type(spec).ComputationBasedMetricType.Name(spec.type_)
    kind = COMPUTATION_TYPES.get(type_name)
    if kind is None:
        raise ConfigError(f"{place}.type is {type_name}: expected one of {', '.join(COMPUTATION_TYPES)}")
    target = type(getattr(metric, kind))()
    try:
        json_format.ParseDict(json_format.MessageToDict(spec.parameters), target)
    except json_format.ParseError as exc:
        raise ConfigError(f"{place}.parameters: {str(exc).split(chr(10) + ' Available Fields', 1)[0]}") from None
    return kind, target


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)
