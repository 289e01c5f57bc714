"""Vertex AI's Gen AI evaluation SDK, served by toolpath: ``vertexai.evaluation`` and
``vertexai.preview.evaluation`` code runs here with its imports changed and nothing else.

    from toolpath.vertex import EvalTask, PointwiseMetric, PointwiseMetricPromptTemplate
    from toolpath.vertex.metrics import TrajectorySingleToolUse

The names are loaded on first use, as in :mod:`toolpath`: importing this package loads no store and no SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "EvalTask": "toolpath.vertex.eval_task",
    "EvalResult": "toolpath.vertex.eval_task",
    "PromptTemplate": "toolpath.vertex.eval_task",
    "CustomMetric": "toolpath.metrics.base",
    "PointwiseMetric": "toolpath.vertex.model_based",
    "PairwiseMetric": "toolpath.vertex.model_based",
    "PointwiseMetricPromptTemplate": "toolpath.vertex.model_based",
    "PairwiseMetricPromptTemplate": "toolpath.vertex.model_based",
    "MetricPromptTemplateExamples": "toolpath.vertex.model_based",
    "AutoraterConfig": "toolpath.vertex.model_based",
    "CustomOutputConfig": "toolpath.vertex.model_based",
    "Rouge": "toolpath.vertex.computed",
    "RubricBasedMetric": "toolpath.vertex.rubric_metrics",
    "RubricGenerationConfig": "toolpath.vertex.rubric_metrics",
    "PredefinedRubricMetrics": "toolpath.vertex.rubric_metrics",
}

if TYPE_CHECKING:
    from toolpath.metrics.base import CustomMetric
    from toolpath.vertex.computed import Rouge
    from toolpath.vertex.eval_task import EvalResult, EvalTask, PromptTemplate
    from toolpath.vertex.model_based import (
        AutoraterConfig,
        CustomOutputConfig,
        MetricPromptTemplateExamples,
        PairwiseMetric,
        PairwiseMetricPromptTemplate,
        PointwiseMetric,
        PointwiseMetricPromptTemplate,
    )
    from toolpath.vertex.rubric_metrics import PredefinedRubricMetrics, RubricBasedMetric, RubricGenerationConfig


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpath.vertex' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AutoraterConfig",
    "CustomMetric",
    "CustomOutputConfig",
    "EvalResult",
    "EvalTask",
    "MetricPromptTemplateExamples",
    "PairwiseMetric",
    "PairwiseMetricPromptTemplate",
    "PointwiseMetric",
    "PointwiseMetricPromptTemplate",
    "PredefinedRubricMetrics",
    "PromptTemplate",
    "Rouge",
    "RubricBasedMetric",
    "RubricGenerationConfig",
]
