"""Vertex AI's model-based metric classes with Vertex AI's constructors (keyword arguments, templates given as
objects or strings, ``autorater_config``, ``system_instruction``), judged by toolpath's judge
(:mod:`toolpath.judges.vertex`: google-genai, its settings, cache and budget).

A template's ``input_variables`` are the columns the judge sees beside the response, as in Vertex AI: none by
default (``response``, and for pairwise metrics ``baseline_model_response``, are always shown).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolpath.errors import MetricError
from toolpath.judges import vertex as judges
from toolpath.judges.client import DEFAULT_MODEL, Ask
from toolpath.metrics.base import Row
from toolpath.model import MetricResult
from toolpath.vertex.raw_output import judge_raw, wants_raw_output

__all__ = [
    "AutoraterConfig",
    "CustomOutputConfig",
    "MetricPromptTemplateExamples",
    "PairwiseMetric",
    "PairwiseMetricPromptTemplate",
    "PointwiseMetric",
    "PointwiseMetricPromptTemplate",
]


class PointwiseMetricPromptTemplate(judges.PointwiseMetricPromptTemplate):
    """Vertex AI's ``PointwiseMetricPromptTemplate``: ``criteria`` and ``rating_rubric`` (score -> meaning), the
    row columns the judge sees (``input_variables``), and optionally the ``instruction``, ``metric_definition``,
    ``evaluation_steps`` and ``few_shot_examples``. ``str(template)`` is the prompt with ``{column}``
    placeholders."""

    shown_with: tuple[str, ...] = ("response",)

    def __init__(
        self,
        *,
        criteria: Mapping[str, str],
        rating_rubric: Mapping[str, str],
        input_variables: Sequence[str] | None = None,
        instruction: str | None = None,
        metric_definition: str | None = None,
        evaluation_steps: Mapping[str, str] | None = None,
        few_shot_examples: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(criteria, Mapping) or not criteria:
            raise MetricError("criteria must be a non-empty dict of criterion name -> description")
        if not isinstance(rating_rubric, Mapping) or not rating_rubric:
            raise MetricError("rating_rubric must be a non-empty dict of rating -> meaning")
        shown = [v for v in dict.fromkeys(input_variables or ()) if v not in self.shown_with]
        super().__init__(
            dict(criteria),
            dict(rating_rubric),
            tuple(shown),
            instruction,
            metric_definition,
            dict(evaluation_steps) if evaluation_steps else None,
            tuple(few_shot_examples or ()),
        )
        if not self.pairwise_rubric():  # a pointwise rubric's keys are numbers: a bad one is an error now
            bad = [key for key in rating_rubric if not _is_number(key)]
            if bad:
                raise MetricError(f"rating_rubric: a pointwise rating must be a number, got {bad[0]!r}")

    def pairwise_rubric(self) -> bool:
        return False

    @property
    def template(self) -> str:
        return self.text()

    @property
    def prompt_data(self) -> str:
        return self.text()

    @property
    def variables(self) -> set[str]:
        return {*self.input_variables, *self.shown_with}

    def __str__(self) -> str:
        return self.text()


class PairwiseMetricPromptTemplate(PointwiseMetricPromptTemplate, judges.PairwiseMetricPromptTemplate):
    """Vertex AI's ``PairwiseMetricPromptTemplate``: as the pointwise one, its rubric's keys ``A``, ``SAME``
    and ``B``; the judge compares ``response`` with ``baseline_model_response``."""

    shown_with = ("response", "baseline_model_response")

    def pairwise_rubric(self) -> bool:
        return True

    def text(self) -> str:
        return judges.PairwiseMetricPromptTemplate.text(self)


@dataclass
class AutoraterConfig:
    """Vertex AI's ``AutoraterConfig``: ``sampling_count`` judge samples per row, the judge model
    (``autorater_model``, a model name or a Vertex AI model resource name), ``flip_enabled`` and the judge's
    ``generation_config`` (its ``temperature``; other settings are refused). toolpath's pairwise judge always
    swaps the two responses' places on every other sample, so ``flip_enabled=False`` with several samples is
    refused."""

    sampling_count: int | None = None
    flip_enabled: bool | None = None
    autorater_model: str | None = None
    generation_config: Any = None


@dataclass
class CustomOutputConfig:
    """Vertex AI's ``CustomOutputConfig``: keep the judge's raw replies (``return_raw_output``: the
    ``<metric>/raw_output`` column) and read them with ``parsing_fn`` (the samples' raw texts -> a dict: its
    ``score`` and ``explanation`` are the result, its other keys ``<metric>/<key>`` columns)."""

    return_raw_output: bool = False
    parsing_fn: Callable[[Any], dict[str, Any]] | None = None


def _is_number(text: Any) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def judge_options(config: Any, *, pairwise: bool = False) -> tuple[str, int, float | None]:
    """(model, samples, temperature) of an ``AutoraterConfig`` (ours, or Vertex AI's own message: read by its
    fields; there an unset ``flip_enabled`` reads false, so only ours can refuse it)."""
    if config is None:
        return DEFAULT_MODEL, 1, None
    samples = getattr(config, "sampling_count", None) or 1
    if not isinstance(samples, int) or samples < 1:
        raise MetricError(f"autorater_config.sampling_count must be a positive integer, got {samples!r}")
    if pairwise and isinstance(config, AutoraterConfig) and config.flip_enabled is False and samples > 1:
        raise MetricError(
            "autorater_config.flip_enabled=False: toolpath's pairwise judge always swaps the responses' places "
            "on every other sample"
        )
    model = getattr(config, "autorater_model", None) or DEFAULT_MODEL
    return str(model).rsplit("models/", 1)[-1], samples, _temperature(getattr(config, "generation_config", None))


def _temperature(generation_config: Any) -> float | None:
    if generation_config is None:
        return None
    if isinstance(generation_config, Mapping):
        values = dict(generation_config)
    elif hasattr(type(generation_config), "to_dict"):  # a proto-plus message: Vertex AI's GenerationConfig
        values = type(generation_config).to_dict(generation_config)
    else:
        values = dict(vars(generation_config))
    others = sorted(k for k, v in values.items() if k != "temperature" and v not in (None, 0, 0.0, "", [], {}))
    if others:
        raise MetricError(
            f"autorater_config.generation_config: only temperature is used by toolpath's judge, not {', '.join(others)}"
        )
    temperature = values.get("temperature")
    return float(temperature) if temperature is not None else None


def _template(template: Any) -> Any:
    """Ours as it is, a string (or another library's template object) as the text it is."""
    if isinstance(template, judges.PointwiseMetricPromptTemplate | judges.TextTemplate):
        return template
    text = str(template)
    if not text.strip():
        raise MetricError("metric_prompt_template is empty")
    return judges.TextTemplate(text)


class _VertexShape:
    """What Vertex AI's metric objects answer: their name (``metric_name``, ``str()``) and template text."""

    name: str
    template: Any
    autorater_config: Any
    custom_output_config: Any

    @property
    def metric_name(self) -> str:
        return self.name

    @property
    def metric_prompt_template(self) -> str:
        return str(self.template.template) if isinstance(self.template, judges.TextTemplate) else self.template.text()

    def __str__(self) -> str:
        return self.name

    async def judge(self, row: Row, ask: Ask) -> MetricResult:
        if wants_raw_output(self.custom_output_config):
            return await judge_raw(self, self.custom_output_config, row, ask)  # type: ignore[arg-type]
        return await super().judge(row, ask)  # type: ignore[misc]

    def _set_up(
        self,
        metric: str,
        metric_prompt_template: Any,
        system_instruction: str | None,
        autorater_config: Any,
        custom_output_config: Any,
    ) -> None:
        """Vertex AI's constructor arguments read into the judge metric this shape sits on."""
        model, samples, temperature = judge_options(autorater_config, pairwise=bool(getattr(self, "pairwise", False)))
        judges.TemplateMetric.__init__(
            self,  # type: ignore[arg-type]
            metric,
            _template(metric_prompt_template),
            model=model,
            temperature=temperature,
            num_samples=samples,
            system_instruction=system_instruction,
        )
        self.autorater_config = autorater_config
        self.custom_output_config = custom_output_config

    def with_autorater(self, config: Any) -> Any:
        """A copy judged by ``config`` (an ``EvalTask``'s ``autorater_config``), unless this metric has its own."""
        if self.autorater_config is not None or config is None:
            return self
        made = copy.copy(self)
        options = judge_options(config, pairwise=bool(getattr(self, "pairwise", False)))
        made.model, made.num_samples, made.temperature = options  # type: ignore[attr-defined]
        made.autorater_config = config
        return made


class PointwiseMetric(_VertexShape, judges.PointwiseMetric):
    """Vertex AI's ``PointwiseMetric``: a judge rates each row's ``response`` by ``metric_prompt_template``
    (a :class:`PointwiseMetricPromptTemplate`, or the prompt as a string with ``{column}`` placeholders; then
    any number the judge gives is the score)."""

    def __init__(
        self,
        *,
        metric: str,
        metric_prompt_template: Any,
        system_instruction: str | None = None,
        autorater_config: Any = None,
        custom_output_config: Any = None,
    ) -> None:
        self._set_up(metric, metric_prompt_template, system_instruction, autorater_config, custom_output_config)


class PairwiseMetric(_VertexShape, judges.PairwiseMetric):
    """Vertex AI's ``PairwiseMetric``: a judge compares each row's ``response`` (the candidate) with its
    ``baseline_model_response``. ``baseline_model`` (anything ``EvalTask.evaluate(model=…)`` takes) writes that
    column first, from every row's prompt."""

    def __init__(
        self,
        *,
        metric: str,
        metric_prompt_template: Any,
        baseline_model: Any = None,
        system_instruction: str | None = None,
        autorater_config: Any = None,
        custom_output_config: Any = None,
    ) -> None:
        self._set_up(metric, metric_prompt_template, system_instruction, autorater_config, custom_output_config)
        self.baseline_model = baseline_model


def _pointwise(name: str) -> PointwiseMetric:
    made = judges.builtin_metric(name)
    return PointwiseMetric(metric=name, metric_prompt_template=made.template)  # type: ignore[attr-defined]


def _pairwise(name: str) -> PairwiseMetric:
    made = judges.builtin_metric(name)
    return PairwiseMetric(metric=name, metric_prompt_template=made.template)  # type: ignore[attr-defined]


class MetricPromptTemplateExamples:
    """Vertex AI's ``MetricPromptTemplateExamples``: the built-in judge metrics as ``Pointwise.FLUENCY``,
    ``Pairwise.SAFETY``…, and their templates' text by name (:meth:`get_prompt_template`). The templates are
    toolpath's own (docs/metrics.md), judged the same way as the metric names (``"fluency"``)."""

    NAMES = tuple(judges.BUILTIN_TEMPLATES)

    @classmethod
    def get_prompt_template(cls, metric_name: str) -> str:
        """The template of ``metric_name`` (``fluency``, ``pairwise_fluency``…) as text with placeholders."""
        if metric_name not in cls.list_example_metric_names():
            known = ", ".join(cls.list_example_metric_names())
            raise MetricError(f"no example template named {metric_name!r}; known: {known}")
        template = judges.builtin_metric(metric_name).template  # type: ignore[attr-defined]
        return str(template.text())

    @classmethod
    def list_example_metric_names(cls) -> list[str]:
        return [*cls.NAMES, *(f"pairwise_{n}" for n in cls.NAMES)]

    class Pointwise:
        """The pointwise examples."""

        FLUENCY = _pointwise("fluency")
        COHERENCE = _pointwise("coherence")
        SAFETY = _pointwise("safety")
        GROUNDEDNESS = _pointwise("groundedness")
        INSTRUCTION_FOLLOWING = _pointwise("instruction_following")
        VERBOSITY = _pointwise("verbosity")
        TEXT_QUALITY = _pointwise("text_quality")
        SUMMARIZATION_QUALITY = _pointwise("summarization_quality")
        QUESTION_ANSWERING_QUALITY = _pointwise("question_answering_quality")
        MULTI_TURN_CHAT_QUALITY = _pointwise("multi_turn_chat_quality")
        MULTI_TURN_SAFETY = _pointwise("multi_turn_safety")

    class Pairwise:
        """The pairwise examples (named ``pairwise_<name>``)."""

        FLUENCY = _pairwise("pairwise_fluency")
        COHERENCE = _pairwise("pairwise_coherence")
        SAFETY = _pairwise("pairwise_safety")
        GROUNDEDNESS = _pairwise("pairwise_groundedness")
        INSTRUCTION_FOLLOWING = _pairwise("pairwise_instruction_following")
        VERBOSITY = _pairwise("pairwise_verbosity")
        TEXT_QUALITY = _pairwise("pairwise_text_quality")
        SUMMARIZATION_QUALITY = _pairwise("pairwise_summarization_quality")
        QUESTION_ANSWERING_QUALITY = _pairwise("pairwise_question_answering_quality")
        MULTI_TURN_CHAT_QUALITY = _pairwise("pairwise_multi_turn_chat_quality")
        MULTI_TURN_SAFETY = _pairwise("pairwise_multi_turn_safety")
