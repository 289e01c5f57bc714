"""The newer form of ``evaluateInstances`` (``v1beta1``): ``metrics`` (or ``metric_sources``) and one ``instance``,
answered with ``metric_results``, one ``MetricResult`` (``score``, ``explanation``, ``error``) per metric, in the
order given (docs/vertex.md).

- ``exact_match_spec``, ``bleu_spec``, ``rouge_spec`` and ``computation_based_metric_spec`` (``EXACT_MATCH``,
  ``BLEU``, ``ROUGE`` with its ``parameters``) are scored by the metrics that score the older ``*_input`` fields
  (:data:`toolpath.vertex.instance_inputs.COMPUTED`), over the instance's ``response`` and ``reference``.
- ``llm_based_metric_spec`` and ``pointwise_metric_spec`` carry a judge's prompt template: its ``{variables}`` are
  filled from the instance (``prompt``, ``response``, ``reference``, then ``other_data``'s keys) and it is asked
  of toolpath's judge as ``pointwise_metric_input``'s template is (``instance_judges.asked_template``).
- What toolpath does not do is refused by name: Google's managed metrics (``predefined_metric_spec``), rubrics
  (given, generated or Google's), metrics registered in a Google project (``metric_resource_name``), a pairwise
  template (a ``MetricResult`` has no field for its choice), and code sent in the request
  (``custom_code_execution_spec``, ``result_parser_config``), which is never run.

Google's service reads only the first metric of a request; toolpath scores each. The failure of a request's only
metric is the request's failure (an error status, as the older form has); with several metrics, a metric that
fails or is refused gets its ``error`` (a ``google.rpc.Status``) and the others their scores. A malformed request
is one 400 whatever the number of metrics, found before any metric is run, as is a request of more than
:data:`MAX_METRICS` metrics or whose judged metrics would ask the judge more than ``MAX_SAMPLES`` times in all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolpath.errors import ConfigError
from toolpath.judges.client import Judge
from toolpath.metrics.text import ROUGE_TYPES
from toolpath.vertex.instance_inputs import COMPUTED, InputError, camel_case, computed_score
from toolpath.vertex.instance_judges import (
    MAX_SAMPLES,
    VARIABLE,
    JudgeFailure,
    JudgeOptions,
    RpcCode,
    asked_template,
    check_variables,
    room_for,
)

__all__ = ["metric_results", "newer_field"]

SPEC_INPUTS = {"exact_match_spec": "exact_match_input", "bleu_spec": "bleu_input", "rouge_spec": "rouge_input"}
"""A computation spec of ``Metric`` -> the older input scored by the same metric, with the same spec message."""
COMPUTATION_TYPES = {"EXACT_MATCH": "exact_match_spec", "BLEU": "bleu_spec", "ROUGE": "rouge_spec"}
"""``computation_based_metric_spec.type`` -> the spec its ``parameters`` are read as."""
ROUGE_NAMES = {name.lower(): name for name in ROUGE_TYPES}
"""``rouge_type`` in any case: the SDK sends its metric's name lowercased (``rouge_l_sum`` as ``rougelsum``)."""
REFUSED = {
    "predefined_metric_spec": "Google's managed metrics are judged with prompts and rubrics held by Google's "
    "service, which toolpath does not have",
    "custom_code_execution_spec": "toolpath never runs code sent in a request",
    "pairwise_metric_spec": "a MetricResult has no field for a pairwise choice; toolpath judges pairwise templates "
    "sent as pairwise_metric_input",
}
MAX_METRICS = 32
"""The most metrics one request may name (Google's service reads only the first); its judged metrics together ask
the judge at most ``MAX_SAMPLES`` times, as one ``pointwise_metric_input`` may."""
INSTANCE_FIELDS = ("prompt", "response", "reference")
"""The instance's own fields a template may name; ``other_data``'s keys name the rest."""


