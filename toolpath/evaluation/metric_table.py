"""What each metric reads and what its scores mean (:class:`MetricInfo`), and the table of the built-ins' infos.

Light on purpose: ``toolpath metrics`` lists every built-in from :data:`BUILTIN_INFO` without importing a metric,
a judge, google-genai or pydantic. :mod:`toolpath.evaluation.catalog` registers the metrics themselves (a judge
template metric's info follows from its template there); a test checks that the two agree, name for name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BUILTIN_INFO", "UNKNOWN", "MetricInfo", "describe_rule", "passes"]


@dataclass(frozen=True)
class MetricInfo:
    """What a metric reads and what its scores mean."""

    inputs: tuple[str, ...] = ()
    """The row columns it reads (``latency_in_seconds`` and ``failure`` are measured when an agent is run)."""
    low: float | None = 0.0
    high: float | None = 1.0
    """The range of its scores (``None``: unbounded)."""
    binary: bool = False
    """Scores are only ``low`` or ``high`` (0/1)."""
    lower_is_better: bool = False
    """Latency, failures, counts and error rates: the lower the better."""
    best: float | None = None
    """For a two-sided scale (verbosity: −2 too terse … 2 too verbose), the best score; a threshold is then
    the largest distance from it that passes."""
    threshold: float | None = None
    """The default pass mark (a score passes when it is at least this, or at most this when lower is better);
    ``None``: the metric only measures, and passes or fails only against a threshold the user gives."""
    judge: bool = False
    """Scored by a judge model."""

    @property
    def direction(self) -> str:
        if self.best is not None:
            return f"{self.best:g} best"
        return "lower" if self.lower_is_better else "higher"

    @property
    def range(self) -> str:
        def num(value: float) -> str:
            return f"{value:g}".replace("-", "−")

        if self.low is None and self.high is None:
            return "any number"
        if self.high is None:
            return f"≥ {num(self.low or 0.0)}"
        if self.low is None:
            return f"≤ {num(self.high)}"
        return f"{num(self.low)} or {num(self.high)}" if self.binary else f"{num(self.low)} to {num(self.high)}"

    def rule(self, threshold: float | None = None) -> dict[str, Any]:
        """How a score passes: ``threshold`` (default: the metric's own) and the way the scores go; the keyword
        arguments of :func:`passes`, saved with a run so that its report judges rows as the run did."""
        mark = self.threshold if threshold is None else threshold
        return {"threshold": mark, "lower_is_better": self.lower_is_better, "best": self.best}

    def passes(self, score: float | None, threshold: float | None = None) -> bool | None:
        return passes(score, **self.rule(threshold))

    @property
    def mark(self) -> str:
        """The default pass mark as people read it: ``≥ 1``, ``≤ 0``, ``± 1`` (around the best), ``—`` (none)."""
        return describe_rule(self.rule())

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": list(self.inputs),
            "range": self.range,
            "direction": self.direction,
            "threshold": self.threshold,
            "pass_mark": self.mark,
            "judge": self.judge,
        }


def passes(
    score: float | None, threshold: float | None, lower_is_better: bool = False, best: float | None = None
) -> bool | None:
    """Whether ``score`` passes: at least ``threshold``, at most it when lower is better, or within it of
    ``best``; ``None`` when there is no score or no threshold. The one pass/fail rule of the CLI, the report
    and online labels."""
    if score is None or threshold is None:
        return None
    if best is not None:
        return abs(score - best) <= threshold
    return score <= threshold if lower_is_better else score >= threshold


def describe_rule(rule: Mapping[str, Any]) -> str:
    """A pass rule (:meth:`MetricInfo.rule`) as people read it: ``≥ 1``, ``≤ 0``, ``± 1``, or ``—`` (none)."""
    threshold = rule.get("threshold")
    if threshold is None:
        return "—"
    if rule.get("best") is not None:
        return f"± {threshold:g}"
    return f"{'≤' if rule.get('lower_is_better') else '≥'} {threshold:g}"


UNKNOWN = MetricInfo(low=None, high=None)
"""The info of a metric registered without any (a custom metric): higher is better, no default pass mark."""


BUILTIN_INFO: dict[str, MetricInfo] = {
    "bleu": MetricInfo(("response", "reference")),
    "coherence": MetricInfo(("response",), low=1.0, high=5.0, judge=True),
    "error_recovery": MetricInfo(("predicted_trajectory",), threshold=1.0),
    "exact_match": MetricInfo(("response", "reference"), binary=True, threshold=1.0),
    "failure": MetricInfo(("failure",), binary=True, lower_is_better=True, threshold=0.0),
    "final_response_match_v2": MetricInfo(("prompt", "reference", "response"), binary=True, threshold=1.0, judge=True),
    "fluency": MetricInfo(("response",), low=1.0, high=5.0, judge=True),
    "groundedness": MetricInfo(("prompt", "context", "response"), binary=True, threshold=1.0, judge=True),
    "hallucinations_v1": MetricInfo(("prompt", "predicted_trajectory", "response"), threshold=1.0, judge=True),
    "instruction_following": MetricInfo(("prompt", "response"), low=1.0, high=5.0, judge=True),
    "latency_in_seconds": MetricInfo(("latency_in_seconds",), high=None, lower_is_better=True),
    "multi_turn_chat_quality": MetricInfo(("history", "prompt", "response"), low=1.0, high=5.0, judge=True),
    "multi_turn_safety": MetricInfo(("history", "prompt", "response"), binary=True, threshold=1.0, judge=True),
    "multi_turn_task_success_v1": MetricInfo(("prompt", "predicted_trajectory", "response"), threshold=1.0, judge=True),
    "multi_turn_tool_use_quality_v1": MetricInfo(
        ("prompt", "predicted_trajectory", "response"), threshold=1.0, judge=True
    ),
    "multi_turn_trajectory_quality_v1": MetricInfo(
        ("prompt", "predicted_trajectory", "response"), threshold=1.0, judge=True
    ),
    "pairwise_coherence": MetricInfo(("response", "baseline_model_response"), threshold=0.5, judge=True),
    "pairwise_fluency": MetricInfo(("response", "baseline_model_response"), threshold=0.5, judge=True),
    "pairwise_groundedness": MetricInfo(
        ("prompt", "context", "response", "baseline_model_response"), threshold=0.5, judge=True
    ),
    "pairwise_instruction_following": MetricInfo(
        ("prompt", "response", "baseline_model_response"), threshold=0.5, judge=True
    ),
    "pairwise_multi_turn_chat_quality": MetricInfo(
        ("history", "prompt", "response", "baseline_model_response"), threshold=0.5, judge=True
    ),
    "pairwise_multi_turn_safety": MetricInfo(
        ("history", "prompt", "response", "baseline_model_response"), threshold=0.5, judge=True
    ),
    "pairwise_question_answering_quality": MetricInfo(
        ("prompt", "context", "response", "baseline_model_response"), threshold=0.5, judge=True
    ),
    "pairwise_safety": MetricInfo(("prompt", "response", "baseline_model_response"), threshold=0.5, judge=True),
    "pairwise_summarization_quality": MetricInfo(
        ("instruction", "context", "response", "baseline_model_response"), threshold=0.5, judge=True
    ),
    "pairwise_text_quality": MetricInfo(("prompt", "response", "baseline_model_response"), threshold=0.5, judge=True),
    "pairwise_verbosity": MetricInfo(("prompt", "response", "baseline_model_response"), threshold=0.5, judge=True),
    "per_turn_user_simulator_quality_v1": MetricInfo(
        ("prompt", "response", "conversation_scenario"), threshold=1.0, judge=True
    ),
    "question_answering_quality": MetricInfo(("prompt", "context", "response"), low=1.0, high=5.0, judge=True),
    "redundant_tool_calls": MetricInfo(("predicted_trajectory",), high=None, lower_is_better=True, threshold=0.0),
    "response_follows_trajectory": MetricInfo(
        ("prompt", "predicted_trajectory", "response"), binary=True, threshold=1.0, judge=True
    ),
    "response_match_score": MetricInfo(("response", "reference"), threshold=0.8),
    "rouge": MetricInfo(("response", "reference")),
    "rouge_1": MetricInfo(("response", "reference")),
    "rouge_2": MetricInfo(("response", "reference")),
    "rouge_l": MetricInfo(("response", "reference")),
    "rouge_l_sum": MetricInfo(("response", "reference")),
    "rubric_based_final_response_quality_v1": MetricInfo(("prompt", "response", "rubrics"), threshold=1.0, judge=True),
    "rubric_based_multi_turn_trajectory_quality_v1": MetricInfo(
        ("prompt", "predicted_trajectory", "response", "rubrics"), threshold=1.0, judge=True
    ),
    "rubric_based_tool_use_quality_v1": MetricInfo(
        ("prompt", "predicted_trajectory", "rubrics"), threshold=1.0, judge=True
    ),
    "safety": MetricInfo(("prompt", "response"), binary=True, threshold=1.0, judge=True),
    "safety_v1": MetricInfo(("prompt", "response"), binary=True, threshold=1.0, judge=True),
    "summarization_quality": MetricInfo(("instruction", "context", "response"), low=1.0, high=5.0, judge=True),
    "text_quality": MetricInfo(("prompt", "response"), low=1.0, high=5.0, judge=True),
    "tool_argument_similarity": MetricInfo(("predicted_trajectory", "reference_trajectory"), threshold=1.0),
    "tool_call_count": MetricInfo(("predicted_trajectory",), high=None, lower_is_better=True),
    "tool_call_valid": MetricInfo(("response",), binary=True, threshold=1.0),
    "tool_error_rate": MetricInfo(("predicted_trajectory",), lower_is_better=True, threshold=0.0),
    "tool_loop_detected": MetricInfo(("predicted_trajectory",), binary=True, lower_is_better=True, threshold=0.0),
    "tool_name_match": MetricInfo(("response", "reference"), binary=True, threshold=1.0),
    "tool_parameter_key_match": MetricInfo(("response", "reference"), threshold=1.0),
    "tool_parameter_kv_match": MetricInfo(("response", "reference"), threshold=1.0),
    "tool_trajectory_avg_score": MetricInfo(("predicted_trajectory", "reference_trajectory"), threshold=1.0),
    "trajectory_any_order_match": MetricInfo(
        ("predicted_trajectory", "reference_trajectory"), binary=True, threshold=1.0
    ),
    "trajectory_exact_match": MetricInfo(("predicted_trajectory", "reference_trajectory"), binary=True, threshold=1.0),
    "trajectory_f1": MetricInfo(("predicted_trajectory", "reference_trajectory"), threshold=1.0),
    "trajectory_in_order_match": MetricInfo(
        ("predicted_trajectory", "reference_trajectory"), binary=True, threshold=1.0
    ),
    "trajectory_precision": MetricInfo(("predicted_trajectory", "reference_trajectory"), threshold=1.0),
    "trajectory_recall": MetricInfo(("predicted_trajectory", "reference_trajectory"), threshold=1.0),
    "trajectory_single_tool_use": MetricInfo(("predicted_trajectory",), binary=True, threshold=1.0),
    "verbosity": MetricInfo(("prompt", "response"), low=-2.0, high=2.0, best=0.0, judge=True),
}
"""Every built-in metric's info by name, as the catalog registers it."""
