"""Vertex AI's rubric-based metric classes, with Vertex AI's constructors. Vertex AI generates each row's rubrics
with a model and critiques the response against them in its evaluation service, reading the replies with its
own parsers; toolpath has no such service, so an :class:`~toolpath.vertex.eval_task.EvalTask` given one of
these metrics stops with one :class:`~toolpath.errors.MetricError` before anything runs. (toolpath's own
rubric-based metrics are ADK's ``rubric_based_*`` criteria: docs/metrics.md.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolpath.errors import MetricError

__all__ = ["PredefinedRubricMetrics", "RubricBasedMetric", "RubricGenerationConfig"]

UNSUPPORTED = (
    "Vertex AI's rubric-based metrics ({name}) need Vertex AI's evaluation service to generate and critique "
    "rubrics; use ADK's rubric_based_final_response_quality_v1 / rubric_based_tool_use_quality_v1 instead"
)


class RubricGenerationConfig:
    """Vertex AI's ``RubricGenerationConfig``: the prompt that generates rubrics, its model and parser."""

    def __init__(
        self, prompt_template: str, model: Any = None, parsing_fn: Callable[[str], list[str]] | None = None
    ) -> None:
        self.prompt_template, self.model, self.parsing_fn = prompt_template, model, parsing_fn


class RubricBasedMetric:
    """Vertex AI's ``RubricBasedMetric(generation_config=…, critique_metric=…)``; refused when evaluated."""

    def __init__(self, *, generation_config: RubricGenerationConfig, critique_metric: Any) -> None:
        self.generation_config, self.critique_metric = generation_config, critique_metric
        self.name = str(getattr(critique_metric, "name", critique_metric))

    @property
    def metric_name(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def generate_rubrics(self, eval_dataset: Any) -> Any:
        raise MetricError(UNSUPPORTED.format(name=self.name))

    def refusal(self) -> MetricError:
        return MetricError(UNSUPPORTED.format(name=self.name))


def _predefined(name: str) -> RubricBasedMetric:
    return RubricBasedMetric(generation_config=RubricGenerationConfig(prompt_template=""), critique_metric=name)


class PredefinedRubricMetrics:
    """Vertex AI's ``PredefinedRubricMetrics``: the same names, refused when evaluated."""

    class Pointwise:
        INSTRUCTION_FOLLOWING = _predefined("rb_instruction_following")
        MULTIMODAL_UNDERSTANDING = _predefined("rb_multimodal_understanding")
        TEXT_QUALITY = _predefined("rb_text_quality")

    class Pairwise:
        INSTRUCTION_FOLLOWING = _predefined("pairwise_rb_instruction_following")
        MULTIMODAL_UNDERSTANDING = _predefined("pairwise_rb_multimodal_understanding")
        TEXT_QUALITY = _predefined("pairwise_rb_text_quality")