def metric_results(request: Any, judge: Judge) -> list[dict[str, Any]]:
    """The ``metric_results`` (as JSON) of a request in the newer form. Raises :class:`InputError` for a malformed
    request and, when it has one metric, :class:`JudgeFailure` (or :class:`ConfigError`) for that metric's failure."""
    metrics = [(f"metrics[{i}]", metric) for i, metric in enumerate(request.metrics)]
    for i, source in enumerate(request.metric_sources):
        where = f"metric_sources[{i}]"
        if source.WhichOneof("metric_source") == "metric_resource_name":
            metrics.append((where, None))
        elif source.HasField("metric"):
            metrics.append((f"{where}.metric", source.metric))
        else:
            raise InputError(f"{where} needs metric or metric_resource_name")
    if not metrics:
        raise InputError("metrics is empty: nothing to evaluate")
    if len(metrics) > MAX_METRICS:
        raise InputError(f"metrics: {len(metrics)} metrics in one request; at most {MAX_METRICS} are evaluated")
    if not request.HasField("instance"):
        raise InputError("instance is required with metrics")
    scorers = [_scorer(metric, where, request, judge) for where, metric in metrics]  # all checked, then run
    asks = sum(scorer.asks for scorer in scorers)
    if asks > MAX_SAMPLES:
        raise InputError(f"metrics: the judged metrics ask the judge {asks} times in all (their sampling_count); "
                         f"one request asks it at most {MAX_SAMPLES} times")  # fmt: skip
    if asks:
        room_for(asks)  # the process's judge budget: refused before any work, not half-way
    if len(scorers) == 1:
        return [scorers[0](request)]
    return [_or_error(score, request) for score in scorers]


class Scorer:
    """How one metric scores a request: ``scorer(request)`` is its ``MetricResult`` as JSON; ``asks`` is how many
    times it asks the judge."""

    def __init__(self, score: Callable[[Any], dict[str, Any]], asks: int = 0) -> None:
        self.score, self.asks = score, asks

    def __call__(self, request: Any) -> dict[str, Any]:
        return self.score(request)


NEWER_FIELDS = {
    ("metrics", "llm_based_metric_spec", "custom_output_format_config"): "a MetricResult has no field for the "
    "judge's raw output",
    ("metrics", "predefined_metric_spec", "step_autorater_configs"): REFUSED["predefined_metric_spec"],
    ("instance", "interactions_data_source"): "toolpath does not fetch interactions from Google's service; give the "
    "instance's prompt and response",
}
"""Fields the GenAI SDK sends in this form that the installed message types may lack, and why toolpath does not
serve what they ask (a 501 naming them, rather than an unknown field)."""


def newer_field(data: dict[str, Any], descriptor: Any) -> str | None:
    """Why a field of :data:`NEWER_FIELDS` in the request ``data`` (JSON; ``descriptor`` its message type's) is not
    served, when the installed types lack it; ``None`` when there is none."""
    for path, why in NEWER_FIELDS.items():
        for found in _found(data, descriptor, path, path[0]):
            return f"{found}: {why}"
    return None


def _found(data: Any, descriptor: Any, path: tuple[str, ...], where: str) -> list[str]:
    """Where ``path`` (field names, snake_case) is given in ``data`` while ``descriptor`` lacks its last field."""
    name, *rest = path
    if not isinstance(data, dict):
        return []
    field = descriptor.fields_by_name.get(name)
    given = name in data or camel_case(name) in data
    if not rest:
        return [where] if field is None and given else []
    if field is None:  # an unknown field on the way: the parser names it
        return []
    value = data.get(name, data.get(camel_case(name)))
    items = value if isinstance(value, list) else [value]
    found = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]" if isinstance(value, list) else where
        found += _found(item, field.message_type, tuple(rest), f"{at}.{rest[0]}")
    return found


