"""Trajectory metrics against SPEC §4 and §6, edge case by edge case."""

from __future__ import annotations

import pytest

from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluators.metrics import trajectory as tj
from toolpath.model import ToolCall


def call(name: str, args: dict | None = None, **kw) -> ToolCall:
    return ToolCall(name=name, args=args if args is not None or kw.get("wildcard") else {})


def wild(name: str) -> ToolCall:
    return ToolCall(name=name, args=None)


A, B, C = call("a", {"x": 1}), call("b", {"y": "z"}), call("c")

ALL_REFERENCE_METRICS = [tj.exact_match, tj.in_order_match, tj.any_order_match, tj.precision, tj.recall]


class TestCallEquality:
    def test_key_order_is_ignored(self):
        assert tj.calls_match(call("f", {"a": 1, "b": 2}), call("f", {"b": 2, "a": 1}))

    def test_int_equals_float(self):
        assert tj.calls_match(call("f", {"t": 1}), call("f", {"t": 1.0}))
        assert tj.calls_match(call("f", {"t": [2.0, {"u": 3}]}), call("f", {"t": [2, {"u": 3.0}]}))

    def test_bool_is_not_a_number(self):
        assert not tj.calls_match(call("f", {"on": True}), call("f", {"on": 1}))

    def test_list_order_matters(self):
        assert not tj.calls_match(call("f", {"ids": [1, 2]}), call("f", {"ids": [2, 1]}))

    def test_nested_objects_compare_deeply(self):
        assert not tj.calls_match(call("f", {"u": {"c": {"hue": 30}}}), call("f", {"u": {"c": {"hue": 31}}}))

    def test_names_must_match(self):
        assert not tj.calls_match(call("f"), call("g"))

    def test_null_reference_args_match_anything(self):
        assert tj.calls_match(call("f", {"q": "anything"}), wild("f"))
        assert not tj.calls_match(call("g", {"q": 1}), wild("f"))

    def test_ignore_args_compares_names_only(self):
        assert tj.calls_match(call("f", {"a": 1}), call("f", {"a": 2}), ignore_args=True)

    def test_missing_key_differs_from_null_value(self):
        assert not tj.calls_match(call("f", {}), call("f", {"a": None}))


class TestEmpty:
    @pytest.mark.parametrize("metric", ALL_REFERENCE_METRICS)
    def test_both_empty_score_one(self, metric):
        assert metric([], []).score == 1.0

    def test_empty_prediction_nonempty_reference(self):
        assert tj.exact_match([], [A]).score == 0.0
        assert tj.in_order_match([], [A]).score == 0.0
        assert tj.any_order_match([], [A]).score == 0.0
        assert tj.precision([], [A]).score == 0.0
        assert tj.recall([], [A]).score == 0.0

    def test_empty_reference_nonempty_prediction(self):
        assert tj.exact_match([A], []).score == 0.0
        assert tj.in_order_match([A], []).score == 1.0
        assert tj.any_order_match([A], []).score == 1.0
        assert tj.precision([A], []).score == 0.0
        assert tj.recall([A], []).score == 1.0


class TestOrderAndExtras:
    def test_exact(self):
        assert tj.exact_match([A, B], [A, B]).score == 1.0
        assert tj.exact_match([B, A], [A, B]).score == 0.0
        assert tj.exact_match([A, B, C], [A, B]).score == 0.0

    def test_in_order_allows_extras_between(self):
        assert tj.in_order_match([A, C, B], [A, B]).score == 1.0
        assert tj.in_order_match([B, A], [A, B]).score == 0.0

    def test_any_order(self):
        assert tj.any_order_match([B, C, A], [A, B]).score == 1.0
        assert tj.any_order_match([B, C], [A, B]).score == 0.0

    def test_args_differing_fail_every_match(self):
        wrong = call("a", {"x": 2})
        assert tj.exact_match([wrong], [A]).score == 0.0
        assert tj.in_order_match([wrong], [A]).score == 0.0
        assert tj.any_order_match([wrong], [A]).score == 0.0
        assert tj.precision([wrong], [A]).score == 0.0
        assert tj.exact_match([wrong], [A], ignore_args=True).score == 1.0

    def test_explanation_names_the_differing_argument(self):
        result = tj.exact_match([call("set", {"t": 70, "room": "bed"})], [call("set", {"t": 21.1, "room": "bed"})])
        assert result.explanation == "call 1: set t: expected 21.1, got 70"


class TestDuplicates:
    def test_each_predicted_call_pairs_once(self):
        # Reference asks for `a` twice; predicting it once must not satisfy both.
        assert tj.any_order_match([A], [A, A]).score == 0.0
        assert tj.recall([A], [A, A]).score == 0.5
        assert tj.precision([A], [A, A]).score == 1.0

    def test_repeated_predictions_lower_precision(self):
        assert tj.precision([A, A, A], [A]).score == pytest.approx(1 / 3)
        assert tj.recall([A, A, A], [A]).score == 1.0

    def test_in_order_needs_each_repeat(self):
        assert tj.in_order_match([A, B, A], [A, A]).score == 1.0
        assert tj.in_order_match([A, B], [A, A]).score == 0.0


