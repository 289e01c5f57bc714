"""What each input of ``evaluateInstances`` is (docs/vertex.md): which of toolpath's metrics scores it, how an
instance becomes that metric's row, and where its scores go in the reply.

Three shapes, as the API has them:

- **computed**, ``instances: []`` in, ``<name>_results.<name>_metric_values: [{score}]`` out, one value per
  instance in order: exact match, BLEU, ROUGE, the tool-call metrics and the trajectory metrics;
- **judged**, one ``instance`` in, ``<name>_result: {score, explanation, confidence}`` out (pairwise ones:
  ``pairwise_choice`` instead of ``score``): Vertex AI's model-based metrics, asked of toolpath's judge;
- **templated**: ``pointwise_metric_input`` / ``pairwise_metric_input``, a prompt template and a JSON instance
  (:mod:`toolpath.vertex.instance_judges`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from toolpath.evaluation.catalog import create_metric
from toolpath.judges.vertex import PointwiseMetricPromptTemplate
from toolpath.metrics.base import Metric, MissingInput

__all__ = ["COMPUTED", "JUDGED", "NOT_SERVED", "Computed", "InputError", "Judged", "camel_case", "computed_score"]


class InputError(ValueError):
    """An instance the metric cannot read: a 400 naming the field."""


@dataclass(frozen=True)
class Computed:
    """An input of many instances, each scored by the catalog metric ``metric`` (with ``params(spec, where)``, ``where``
    the spec's place in the request) over the row ``row(instance, where)``."""

    metric: str
    results: str
    """The reply's field: ``exact_match_results``; its list is ``exact_match_metric_values``."""
    row: Callable[[Any, str], dict[str, Any]]
    params: Callable[[Any, str], dict[str, Any]] = lambda spec, where: {}

    @property
    def values(self) -> str:
        return self.results.removesuffix("_results") + "_metric_values"

    def build(self, spec: Any, where: str) -> Metric:
        """The catalog metric for ``spec`` (its message at ``where`` in the request)."""
        return create_metric(self.metric, **self.params(spec, where))


def camel_case(name: str) -> str:
    """A field's JSON name: ``exact_match_input`` -> ``exactMatchInput``."""
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def computed_score(metric: Metric, row: dict[str, Any], where: str) -> float:
    """``metric``'s score of ``row`` (the instance at ``where``); what it cannot score is an :class:`InputError`."""
    try:
        result = metric.score(row)
    except MissingInput as exc:
        raise InputError(f"{where}: {exc}") from None
    if result.score is None:
        raise InputError(f"{where}: {result.explanation}")
    return result.score


class Side(StrEnum):
    """How many responses a judged input compares."""

    POINTWISE = "pointwise"
    PAIRWISE = "pairwise"


@dataclass(frozen=True)
class Judged:
    """An input of one instance, judged with ``template`` (one of toolpath's built-in judge templates by name,
    or a template of this module) over the instance's fields named in ``shown``."""

    template: str | PointwiseMetricPromptTemplate
    result: str
    shown: tuple[str, ...] = ()
    """The instance's fields the judge sees besides the prediction(s), in this order, when they are given."""
    side: Side = Side.POINTWISE
    reference_by_spec: bool = False
    """``metric_spec.use_reference`` adds the instance's ``reference`` to what the judge sees."""


# --- computed inputs ---------------------------------------------------------------------------------------


def _text(instance: Any, field: str, where: str) -> str:
    if not instance.HasField(field):
        raise InputError(f"{where}.{field} is required")
    return str(getattr(instance, field))


def _responses(instance: Any, where: str) -> dict[str, Any]:
    return {"response": _text(instance, "prediction", where), "reference": _text(instance, "reference", where)}


def _prediction(instance: Any, where: str) -> dict[str, Any]:
    return {"response": _text(instance, "prediction", where)}


def trajectory(message: Any, where: str) -> list[dict[str, Any]]:
    """A ``Trajectory`` message as the list of ``{"tool_name", "tool_input"}`` toolpath's metrics read (each
    ``tool_input`` is JSON text in the message: an empty one is no arguments)."""
    calls = []
    for i, call in enumerate(message.tool_calls):
        text = call.tool_input.strip()
        try:
            arguments = json.loads(text) if text else {}
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}.tool_calls[{i}].tool_input is not JSON ({exc.msg} at char {exc.pos})") from None
        if not isinstance(arguments, dict):
            raise InputError(f"{where}.tool_calls[{i}].tool_input must be a JSON object")
        if not call.tool_name:
            raise InputError(f"{where}.tool_calls[{i}].tool_name is required")
        calls.append({"tool_name": call.tool_name, "tool_input": arguments})
    return calls