def _scorer(metric: Any | None, where: str, request: Any, judge: Judge) -> Scorer:
    """How the metric at ``where`` scores a request: a function of the request to a ``MetricResult`` as JSON. What
    the request lacks for it is an :class:`InputError` here, before any metric is run."""
    if metric is None:
        return _refusal(f"{where}.metric_resource_name: metrics registered in a Google Cloud project are not served")
    kind = metric.WhichOneof("metric_spec")
    if kind is None:
        raise InputError(f"{where} has no metric spec (exact_match_spec, llm_based_metric_spec, …)")
    if kind in REFUSED:
        named = f" ({metric.predefined_metric_spec.metric_spec_name})" if kind == "predefined_metric_spec" else ""
        return _refusal(f"{where}.{kind}{named}: {REFUSED[kind]}")
    spec = getattr(metric, kind)
    if kind == "computation_based_metric_spec":
        kind, spec = _computation_spec(metric, f"{where}.{kind}")
    if kind in SPEC_INPUTS:
        return _computed(SPEC_INPUTS[kind], spec, f"{where}.{kind}", request.instance)
    if kind in ("llm_based_metric_spec", "pointwise_metric_spec"):
        return _judged(spec, f"{where}.{kind}", request, judge)
    return _refusal(f"{where}.{kind}: {REFUSED.get(kind, 'not served in the metrics form')}")


def _judged(spec: Any, where: str, request: Any, judge: Judge) -> Scorer:
    """A judge's template (``llm_based_metric_spec``, ``pointwise_metric_spec``) asked of toolpath's judge, with the
    spec's ``judge_autorater_config`` or else the request's ``autorater_config``."""
    autorater = request.autorater_config if request.HasField("autorater_config") else None
    autorater_where = "autorater_config"
    if spec.DESCRIPTOR.name == "LLMBasedMetricSpec":
        source = spec.WhichOneof("rubrics_source")
        if source is not None:
            return _refusal(f"{where}.{source}: judging against rubrics (given, generated or Google's) is not served")
        if spec.HasField("result_parser_config"):
            return _refusal(f"{where}.result_parser_config: toolpath never runs code sent in a request")
        if spec.HasField("additional_config"):
            return _refusal(f"{where}.additional_config: settings for Google's service; toolpath's judge has none")
        if spec.HasField("judge_autorater_config"):
            autorater, autorater_where = spec.judge_autorater_config, f"{where}.judge_autorater_config"
    elif spec.custom_output_format_config.return_raw_output:
        return _refusal(f"{where}.custom_output_format_config: a MetricResult has no field for the judge's raw output")
    options = JudgeOptions.of(judge, autorater, autorater_where)
    if not spec.metric_prompt_template.strip():
        raise InputError(f"{where}.metric_prompt_template is required")
    instance = request.instance
    values = _template_values(instance, spec.metric_prompt_template)
    has_agent_data = instance.HasField("agent_eval_data") or instance.HasField("agent_data")
    if has_agent_data and "agent_data" in VARIABLE.findall(spec.metric_prompt_template) and "agent_data" not in values:
        return _refusal(f"{where}.metric_prompt_template: toolpath does not render an instance's agent data "
                        "for {agent_data}; put what the judge should see in other_data")  # fmt: skip
    check_variables(spec.metric_prompt_template, values, "instance")

    def score(request: Any) -> dict[str, Any]:
        fields = asked_template(where, "instance", spec, values, options)
        return {field: fields[field] for field in ("score", "explanation") if field in fields}

    return Scorer(score, options.samples)


def _template_values(instance: Any, template: str) -> dict[str, str]:
    """The instance's text for each variable of ``template`` it has: its ``prompt``, ``response`` and ``reference``,
    then ``other_data``'s keys (a field given wins over a key of its name, as the API has it). Only what the template
    names is read, so a part that is not text elsewhere in the instance does not matter."""
    other = instance.other_data.map_instance
    values = {}
    for name in dict.fromkeys(VARIABLE.findall(template)):
        if name in INSTANCE_FIELDS and instance.HasField(name):
            values[name] = data_text(getattr(instance, name), f"instance.{name}")
        elif name in other:
            values[name] = data_text(other[name], f"instance.other_data.map_instance[{name!r}]")
    return values


