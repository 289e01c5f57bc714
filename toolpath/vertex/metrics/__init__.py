"""``vertexai.preview.evaluation.metrics`` as toolpath serves it: the same class names, with Vertex AI's
constructors, scored by toolpath's metrics and judge.

    from toolpath.vertex.metrics import TrajectorySingleToolUse, PointwiseMetric, PointwiseMetricPromptTemplate
"""

from __future__ import annotations

from toolpath.metrics.base import CustomMetric
from toolpath.vertex.computed import Rouge, TrajectorySingleToolUse
from toolpath.vertex.model_based import (
    CustomOutputConfig,
    MetricPromptTemplateExamples,
    PairwiseMetric,
    PairwiseMetricPromptTemplate,
    PointwiseMetric,
    PointwiseMetricPromptTemplate,
)
from toolpath.vertex.rubric_metrics import PredefinedRubricMetrics, RubricBasedMetric, RubricGenerationConfig

__all__ = [
    "CustomMetric",
    "CustomOutputConfig",
    "MetricPromptTemplateExamples",
    "PairwiseMetric",
    "PairwiseMetricPromptTemplate",
    "PointwiseMetric",
    "PointwiseMetricPromptTemplate",
    "PredefinedRubricMetrics",
    "Rouge",
    "RubricBasedMetric",
    "RubricGenerationConfig",
    "TrajectorySingleToolUse",
]