def _trajectories(instance: Any, where: str) -> dict[str, Any]:
    row = _predicted(instance, where)
    if not instance.HasField("reference_trajectory"):
        raise InputError(f"{where}.reference_trajectory is required")
    row["reference_trajectory"] = trajectory(instance.reference_trajectory, f"{where}.reference_trajectory")
    return row


def _predicted(instance: Any, where: str) -> dict[str, Any]:
    if not instance.HasField("predicted_trajectory"):
        raise InputError(f"{where}.predicted_trajectory is required")
    return {"predicted_trajectory": trajectory(instance.predicted_trajectory, f"{where}.predicted_trajectory")}


def _rouge(spec: Any, where: str) -> dict[str, Any]:
    if not spec.rouge_type:
        raise InputError(f"{where}.rouge_type is required (rouge1 to rouge9, rougeL or rougeLsum)")
    return {"rouge_type": spec.rouge_type, "use_stemmer": spec.use_stemmer, "split_summaries": spec.split_summaries}


def _single_tool(spec: Any, where: str) -> dict[str, Any]:
    if not spec.tool_name:
        raise InputError(f"{where}.tool_name is required")
    return {"tool_name": spec.tool_name}


COMPUTED: dict[str, Computed] = {
    "exact_match_input": Computed("exact_match", "exact_match_results", _responses),
    "bleu_input": Computed(
        "bleu", "bleu_results", _responses, lambda spec, where: {"use_effective_order": spec.use_effective_order}
    ),
    "rouge_input": Computed("rouge", "rouge_results", _responses, _rouge),
    "tool_call_valid_input": Computed("tool_call_valid", "tool_call_valid_results", _prediction),
    "tool_name_match_input": Computed("tool_name_match", "tool_name_match_results", _responses),
    "tool_parameter_key_match_input": Computed(
        "tool_parameter_key_match", "tool_parameter_key_match_results", _responses
    ),
    "tool_parameter_kv_match_input": Computed(
        "tool_parameter_kv_match",
        "tool_parameter_kv_match_results",
        _responses,
        lambda spec, where: {"use_strict_string_match": spec.use_strict_string_match},
    ),
    "trajectory_exact_match_input": Computed("trajectory_exact_match", "trajectory_exact_match_results", _trajectories),
    "trajectory_in_order_match_input": Computed(
        "trajectory_in_order_match", "trajectory_in_order_match_results", _trajectories
    ),
    "trajectory_any_order_match_input": Computed(
        "trajectory_any_order_match", "trajectory_any_order_match_results", _trajectories
    ),
    "trajectory_precision_input": Computed("trajectory_precision", "trajectory_precision_results", _trajectories),
    "trajectory_recall_input": Computed("trajectory_recall", "trajectory_recall_results", _trajectories),
    "trajectory_single_tool_use_input": Computed(
        "trajectory_single_tool_use", "trajectory_single_tool_use_results", _predicted, _single_tool
    ),
}


# --- judged inputs -----------------------------------------------------------------------------------------