def _computation_spec(metric: Any, where: str) -> tuple[str, Any]:
    """A metric's ``computation_based_metric_spec`` as the spec of its type, its ``parameters`` read as that spec's
    fields."""
    from google.protobuf import json_format

    spec = metric.computation_based_metric_spec
    type_name = type(spec).ComputationBasedMetricType.Name(spec.type_)
    kind = COMPUTATION_TYPES.get(type_name)
    if kind is None:
        known = ", ".join(COMPUTATION_TYPES)
        raise InputError(f"{where}.type is {type_name}: expected one of {known}")
    target = type(getattr(metric, kind))()
    parameters = json_format.MessageToDict(spec.parameters, preserving_proto_field_name=True)
    try:
        json_format.ParseDict(parameters, target)
    except json_format.ParseError as exc:
        said = str(exc).split("\n Available Fields", 1)[0]
        raise InputError(f"{where}.parameters: {said}") from None
    return kind, target


def _computed(input_name: str, spec: Any, where: str, instance: Any) -> Scorer:
    if input_name == "rouge_input" and spec.rouge_type.lower() in ROUGE_NAMES:
        spec = type(spec)(rouge_type=ROUGE_NAMES[spec.rouge_type.lower()], use_stemmer=spec.use_stemmer,
                          split_summaries=spec.split_summaries)  # fmt: skip
    metric = COMPUTED[input_name].build(spec, where)
    row = {field: instance_text(instance, field) for field in ("response", "reference")}

    def score(request: Any) -> dict[str, Any]:
        return {"score": computed_score(metric, row, "instance")}

    return Scorer(score)


def instance_text(instance: Any, field: str) -> str:
    """The text a computed metric scores of the instance's ``field`` (``InstanceData``, read by :func:`data_text`
    with its parts that are not text left out, as the GenAI SDK reads a response's text for the older form); a field
    not given is an :class:`InputError`."""
    where = f"instance.{field}"
    if not instance.HasField(field):
        raise InputError(f"{where} is required")
    return data_text(getattr(instance, field), where, text_only=False)


def data_text(data: Any, where: str, *, text_only: bool = True) -> str:
    """The text of an ``InstanceData`` at ``where``: its ``text``, or each content's text parts run together, a
    thought part (the model's reasoning) left out, as the GenAI SDK reads a content's text for the older form
    (``_extract_text_from_content``) and runs adjacent text parts together in a template; several contents (turns)
    on lines of their own. Another part (an image, a function call) is an :class:`InputError` when ``text_only``,
    else left out, unless no text part is left."""
    kind = data.WhichOneof("data")
    if kind == "text":
        return str(data.text)
    if kind is None:
        raise InputError(f"{where} needs text or contents")
    turns = []
    other: str | None = None
    for c, content in enumerate(data.contents.contents):
        texts, left_out = [], False
        for p, part in enumerate(content.parts):
            if part.WhichOneof("data") != "text":
                other, left_out = other or f"{where}.contents.contents[{c}].parts[{p}]", True
                if text_only:
                    raise InputError(f"{other}: only text parts are read")
            elif not part.thought:
                texts.append(part.text)
        if texts or not left_out:  # a turn that was only a function call is no line
            turns.append("".join(texts))
    if other is not None and not turns:
        raise InputError(f"{other}: {where} has no text part to score")
    return "\n".join(turns)


def _refusal(message: str) -> Scorer:
    def refuse(request: Any) -> dict[str, Any]:
        raise JudgeFailure(501, RpcCode.UNIMPLEMENTED, message)

    return Scorer(refuse)


def _or_error(score: Scorer, request: Any) -> dict[str, Any]:
    """One of several metrics' results: its failure is its ``error``, a ``google.rpc.Status``."""
    from google.rpc import code_pb2

    try:
        return score(request)
    except JudgeFailure as exc:
        return {"error": {"code": code_pb2.Code.Value(exc.code), "message": exc.message}}
    except ConfigError as exc:
        return {"error": {"code": code_pb2.Code.Value(RpcCode.FAILED_PRECONDITION), "message": str(exc)}}
