"""The golden references online scoring compares a stored turn with, found by its prompt (``match``): the rows of
a dataset (:class:`References`), or the turns of ADK eval sets (:class:`EvalSetReferences`).

An ADK eval set as ``reference_dataset``: production turns that replay a golden conversation are scored by the eval
set's criteria and thresholds (its ``test_config.json``, or ADK's defaults), turn by turn, as ``adk eval`` scores
each invocation of a case. Each turn of each case is a golden row, found by its user text: its expected response
(``reference``) and tool calls (``reference_trajectory``, wildcard arguments kept), and which case and turn it is.
Each criterion is one online metric of its name, passing at its threshold; a criterion ADK computes over a whole
case (``tool_trajectory_avg_score``, ``response_match_score``) scores the one turn as a case of one invocation,
which is that invocation's score in ADK's ``per_invocation`` results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import renamed
from toolpath.evaluation.evalsets.criteria import Criterion, criteria_of
from toolpath.evaluation.evalsets.files import EVALSET_SUFFIX, LEGACY_SUFFIX, load_eval_sets
from toolpath.evaluation.like_with_like import RedactedReferences
from toolpath.evaluation.prompt_match import PromptMatch, prompt_key
from toolpath.judges.vertex import JudgeMetric
from toolpath.metrics.base import Metric, MissingInput
from toolpath.model import MetricResult
from toolpath.redact import Redactor
from toolpath.trajectory import Trajectory

__all__ = ["EvalSetReferences", "References", "TurnCriterion", "check_metrics", "is_eval_set_path"]


def is_eval_set_path(path: str | Path | None) -> bool:
    """Whether a ``reference_dataset`` names ADK eval sets (``*.evalset.json``, ``*.test.json``)."""
    return path is not None and str(path).endswith((EVALSET_SUFFIX, LEGACY_SUFFIX))


class References(RedactedReferences):
    """Golden rows by prompt (exact or normalised)."""

    def __init__(
        self, dataset: str | None, match: PromptMatch, rules: Redactor | None = None, store: Any = None
    ) -> None:
        """``rules``: the store's redaction rules; each reference is redacted by them (with ``store``'s pseudonym
        key, read when first needed) to be compared with stored values."""
        super().__init__(prompt_key(match), rules, store)
        self.match = match
        if dataset:
            from toolpath.datasets import load_rows

            for row in load_rows(dataset):
                if isinstance(row.get("prompt"), str):
                    self.by_prompt.setdefault(self._key(row["prompt"]), row)


class EvalSetReferences(RedactedReferences):
    """The golden turns of eval sets by user text, and the metrics and thresholds of their criteria."""

    def __init__(
        self, path: str | Path, key: Callable[[str], str], rules: Redactor | None = None, store: Any = None
    ) -> None:
        """``key``: how prompts compare (online's ``match``); ``rules``, ``store``: as for a JSONL dataset."""
        super().__init__(key, rules, store)
        self.case_turns: dict[tuple[str, str], int] = {}
        """How many turns each case (``(eval_set_id, eval_id)``) has."""
        eval_sets = load_eval_sets(path)
        self.eval_set_ids = [s.eval_set_id for s in eval_sets]
        criteria: dict[str, Criterion] = {}
        for eval_set in eval_sets:
            for name, criterion in criteria_of(eval_set).items():
                seen = criteria.setdefault(name, criterion)
                if (seen.threshold, dict(seen.options)) != (criterion.threshold, dict(criterion.options)):
                    raise ConfigError(
                        f"online: reference_dataset {path}: criterion {name!r} has different thresholds or options "
                        "in its eval sets; give one eval set (or a folder of sets with one test_config.json)"
                    )
            for case in eval_set.cases:
                self.case_turns[case.eval_set_id, case.eval_id] = len(case.invocations)
                for turn, expected in enumerate(case.invocations, start=1):
                    row = {
                        "reference": expected.reference,
                        "reference_trajectory": Trajectory(expected.reference_trajectory),
                        "eval_set_id": case.eval_set_id,
                        "eval_id": case.eval_id,
                        "turn": turn,
                    }
                    self.by_prompt.setdefault(self._key(expected.prompt), row)
        self.metrics: list[Metric] = [_online_metric(name, c, path) for name, c in criteria.items()]
        self.thresholds: dict[str, float] = {name: c.threshold for name, c in criteria.items()}
        self.criteria: dict[str, dict[str, Any]] = {
            n: {**c.options, "threshold": c.threshold} for n, c in criteria.items()
        }
        """Each criterion's options and threshold, as an eval-set run records them."""


class TurnCriterion(Metric):
    """A computed criterion on one turn that replays a golden one: one ADK computes over a whole case scores the
    case of that one invocation. A turn no golden turn matches is not scored (no expectation to meet)."""

    case_level = False

    def __init__(self, name: str, metric: Metric) -> None:
        self.name, self.metric = name, metric
        self.catalog_name = getattr(metric, "catalog_name", None) or metric.name

    def score(self, row: Any) -> MetricResult:
        if row.get("eval_id") is None:  # ADK's evaluators would read a missing expectation as an empty one
            raise MissingInput("no turn of the reference eval set has this prompt")
        return self.metric.score({"invocations": [row]} if self.metric.case_level else row)


def _online_metric(name: str, criterion: Criterion, path: str | Path) -> Metric:
    metric = criterion.metric
    if metric.case_level and isinstance(metric, JudgeMetric):
        raise ConfigError(
            f"online: reference_dataset {path}: criterion {name!r} judges whole conversations, not single turns: "
            'give the eval set to an evaluator of sessions (target = "session"), or score the recorded sessions '
            "with `toolpath eval SET --from-store`"
        )
    if isinstance(metric, JudgeMetric):  # the judge reads the row's reference itself
        return metric if metric.name == name else renamed(metric, name)
    return TurnCriterion(name, metric)


def check_metrics(configured: Sequence[Metric], criteria: Sequence[Metric]) -> None:
    """A metric of ``metrics`` named as a criterion would give two results of one name."""
    both = sorted({m.name for m in configured} & {m.name for m in criteria})
    if both:
        raise ConfigError(f"online: {', '.join(both)}: both in 'metrics' and a criterion of the reference eval set")