SUMMARIZATION_HELPFULNESS = PointwiseMetricPromptTemplate(
    {
        "helpfulness": "The summary keeps the details a reader needs, so that it can stand in for the original text "
        "for the purpose the instruction gives."
    },
    {
        "5": "Helpful: it can replace the original text.",
        "4": "Somewhat helpful: minor details are missing.",
        "3": "Neutral: useful, but a reader would still need the original.",
        "2": "Somewhat unhelpful: important details are missing.",
        "1": "Unhelpful: it cannot replace the original text.",
    },
    ("instruction", "context"),
)
QUESTION_ANSWERING_RELEVANCE = PointwiseMetricPromptTemplate(
    {"relevance": "The answer is about what the question asks and brings in nothing unrelated to it."},
    {
        "5": "Relevant: everything in it answers the question.",
        "4": "Somewhat relevant: mostly on the question, with a little that is not.",
        "3": "Neutral: as much beside the question as on it.",
        "2": "Somewhat irrelevant: mostly beside the question.",
        "1": "Irrelevant: it does not address the question.",
    },
    ("instruction", "context"),
)
QUESTION_ANSWERING_HELPFULNESS = PointwiseMetricPromptTemplate(
    {"helpfulness": "The answer gives the key details the question needs, so that the asker can act on it."},
    {
        "5": "Helpful: every key detail is there.",
        "4": "Somewhat helpful: a minor detail is missing.",
        "3": "Neutral: some key details, not all.",
        "2": "Somewhat unhelpful: most key details are missing.",
        "1": "Unhelpful: none of the key details.",
    },
    ("instruction", "context"),
)
QUESTION_ANSWERING_CORRECTNESS = PointwiseMetricPromptTemplate(
    {"correctness": "The answer to the question is correct, by the context and the reference answer when given."},
    {"1": "Correct.", "0": "Incorrect."},
    ("instruction", "context"),
)

JUDGED: dict[str, Judged] = {
    "fluency_input": Judged("fluency", "fluency_result"),
    "coherence_input": Judged("coherence", "coherence_result"),
    "safety_input": Judged("safety", "safety_result"),
    "groundedness_input": Judged("groundedness", "groundedness_result", ("context",)),
    "fulfillment_input": Judged("instruction_following", "fulfillment_result", ("instruction",)),
    "summarization_quality_input": Judged(
        "summarization_quality", "summarization_quality_result", ("instruction", "context"), reference_by_spec=True
    ),
    "pairwise_summarization_quality_input": Judged(
        "summarization_quality",
        "pairwise_summarization_quality_result",
        ("instruction", "context"),
        Side.PAIRWISE,
        reference_by_spec=True,
    ),
    "summarization_helpfulness_input": Judged(
        SUMMARIZATION_HELPFULNESS,
        "summarization_helpfulness_result",
        ("instruction", "context"),
        reference_by_spec=True,
    ),
    "summarization_verbosity_input": Judged(
        "verbosity", "summarization_verbosity_result", ("instruction", "context"), reference_by_spec=True
    ),
    "question_answering_quality_input": Judged(
        "question_answering_quality",
        "question_answering_quality_result",
        ("instruction", "context"),
        reference_by_spec=True,
    ),
    "pairwise_question_answering_quality_input": Judged(
        "question_answering_quality",
        "pairwise_question_answering_quality_result",
        ("instruction", "context"),
        Side.PAIRWISE,
        reference_by_spec=True,
    ),
    "question_answering_relevance_input": Judged(
        QUESTION_ANSWERING_RELEVANCE,
        "question_answering_relevance_result",
        ("instruction", "context"),
        reference_by_spec=True,
    ),
    "question_answering_helpfulness_input": Judged(
        QUESTION_ANSWERING_HELPFULNESS,
        "question_answering_helpfulness_result",
        ("instruction", "context"),
        reference_by_spec=True,
    ),
    "question_answering_correctness_input": Judged(
        QUESTION_ANSWERING_CORRECTNESS,
        "question_answering_correctness_result",
        ("instruction", "context"),
        reference_by_spec=True,
    ),
}

NOT_SERVED: dict[str, str] = {
    "comet_input": "COMET needs Google's hosted translation model",
    "metricx_input": "MetricX needs Google's hosted translation model",
    "rubric_based_instruction_following_input": "rubric generation is not served",
    "rubric_based_metric_input": "rubric-based metrics (rubrics Google's service writes or holds) are not served",
}
"""Inputs of the API toolpath does not compute, and why: an UNIMPLEMENTED reply that says so."""
