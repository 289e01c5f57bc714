"""The built-in metrics as :class:`Metric` objects over rows (columns as docs/spec.md §5); the names they go by are
:mod:`toolpath.evaluation.catalog`'s."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from toolpath.errors import MetricError
from toolpath.metrics import analytics, text, tool_calls, trajectory_match
from toolpath.metrics.base import RESPONSE_NOTE, Metric, MissingInput, Row, missing
from toolpath.metrics.equality import CallMatch
from toolpath.metrics.rows import TRAJECTORY_CUT, flag, text_column, trajectory_column
from toolpath.model import MetricResult
from toolpath.trajectory import Trajectory


@dataclass(frozen=True)
class ReferenceTrajectoryMetric(Metric):
    """A predicted-vs-reference trajectory metric, with its options (``match``, ``order``…)."""

    name: str
    fn: Callable[..., MetricResult]
    options: tuple[tuple[str, Any], ...] = ()
    agent: str | None = None
    """Only this agent's calls are compared (``agent=billing_agent``): the predicted calls it made, and the
    reference calls that name no agent or name it."""

    @functools.cached_property
    def call(self) -> Callable[..., MetricResult]:
        """``fn`` with the options that differ from its own defaults (none, usually: no keywords to pass)."""
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(self.fn).parameters.items()
            if parameter.default is not inspect.Parameter.empty
        }
        given = {
            key: value
            for key, value in self.options
            if key not in defaults or value.__class__ is not defaults[key].__class__ or value != defaults[key]
        }
        return functools.partial(self.fn, **given) if given else self.fn

    def score(self, row: Row) -> MetricResult:
        predicted, reference = row.get("predicted_trajectory"), row.get("reference_trajectory")
        if predicted.__class__ is not Trajectory or reference.__class__ is not Trajectory:  # not parsed yet
            predicted = trajectory_column(row, "predicted_trajectory")
            reference = trajectory_column(row, "reference_trajectory")
        if self.agent is not None:
            agent = self.agent
            predicted = Trajectory([c for c in predicted if c.agent_name == agent])
            reference = Trajectory([c for c in reference if c.agent_name in (None, agent)])
        return self.call(predicted, reference)


def reference_metric(name: str, fn: Callable[..., MetricResult], *, has_order: bool = False) -> Callable[..., Metric]:
    """The factory of a predicted-vs-reference trajectory metric: it validates the options once.

    ``null_args_wildcard`` defaults to true (a reference call with null arguments matches any), except for
    an ADK eval set's criterion (``from_criterion``), which follows ADK's rule: null arguments are a value."""

    def factory(
        ignore_args: Any = False,
        match: CallMatch | str = CallMatch.NAME_AND_ARGS,
        json_strict: Any = False,
        null_args_wildcard: Any = True,
        agent: Any = None,
        **rest: Any,
    ) -> Metric:
        options: dict[str, Any] = {
            "match": trajectory_match.check_mode(str(match), flag(ignore_args, "ignore_args")),
            "json_strict": flag(json_strict, "json_strict"),
            "null_args_wildcard": flag(null_args_wildcard, "null_args_wildcard"),
        }
        order = rest.pop("order", trajectory_match.CallOrder.ANY)
        if rest:
            raise MetricError(f"unknown parameter(s): {', '.join(rest)}")
        if has_order:
            if order not in trajectory_match.ORDERS:
                raise MetricError(f"order must be one of {', '.join(trajectory_match.ORDERS)}, got {order!r}")
            options["order"] = trajectory_match.CallOrder(order)
        elif order != trajectory_match.CallOrder.ANY:
            raise MetricError("order applies to trajectory_precision, trajectory_recall and trajectory_f1")
        if agent is not None and (not isinstance(agent, str) or not agent):
            raise MetricError(f"agent must be an agent's name, got {agent!r}")
        return ReferenceTrajectoryMetric(name, fn, tuple(options.items()), agent)

    def from_criterion(options: dict[str, Any]) -> Metric:
        return factory(**{"null_args_wildcard": False, **options})

    factory.from_criterion = from_criterion  # type: ignore[attr-defined]
    return factory


@dataclass(frozen=True)
class ToolArgumentSimilarity(Metric):
    name: str = "tool_argument_similarity"

    def score(self, row: Row) -> MetricResult:
        return analytics.tool_argument_similarity(
            trajectory_column(row, "predicted_trajectory"), trajectory_column(row, "reference_trajectory")
        )


@dataclass(frozen=True)
class BehaviourMetric(Metric):
    """A reference-free metric of the predicted trajectory alone."""

    name: str
    fn: Callable[..., MetricResult]
    options: tuple[tuple[str, Any], ...] = ()

    @functools.cached_property
    def keywords(self) -> dict[str, Any]:
        """``options`` as the keyword arguments of ``fn``."""
        return dict(self.options)

    def score(self, row: Row) -> MetricResult:
        predicted = row.get("predicted_trajectory")
        if predicted.__class__ is not Trajectory or row.get(TRAJECTORY_CUT):  # not parsed for the row, or cut
            predicted = trajectory_column(row, "predicted_trajectory")
        return self.fn(predicted, **self.keywords) if self.options else self.fn(predicted)


def tool_loop_detected(min_repeats: Any = 3, max_cycle: Any = 3) -> Metric:
    options = (("min_repeats", int(min_repeats)), ("max_cycle", int(max_cycle)))
    analytics.tool_loop_detected([], **dict(options))  # validates the options now, not per row
    return BehaviourMetric("tool_loop_detected", analytics.tool_loop_detected, options)


@dataclass(frozen=True)
class TrajectorySingleToolUse(Metric):
    """1 if the predicted trajectory calls ``tool_name`` at least once."""

    tool_name: str
    name: str = "trajectory_single_tool_use"

    def __post_init__(self) -> None:
        if not isinstance(self.tool_name, str) or not self.tool_name:
            raise MetricError("tool_name must be a non-empty string")

    def score(self, row: Row) -> MetricResult:
        return trajectory_match.single_tool_use(trajectory_column(row, "predicted_trajectory"), self.tool_name)


@dataclass(frozen=True)
class ToolTrajectoryAvgScore(Metric):
    """ADK's ``tool_trajectory_avg_score``. A row is one invocation, unless it carries ``invocations``:
    a list of ``{"predicted_trajectory", "reference_trajectory"}`` for a multi-turn case. Calls compare by
    ADK's rule; ``json_strict`` and ``null_args_wildcard`` are toolpath's options, off by default."""

    match_type: trajectory_match.MatchType = trajectory_match.MatchType.EXACT
    ignore_args: bool = False
    match: CallMatch = CallMatch.NAME_AND_ARGS
    json_strict: bool = False
    null_args_wildcard: bool = False
    name: str = "tool_trajectory_avg_score"
    case_level: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "match_type", trajectory_match.match_type_of(self.match_type))  # "in_order" too
        for option in ("ignore_args", "json_strict", "null_args_wildcard"):
            object.__setattr__(self, option, flag(getattr(self, option), option))
        object.__setattr__(self, "match", trajectory_match.check_mode(self.match))

    def score(self, row: Row) -> MetricResult:
        turns = row.get("invocations")
        if isinstance(turns, list):
            actual = [trajectory_column(t, "predicted_trajectory") for t in turns]
            expected = [trajectory_column(t, "reference_trajectory") for t in turns]
        else:
            actual = [trajectory_column(row, "predicted_trajectory")]
            expected = [trajectory_column(row, "reference_trajectory")]
        return trajectory_match.tool_trajectory_avg_score(
            actual,
            expected,
            match_type=self.match_type,
            ignore_args=self.ignore_args,
            match=self.match,
            json_strict=self.json_strict,
            null_args_wildcard=self.null_args_wildcard,
        )


@dataclass(frozen=True)
class MeasuredColumn(Metric):
    """A number the runner measured while calling the agent (``latency_in_seconds``, ``failure``)."""

    column: str
    name: str = ""
    """What its results are called (default: the column)."""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.column)

    def score(self, row: Row) -> MetricResult:
        value = row.get(self.column)
        if value is None:
            raise MissingInput(f"row has no {self.column!r} (it is measured when an agent is run)")
        return MetricResult(score=float(value))


# --- response metrics --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResponseMetric(Metric):
    """A metric of ``response`` against ``reference``."""

    name: str
    fn: Callable[..., MetricResult]
    params: tuple[tuple[str, Any], ...] = ()

    def score(self, row: Row) -> MetricResult:
        return self.fn(text_column(row, "response"), text_column(row, "reference"), **dict(self.params))


def rouge(rouge_type: str = "rougeL", use_stemmer: Any = False, split_summaries: Any = False) -> Metric:
    if rouge_type not in text.ROUGE_TYPES:
        raise MetricError(f"rouge_type must be one of {', '.join(text.ROUGE_TYPES)}, got {rouge_type!r}")
    params = (
        ("rouge_type", rouge_type),
        ("use_stemmer", flag(use_stemmer, "use_stemmer")),
        ("split_summaries", flag(split_summaries, "split_summaries")),
    )
    return ResponseMetric("rouge", text.rouge, params)


@dataclass(frozen=True)
class ResponseMatchScore(Metric):
    """ADK's ``response_match_score``: a row is one invocation, unless it carries ``invocations`` (a list of
    ``{"response", "reference"}``) for a multi-turn case. In a case, a turn without an expected response (or
    without a response) compares the empty string, as ADK does: it scores 0; but a turn whose agent answered
    without text (its ``response_note`` says so) is not scored, with that reason."""

    name: str = "response_match_score"
    case_level: ClassVar[bool] = True

    def score(self, row: Row) -> MetricResult:
        turns = row.get("invocations")
        if not isinstance(turns, list):
            return text.response_match_score([text_column(row, "response")], [text_column(row, "reference")])
        notes = [t.get(RESPONSE_NOTE) if t.get("response") is None else None for t in turns]
        scored = [t for t, note in zip(turns, notes, strict=True) if not note]
        if len(scored) == len(turns):
            return text.response_match_score(
                [t.get("response") or "" for t in turns], [t.get("reference") or "" for t in turns]
            )
        why = "; ".join(f"invocation {i + 1}: row has no 'response': {n}" for i, n in enumerate(notes) if n)
        if not scored:
            return MetricResult.not_evaluated(why)
        result = text.response_match_score(
            [t.get("response") or "" for t in scored], [t.get("reference") or "" for t in scored]
        )
        kept = iter(result.details["per_invocation_scores"])
        per_invocation = [None if note else next(kept) for note in notes]
        return MetricResult(result.score, f"{result.explanation}; {why}", {"per_invocation_scores": per_invocation})


# --- tool-call metrics (Vertex) --------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallMetric(Metric):
    name: str
    fn: Callable[..., MetricResult]
    needs_reference: bool = True
    params: tuple[tuple[str, Any], ...] = ()

    def score(self, row: Row) -> MetricResult:
        response = row.get("response")
        if response is None:
            raise missing(row, "response")
        if not self.needs_reference:
            return self.fn(response)
        reference = row.get("reference")
        if reference is None:
            raise MissingInput("row has no 'reference'")
        try:
            return self.fn(response, reference, **dict(self.params))
        except tool_calls.ToolCallParseError as exc:
            raise MissingInput(str(exc)) from None
