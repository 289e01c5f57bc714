"""Built-in metrics over dataset rows (columns as SPEC §5), registered by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolpath.errors import DatasetError
from toolpath.evaluators import analytics, text, tool_calls, trajectory
from toolpath.evaluators.registry import Metric, MissingInput, Row, register_metric
from toolpath.model import MetricResult, Trajectory, parse_trajectory


def trajectory_column(row: Row, column: str) -> Trajectory:
    """A parsed trajectory column; a missing column or a bad cell is :class:`MissingInput`."""
    if column not in row or row[column] is None:
        raise MissingInput(f"row has no {column!r}")
    try:
        return parse_trajectory(row[column], where=column)
    except DatasetError as exc:
        raise MissingInput(str(exc)) from None


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{name} must be true or false, got {value!r}")


@dataclass(frozen=True)
class ReferenceTrajectoryMetric(Metric):
    """A predicted-vs-reference trajectory metric, with its options (``match``, ``order``…)."""

    name: str
    fn: Callable[..., MetricResult]
    options: tuple[tuple[str, Any], ...] = ()

    def score(self, row: Row) -> MetricResult:
        predicted = trajectory_column(row, "predicted_trajectory")
        reference = trajectory_column(row, "reference_trajectory")
        return self.fn(predicted, reference, **dict(self.options))


def _reference_metric(name: str, fn: Callable[..., MetricResult], *, has_order: bool = False) -> None:
    def factory(ignore_args: Any = False, match: str = "name_and_args", **rest: Any) -> Metric:
        options: dict[str, Any] = {"match": trajectory.check_mode(str(match), _flag(ignore_args, "ignore_args"))}
        order = rest.pop("order", "any")
        if rest:
            raise ValueError(f"unknown parameter(s): {', '.join(rest)}")
        if has_order:
            if order not in trajectory.ORDERS:
                raise ValueError(f"order must be one of {', '.join(trajectory.ORDERS)}, got {order!r}")
            options["order"] = order
        elif order != "any":
            raise ValueError("order applies to trajectory_precision, trajectory_recall and trajectory_f1")
        return ReferenceTrajectoryMetric(name, fn, tuple(options.items()))

    register_metric(name)(factory)


_reference_metric("trajectory_exact_match", trajectory.exact_match)
_reference_metric("trajectory_in_order_match", trajectory.in_order_match)
_reference_metric("trajectory_any_order_match", trajectory.any_order_match)
_reference_metric("trajectory_precision", trajectory.precision, has_order=True)
_reference_metric("trajectory_recall", trajectory.recall, has_order=True)
_reference_metric("trajectory_f1", trajectory.f1, has_order=True)


@register_metric("tool_argument_similarity")
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

    def score(self, row: Row) -> MetricResult:
        return self.fn(trajectory_column(row, "predicted_trajectory"), **dict(self.options))


for _behaviour in (
    analytics.tool_call_count,
    analytics.redundant_tool_calls,
    analytics.tool_error_rate,
    analytics.error_recovery,
):
    register_metric(_behaviour.__name__)(lambda fn=_behaviour: BehaviourMetric(fn.__name__, fn))


@register_metric("tool_loop_detected")
def _loop(min_repeats: Any = 3, max_cycle: Any = 3) -> Metric:
    options = (("min_repeats", int(min_repeats)), ("max_cycle", int(max_cycle)))
    analytics.tool_loop_detected([], **dict(options))  # validates the options now, not per row
    return BehaviourMetric("tool_loop_detected", analytics.tool_loop_detected, options)


@register_metric("trajectory_single_tool_use")
@dataclass(frozen=True)
class TrajectorySingleToolUse(Metric):
    """1 if the predicted trajectory calls ``tool_name`` at least once."""

    tool_name: str
    name: str = "trajectory_single_tool_use"

    def __post_init__(self) -> None:
        if not isinstance(self.tool_name, str) or not self.tool_name:
            raise ValueError("tool_name must be a non-empty string")

    def score(self, row: Row) -> MetricResult:
        return trajectory.single_tool_use(trajectory_column(row, "predicted_trajectory"), self.tool_name)


@register_metric("tool_trajectory_avg_score")
@dataclass(frozen=True)
class ToolTrajectoryAvgScore(Metric):
    """ADK's ``tool_trajectory_avg_score``. A row is one invocation, unless it carries ``invocations``:
    a list of ``{"predicted_trajectory", "reference_trajectory"}`` for a multi-turn case."""

    match_type: str = "EXACT"
    ignore_args: bool = False
    match: str = "name_and_args"
    name: str = "tool_trajectory_avg_score"

    def __post_init__(self) -> None:
        if str(self.match_type).upper() not in trajectory.MATCH_TYPES:
            raise ValueError(f"match_type must be one of {', '.join(trajectory.MATCH_TYPES)}, got {self.match_type!r}")
        object.__setattr__(self, "ignore_args", _flag(self.ignore_args, "ignore_args"))
        trajectory.check_mode(self.match)

    def score(self, row: Row) -> MetricResult:
        turns = row.get("invocations")
        if isinstance(turns, list):
            actual = [trajectory_column(t, "predicted_trajectory") for t in turns]
            expected = [trajectory_column(t, "reference_trajectory") for t in turns]
        else:
            actual = [trajectory_column(row, "predicted_trajectory")]
            expected = [trajectory_column(row, "reference_trajectory")]
        return trajectory.tool_trajectory_avg_score(
            actual, expected, match_type=self.match_type, ignore_args=self.ignore_args, match=self.match
        )


@dataclass(frozen=True)
class MeasuredColumn(Metric):
    """A number the runner measured while calling the agent (``latency_in_seconds``, ``failure``)."""

    name: str

    def score(self, row: Row) -> MetricResult:
        value = row.get(self.name)
        if value is None:
            raise MissingInput(f"row has no {self.name!r} (it is measured when an agent is run)")
        return MetricResult(score=float(value))


register_metric("latency_in_seconds")(lambda: MeasuredColumn("latency_in_seconds"))
register_metric("failure")(lambda: MeasuredColumn("failure"))


# --- response metrics --------------------------------------------------------------------------------------


def text_column(row: Row, column: str) -> str:
    value = row.get(column)
    if value is None:
        raise MissingInput(f"row has no {column!r}")
    if not isinstance(value, str):
        raise MissingInput(f"{column!r} must be text, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class ResponseMetric(Metric):
    """A metric of ``response`` against ``reference``."""

    name: str
    fn: Callable[..., MetricResult]
    params: tuple[tuple[str, Any], ...] = ()

    def score(self, row: Row) -> MetricResult:
        return self.fn(text_column(row, "response"), text_column(row, "reference"), **dict(self.params))


register_metric("exact_match")(lambda: ResponseMetric("exact_match", text.exact_match))
register_metric("bleu")(
    lambda use_effective_order=True: ResponseMetric(
        "bleu", text.bleu, (("use_effective_order", _flag(use_effective_order, "use_effective_order")),)
    )
)
for _name, _type in (("rouge_1", "rouge1"), ("rouge_2", "rouge2"), ("rouge_l", "rougeL"), ("rouge_l_sum", "rougeLsum")):
    register_metric(_name)(lambda _name=_name, _type=_type: ResponseMetric(_name, text.rouge, (("rouge_type", _type),)))


@register_metric("rouge")
def _rouge(rouge_type: str = "rougeL", use_stemmer: Any = False, split_summaries: Any = False) -> Metric:
    if rouge_type not in text.ROUGE_TYPES:
        raise ValueError(f"rouge_type must be one of {', '.join(text.ROUGE_TYPES)}, got {rouge_type!r}")
    params = (
        ("rouge_type", rouge_type),
        ("use_stemmer", _flag(use_stemmer, "use_stemmer")),
        ("split_summaries", _flag(split_summaries, "split_summaries")),
    )
    return ResponseMetric("rouge", text.rouge, params)


@register_metric("response_match_score")
@dataclass(frozen=True)
class ResponseMatchScore(Metric):
    """ADK's ``response_match_score``: a row is one invocation, unless it carries ``invocations`` (a list of
    ``{"response", "reference"}``) for a multi-turn case."""

    name: str = "response_match_score"

    def score(self, row: Row) -> MetricResult:
        turns = row.get("invocations")
        turns = turns if isinstance(turns, list) else [row]
        return text.response_match_score(
            [text_column(t, "response") for t in turns], [text_column(t, "reference") for t in turns]
        )


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
            raise MissingInput("row has no 'response'")
        if not self.needs_reference:
            return self.fn(response)
        reference = row.get("reference")
        if reference is None:
            raise MissingInput("row has no 'reference'")
        try:
            return self.fn(response, reference, **dict(self.params))
        except tool_calls.ToolCallParseError as exc:
            raise MissingInput(str(exc)) from None


register_metric("tool_call_valid")(lambda: ToolCallMetric("tool_call_valid", tool_calls.tool_call_valid, False))
register_metric("tool_name_match")(lambda: ToolCallMetric("tool_name_match", tool_calls.tool_name_match))
register_metric("tool_parameter_key_match")(
    lambda: ToolCallMetric("tool_parameter_key_match", tool_calls.tool_parameter_key_match)
)
register_metric("tool_parameter_kv_match")(
    lambda use_strict_string_match=False: ToolCallMetric(
        "tool_parameter_kv_match",
        tool_calls.tool_parameter_kv_match,
        params=(("use_strict_string_match", _flag(use_strict_string_match, "use_strict_string_match")),),
    )
)


# --- judge metrics (scored by a judge model through the runner) ------------------------------------------


def _register_judge_metrics() -> None:
    from toolpath.evaluators.adk_judge import ADK_JUDGE_METRICS
    from toolpath.evaluators.judge_metrics import BUILTIN_TEMPLATES, builtin_metric

    names = [*BUILTIN_TEMPLATES, *(f"pairwise_{n}" for n in BUILTIN_TEMPLATES), "response_follows_trajectory"]
    for name in names:
        register_metric(name)(lambda name=name, **options: builtin_metric(name, **options))
    for name, cls in ADK_JUDGE_METRICS.items():
        register_metric(name)(cls)


_register_judge_metrics()