class TestMaximumMatching:
    def test_wildcard_does_not_steal_the_only_partner(self):
        # ref: f(*) then f(x=1); pred: f(x=1), f(x=2). Greedy in reference order would give f(*) the
        # f(x=1) call and leave f(x=1) unmatched; the maximum matching pairs both.
        predicted = [call("f", {"x": 1}), call("f", {"x": 2})]
        reference = [wild("f"), call("f", {"x": 1})]
        assert tj.any_order_match(predicted, reference).score == 1.0
        assert tj.recall(predicted, reference).score == 1.0
        assert tj.precision(predicted, reference).score == 1.0

    def test_wildcards_limited_by_leftovers(self):
        predicted = [call("f", {"x": 1})]
        assert tj.matched_pairs(predicted, [wild("f"), call("f", {"x": 1})]) == 1

    def test_precision_recall_partial(self):
        predicted = [A, B, call("d")]
        reference = [A, B, C, call("e")]
        assert tj.precision(predicted, reference).score == pytest.approx(2 / 3)
        assert tj.recall(predicted, reference).score == 0.5


class TestSingleToolUse:
    def test_present_and_absent(self):
        assert tj.single_tool_use([A, B], "b").score == 1.0
        assert tj.single_tool_use([A], "b").score == 0.0
        assert tj.single_tool_use([], "b").score == 0.0


class TestToolTrajectoryAvgScore:
    def test_mean_over_invocations(self):
        result = tj.tool_trajectory_avg_score([[A], [B], [A, B]], [[A], [A], [A, B]])
        assert result.score == pytest.approx(2 / 3)
        assert result.details["per_invocation_scores"] == [1.0, 0.0, 1.0]

    @pytest.mark.parametrize(
        ("match_type", "expected"), [("EXACT", 0.0), ("IN_ORDER", 1.0), ("ANY_ORDER", 1.0), ("in_order", 1.0)]
    )
    def test_match_types(self, match_type, expected):
        assert tj.tool_trajectory_avg_score([[A, C, B]], [[A, B]], match_type=match_type).score == expected

    def test_any_order_vs_in_order(self):
        assert tj.tool_trajectory_avg_score([[B, A]], [[A, B]], match_type="IN_ORDER").score == 0.0
        assert tj.tool_trajectory_avg_score([[B, A]], [[A, B]], match_type="ANY_ORDER").score == 1.0

    def test_ignore_args(self):
        assert tj.tool_trajectory_avg_score([[call("a", {"x": 9})]], [[A]], ignore_args=True).score == 1.0

    def test_zero_invocations_not_evaluated(self):
        result = tj.tool_trajectory_avg_score([], [])
        assert result.score is None
        assert "no invocations" in result.explanation

    def test_mismatched_turn_counts_not_evaluated(self):
        assert tj.tool_trajectory_avg_score([[A]], [[A], [B]]).score is None

    def test_unknown_match_type(self):
        with pytest.raises(ValueError, match="match_type"):
            tj.tool_trajectory_avg_score([[A]], [[A]], match_type="FUZZY")


ROW = {
    "predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": 1.0}}, {"tool_name": "b", "tool_input": {}}],
    "reference_trajectory": '[{"name": "a", "args": {"x": 1}}]',
}


class TestRowMetrics:
    ROW = ROW

    def test_vertex_and_adk_forms_and_json_strings(self):
        assert resolve_metric("trajectory_in_order_match").score(self.ROW).score == 1.0
        assert resolve_metric("trajectory_precision").score(self.ROW).score == 0.5

    def test_reference_without_tool_input_is_a_wildcard(self):
        row = {
            "predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": 5}}],
            "reference_trajectory": [{"tool_name": "a"}],
        }
        assert resolve_metric("trajectory_exact_match").score(row).score == 1.0

    def test_parameters_from_spec_strings(self):
        assert resolve_metric("trajectory_single_tool_use(tool_name=b)").score(self.ROW).score == 1.0
        metric = resolve_metric("tool_trajectory_avg_score(match_type=ANY_ORDER, ignore_args=true)")
        assert metric.score(self.ROW).score == 1.0

    def test_multi_turn_row(self):
        row = {
            "invocations": [
                {
                    "predicted_trajectory": [{"name": "a", "args": {"x": 1}}],
                    "reference_trajectory": [{"name": "a", "args": {"x": 1}}],
                },
                {"predicted_trajectory": [], "reference_trajectory": [{"name": "b", "args": {}}]},
            ]
        }
        result = resolve_metric("tool_trajectory_avg_score").score(row)
        assert result.score == 0.5
        assert result.details["per_invocation_scores"] == [1.0, 0.0]
