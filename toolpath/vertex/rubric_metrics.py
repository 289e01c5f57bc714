"""Vertex AI's rubric-based metrics, with Vertex AI's constructors: a model writes each row's rubrics (questions
the response should satisfy) from ``RubricGenerationConfig.prompt_template``, and a critique metric (pointwise,
or pairwise against ``baseline_model_response``) judges the response against them. ``PredefinedRubricMetrics``
are Vertex AI's own, their prompts and parsers read from the installed ``google-cloud-aiplatform`` when first
used. The service-side name ``rubric_based_instruction_following`` is refused
(:class:`~toolpath.errors.MetricError`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from toolpath.datasets import load_rows
from toolpath.errors import MetricError
from toolpath.judges.vertex import VARIABLE, TemplateMetric
from toolpath.vertex.generated_responses import generate
from toolpath.vertex.model_based import AutoraterConfig, CustomOutputConfig, PairwiseMetric, PointwiseMetric

__all__ = ["PredefinedRubricMetrics", "RubricBasedMetric", "RubricGenerationConfig", "parse_rubrics"]

DEFAULT_RUBRIC_MODEL = "gemini-2.5-pro"
"""The model that writes rubrics when the config names none (Vertex AI's default)."""
UNSUPPORTED = (
    "{name}: is computed inside Vertex AI's evaluation service; use "
    "PredefinedRubricMetrics.Pointwise.INSTRUCTION_FOLLOWING, or a RubricBasedMetric with a PointwiseMetric critique"
)
NOT_A_CRITIQUE = "{name}: a RubricBasedMetric's critique_metric must be a PointwiseMetric or a PairwiseMetric"


class RubricGenerationConfig:
    """Vertex AI's ``RubricGenerationConfig``: the prompt that writes a row's rubrics (``{column}``
    placeholders), the model that answers it (a function ``prompt -> text``, a Gemini model name or a
    ``GenerativeModel``; by default ``gemini-2.5-pro``) and the parser of its reply (by default
    :func:`parse_rubrics`)."""

    def __init__(self, prompt_template: str, model: Any = None, parsing_fn: Callable[[str], Any] | None = None) -> None:
        self.prompt_template, self.model, self.parsing_fn = prompt_template, model, parsing_fn


def parse_rubrics(reply: str) -> Any:
    """A rubric-writing reply's JSON block (after a ```` ```json ```` fence), or ``{"questions": ""}``."""
    _, fence, rest = reply.partition("```json")
    if not fence or "```json" in rest:
        return {"questions": ""}
    try:
        return json.loads(rest.strip("\n` "))
    except json.JSONDecodeError:
        return {"questions": ""}


class RubricBasedMetric:
    """Vertex AI's ``RubricBasedMetric(generation_config=…, critique_metric=…)``. The rows' ``rubrics`` column
    is written first unless the dataset has one (as in Vertex AI); the critique metric then scores the rows and
    names the result."""

    def __init__(
        self, *, generation_config: RubricGenerationConfig, critique_metric: Any, question_blocks: bool = False
    ) -> None:
        self.generation_config, self.critique_metric = generation_config, critique_metric
        self.name = str(getattr(critique_metric, "name", critique_metric))
        self.question_blocks = question_blocks
        """Rubrics are shown to the critique as ``<question>`` blocks (Vertex AI's own critique prompts)."""

    @property
    def metric_name(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def refusal(self) -> MetricError | None:
        """Why this metric cannot be scored here, or ``None``."""
        if not isinstance(self.critique_metric, TemplateMetric):
            return MetricError(NOT_A_CRITIQUE.format(name=self.name))
        return None

    def generate_rubrics(self, eval_dataset: Any) -> Any:
        """The dataset with its ``rubrics`` column written (a ``DataFrame`` when given one)."""
        rows = load_rows(eval_dataset)
        self.write_rubrics(rows)
        if hasattr(eval_dataset, "columns"):
            import pandas as pd  # a DataFrame came in

            return pd.DataFrame(rows)
        return rows

    def write_rubrics(self, rows: list[dict[str, Any]]) -> None:
        """Each row's ``rubrics``, as the critique prompt shows them, unless every row has them already; the
        rubric writer's other keys become columns. A row it could not write gets an ``error``."""
        if rows and all(row.get("rubrics") is not None for row in rows):
            for row in rows:
                row["rubrics"] = self.shown(row["rubrics"])
            return
        config = self.generation_config
        wanted = set(VARIABLE.findall(config.prompt_template))
        prompts = []
        for index, row in enumerate(rows):
            missing = sorted(v for v in wanted if v not in row)
            if missing:
                raise MetricError(f"{self.name}: dataset row {index} lacks {', '.join(missing)} to write rubrics")
            prompts.append(_filled(config.prompt_template, row))
        parse = config.parsing_fn or parse_rubrics
        model = config.model if config.model is not None else DEFAULT_RUBRIC_MODEL
        for row, (text, error) in zip(rows, generate(model, prompts, "rubric generation"), strict=True):
            if error is not None:
                row["rubrics"], row["error"] = None, error
                continue
            result = parse(text or "")
            if isinstance(result, dict):
                questions = result.pop("questions", None)
                row.update(result)
            else:
                questions = result
            row["rubrics"] = self.shown(questions) if questions else None

    def shown(self, questions: Any) -> Any:
        if isinstance(questions, str) or not isinstance(questions, Sequence):
            return questions
        if self.question_blocks:
            return "\n".join(f"<question>{str(q).strip()}" for q in questions)
        return "\n".join(str(q) for q in questions)


def _filled(template: str, row: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        return str(row[match.group(1)])

    return VARIABLE.sub(value, template)


class _Predefined:
    """One of Vertex AI's predefined rubric metrics, made from its installed prompts on first use."""

    def __init__(self, name: str, generation: str, critique: str, *, pairwise: bool = False) -> None:
        self.metric, self.generation, self.critique, self.pairwise = name, generation, critique, pairwise
        self.made: RubricBasedMetric | None = None

    def __get__(self, owner_object: Any, owner: type) -> RubricBasedMetric:
        if self.made is None:
            try:
                from vertexai.preview.evaluation import utils
                from vertexai.preview.evaluation.metrics import _default_templates as prompts
            except ImportError:
                raise MetricError(
                    f"{self.metric}: Vertex AI's predefined rubric metrics use its own prompts; "
                    "pip install google-cloud-aiplatform"
                ) from None
            critique: PointwiseMetric | PairwiseMetric
            if self.pairwise:  # as Vertex AI's: one sample, read by its pairwise parser
                critique = PairwiseMetric(
                    metric=self.metric,
                    metric_prompt_template=getattr(prompts, self.critique),
                    custom_output_config=CustomOutputConfig(True, utils.parse_pairwise_rubric_result),
                    autorater_config=AutoraterConfig(sampling_count=1),
                )
            else:
                critique = PointwiseMetric(
                    metric=self.metric,
                    metric_prompt_template=getattr(prompts, self.critique),
                    custom_output_config=CustomOutputConfig(True, utils.parse_pointwise_rubric_result),
                )
            generation = RubricGenerationConfig(prompt_template=getattr(prompts, self.generation))
            self.made = RubricBasedMetric(generation_config=generation, critique_metric=critique, question_blocks=True)
        return self.made


class PredefinedRubricMetrics:
    """Vertex AI's ``PredefinedRubricMetrics``, scored here with Vertex AI's prompts and parsers."""

    class Pointwise:
        INSTRUCTION_FOLLOWING = _Predefined(
            "rb_instruction_following",
            "INSTRUCTION_FOLLOWING_RUBRIC_GENERATION_PROMPT_TEMPLATE",
            "INSTRUCTION_FOLLOWING_RUBRIC_CRITIQUE_TEMPLATE",
        )
        MULTIMODAL_UNDERSTANDING = _Predefined(
            "rb_multimodal_understanding",
            "MULTIMODAL_UNDERSTANDING_RUBRIC_GENERATION_PROMPT_TEMPLATE",
            "MULTIMODAL_UNDERSTANDING_RUBRIC_CRITIQUE_TEMPLATE",
        )
        TEXT_QUALITY = _Predefined(
            "rb_text_quality", "TEXT_QUALITY_RUBRIC_GENERATION_PROMPT_TEMPLATE", "TEXT_QUALITY_RUBRIC_CRITIQUE_TEMPLATE"
        )

    class Pairwise:
        INSTRUCTION_FOLLOWING = _Predefined(
            "pairwise_rb_instruction_following",
            "INSTRUCTION_FOLLOWING_RUBRIC_GENERATION_PROMPT_TEMPLATE",
            "PAIRWISE_INSTRUCTION_FOLLOWING_RUBRIC_CRITIQUE_TEMPLATE",
            pairwise=True,
        )
        MULTIMODAL_UNDERSTANDING = _Predefined(
            "pairwise_rb_multimodal_understanding",
            "MULTIMODAL_UNDERSTANDING_RUBRIC_GENERATION_PROMPT_TEMPLATE",
            "PAIRWISE_MULTIMODAL_UNDERSTANDING_RUBRIC_CRITIQUE_TEMPLATE",
            pairwise=True,
        )
        TEXT_QUALITY = _Predefined(
            "pairwise_rb_text_quality",
            "TEXT_QUALITY_RUBRIC_GENERATION_PROMPT_TEMPLATE",
            "PAIRWISE_TEXT_QUALITY_RUBRIC_CRITIQUE_TEMPLATE",
            pairwise=True,
        )
