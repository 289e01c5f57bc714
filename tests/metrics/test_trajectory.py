"""Trajectory metrics against docs/spec.md §4 and §6, edge case by edge case."""

from __future__ import annotations

import pytest

from toolpath.errors import MetricError
from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluation.evalsets.criteria import resolve_criteria
from toolpath.metrics import trajectory_match as tj
from toolpath.metrics.adk_args_rule import none_args_equal_empty
from toolpath.metrics.equality import CallMatch
from toolpath.model import ToolCall
from toolpath.trajectory import Trajectory


def call(name: str, args: dict | None = None, **kw) -> ToolCall:
    return ToolCall(name=name, args=args if args is not None or kw.get("wildcard") else {})


def wild(name: str) -> ToolCall:
    return ToolCall(name=name, args=None)


A, B, C = call("a", {"x": 1}), call("b", {"y": "z"}), call("c")

ALL_REFERENCE_METRICS = [tj.exact_match, tj.in_order_match, tj.any_order_match, tj.precision, tj.recall]


class TestCallEquality:
    """ADK 2.x's rule (docs/spec.md §4): ``==`` of the decoded values; JSON equality and wildcards only as options."""

    def test_key_order_is_ignored(self):
        assert tj.calls_match(call("f", {"a": 1, "b": 2}), call("f", {"b": 2, "a": 1}))

    def test_int_equals_float(self):
        assert tj.calls_match(call("f", {"t": 1}), call("f", {"t": 1.0}))
        assert tj.calls_match(call("f", {"t": [2.0, {"u": 3}]}), call("f", {"t": [2, {"u": 3.0}]}))

    def test_booleans_equal_numbers_as_in_python(self):
        assert tj.calls_match(call("f", {"on": True}), call("f", {"on": 1}))
        assert tj.calls_match(call("f", {"on": 0}), call("f", {"on": False}))
        assert tj.calls_match(call("f", {"on": [1.0, {"x": True}]}), call("f", {"on": [True, {"x": 1}]}))
        assert not tj.calls_match(call("f", {"on": 2}), call("f", {"on": True}))

    def test_json_strict_option_keeps_booleans_apart(self):
        assert not tj.calls_match(call("f", {"on": True}), call("f", {"on": 1}), json_strict=True)
        assert not tj.calls_match(call("f", {"on": [0]}), call("f", {"on": [False]}), json_strict=True)
        assert tj.calls_match(call("f", {"t": 1}), call("f", {"t": 1.0}), json_strict=True)

    def test_list_order_matters(self):
        assert not tj.calls_match(call("f", {"ids": [1, 2]}), call("f", {"ids": [2, 1]}))

    def test_nested_objects_compare_deeply(self):
        assert not tj.calls_match(call("f", {"u": {"c": {"hue": 30}}}), call("f", {"u": {"c": {"hue": 31}}}))

    def test_names_must_match(self):
        assert not tj.calls_match(call("f"), call("g"))

    def test_absent_args_are_not_empty_args(self):
        assert not tj.calls_match(call("f", {}), wild("f"), null_args_wildcard=False)
        assert not tj.calls_match(wild("f"), call("f", {}))
        assert tj.calls_match(wild("f"), wild("f"), null_args_wildcard=False)
        assert not tj.calls_match(wild("f"), call("f", {}), json_strict=True)

    def test_null_reference_args_match_anything_as_an_option(self):
        assert tj.calls_match(call("f", {"q": "anything"}), wild("f"))  # on by default for trajectory_*
        assert not tj.calls_match(call("g", {"q": 1}), wild("f"))
        assert not tj.calls_match(call("f", {"q": "anything"}), wild("f"), null_args_wildcard=False)

    def test_ignore_args_compares_names_only(self):
        assert tj.calls_match(call("f", {"a": 1}), call("f", {"a": 2}), ignore_args=True)

    def test_missing_key_differs_from_null_value(self):
        assert not tj.calls_match(call("f", {}), call("f", {"a": None}))

    def test_keys_and_identities_agree_with_the_rule(self):
        pairs = [({"on": True}, {"on": 1}), ({"x": [1, 2]}, {"x": [2, 1]}), ({"x": {"a": 0}}, {"x": {"a": False}})]
        numbers = [({"n": 2**53 + 1}, {"n": float(2**53 + 1)}), ({"n": 10**20}, {"n": 1e20}), ({"n": -0.0}, {"n": 0})]
        for a, b in [*pairs, *numbers, (None, {}), (None, None), ({}, {})]:
            p, r = ToolCall(name="f", args=a), ToolCall(name="f", args=b)
            assert (p.identity == r.identity) == (p.match_key == r.match_key) == (a == b)
            assert (p.json_identity == r.json_identity) == (p.json_match_key == r.json_match_key)
        # values JSON cannot hold keep Python's own ==
        assert ToolCall(name="f", args={"t": [1]}).identity != ToolCall(name="f", args={"t": (1,)}).identity
        assert ToolCall(name="f", args={"t": (1,)}).identity == ToolCall(name="f", args={"t": (1.0,)}).identity

    def test_identities_agree_with_the_rule_on_nested_and_odd_values(self):
        """Identities are frozen sets and tuples of the values, so hashing must agree with ``==`` everywhere:
        nested arrays and objects, a tuple against a list, a set (unhashable: it keeps its own ``==``), NaN."""
        nan = float("nan")
        cases = [
            ({"x": [1, [2, {"a": True}]]}, {"x": [1.0, [2, {"a": 1}]]}),
            ({"x": {"a": 1, "b": [True]}}, {"x": {"b": [1], "a": 1.0}}),
            ({"x": [1, 2]}, {"x": (1, 2)}),
            ({"x": {"a": [1]}}, {"x": {"a": (1,)}}),
            ({"x": [[1]]}, {"x": [(1,)]}),
            ({"x": []}, {"x": {}}),
            ({"x": [1, 2]}, {"x": [2, 1]}),
            ({"x": {1, 2}}, {"x": {2, 1}}),
            ({"x": {1, 2}}, {"x": [1, 2]}),
            ({"x": nan}, {"x": nan}),  # one NaN object, as the JSON decoder gives: == of containers holds
            ({"x": [nan]}, {"x": [float("nan")]}),  # two NaN objects: unequal, as ==
        ]
        for a, b in cases:
            p, r = ToolCall(name="f", args=a), ToolCall(name="f", args=b)
            assert (p.identity == r.identity) == (p.match_key == r.match_key) == (a == b), (a, b)
            if p.identity == r.identity:
                assert hash(p.identity) == hash(r.identity), (a, b)
            pair = Trajectory([p, r]), Trajectory([r, p])
            assert tj.any_order_match(*pair).score == tj.exact_match(list(pair[0]), list(pair[0])).score == 1.0
            assert tj.precision(Trajectory([p]), Trajectory([r])).score == (1.0 if a == b else 0.0), (a, b)

    def test_explanation_names_absent_arguments(self):
        result = tj.exact_match([call("get_time", {})], [wild("get_time")], null_args_wildcard=False)
        assert result.explanation == "call 1: get_time arguments: expected null, got {}"


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

    def test_adk_rule_by_default_and_options(self):
        on, one = [call("set", {"on": False})], [call("set", {"on": 0})]
        assert tj.tool_trajectory_avg_score([one], [on]).score == 1.0
        assert tj.tool_trajectory_avg_score([one], [on], json_strict=True).score == 0.0
        # a reference without args is not a wildcard for ADK's criterion, unless asked: it equals {} or not as
        # the installed google-adk says (none_args_equal_empty), and either rule can be asked for
        adk_rule = 1.0 if none_args_equal_empty() else 0.0
        assert tj.tool_trajectory_avg_score([[call("now", {})]], [[wild("now")]]).score == adk_rule
        assert tj.tool_trajectory_avg_score([[call("x", {"a": 1})]], [[wild("x")]]).score == 0.0
        assert tj.tool_trajectory_avg_score([[wild("now")]], [[wild("now")]]).score == 1.0
        assert tj.tool_trajectory_avg_score([[call("now", {})]], [[wild("now")]], null_args_wildcard=True).score == 1.0
        for match_type in ("EXACT", "IN_ORDER", "ANY_ORDER"):
            for equal in (False, True):
                got = tj.tool_trajectory_avg_score(
                    [[A, call("now", {})]], [[wild("now")]], match_type=match_type, none_args_equal_empty=equal
                ).score
                assert got == (0.0 if match_type == "EXACT" else float(equal)), (match_type, equal)

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
        assert resolve_metric("trajectory_exact_match(null_args_wildcard=false)").score(row).score == 0.0
        assert resolve_metric("tool_trajectory_avg_score").score(row).score == 0.0

    def test_eval_set_criteria_follow_adk_rule(self):
        from toolpath.evaluation.catalog import criterion_metric

        row = {"predicted_trajectory": [{"tool_name": "a", "tool_input": {}}], "reference_trajectory": [{"name": "a"}]}
        assert criterion_metric("trajectory_recall", {}).score(row).score == 0.0
        assert criterion_metric("trajectory_recall", {"null_args_wildcard": True}).score(row).score == 1.0

    def test_json_strict_from_spec_strings(self):
        row = {
            "predicted_trajectory": [{"tool_name": "a", "tool_input": {"on": 1}}],
            "reference_trajectory": [{"tool_name": "a", "tool_input": {"on": True}}],
        }
        assert resolve_metric("trajectory_exact_match").score(row).score == 1.0
        assert resolve_metric("trajectory_exact_match(json_strict=true)").score(row).score == 0.0
        assert resolve_metric("trajectory_f1(json_strict=true)").score(row).score == 0.0
        assert resolve_metric("tool_trajectory_avg_score(json_strict=true)").score(row).score == 0.0

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


def test_call_match_modes_read_from_specs_and_criteria_as_members_with_their_text():
    """``CallMatch``: the ``match`` option of a metric spec and of an eval-set criterion becomes a member, scores as
    its mode says, and a wrong value is refused with the modes' text."""
    assert [m.value for m in CallMatch] == ["name", "name_and_args", "name_and_required_args"]
    row = {
        "predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": 1, "extra": 2}}],
        "reference_trajectory": [{"tool_name": "a", "tool_input": {"x": 1}}],
    }
    scores = {str(m): resolve_metric(f"trajectory_exact_match(match={m})").score(row).score for m in CallMatch}
    assert scores == {"name": 1.0, "name_and_args": 0.0, "name_and_required_args": 1.0}
    [criterion] = resolve_criteria({"tool_trajectory_avg_score": {"threshold": 1, "match": "name"}}).values()
    assert criterion.metric.match is CallMatch.NAME and dict(criterion.options) == {"match": "name"}
    assert criterion.metric.score(row).score == 1.0
    with pytest.raises(
        MetricError, match=r"match must be one of name, name_and_args, name_and_required_args, got 'names'"
    ):
        resolve_metric("trajectory_exact_match(match=names)")


def test_call_orders_read_from_specs_as_members_with_their_text():
    """``CallOrder``: the ``order`` option of precision, recall and F1 becomes a member and pairs as it says."""
    assert [o.value for o in tj.CallOrder] == ["any", "in_order"]
    row = {
        "predicted_trajectory": [{"tool_name": n, "tool_input": {}} for n in ("b", "a")],
        "reference_trajectory": [{"tool_name": n, "tool_input": {}} for n in ("a", "b")],
    }
    metrics = {str(o): resolve_metric(f"trajectory_recall(order={o})") for o in tj.CallOrder}
    assert {o: dict(m.options)["order"] for o, m in metrics.items()} == {o: tj.CallOrder(o) for o in metrics}
    assert all(type(dict(m.options)["order"]) is tj.CallOrder for m in metrics.values())
    assert {o: m.score(row).score for o, m in metrics.items()} == {"any": 1.0, "in_order": 0.5}
    with pytest.raises(MetricError, match=r"order must be one of any, in_order, got 'sideways'"):
        resolve_metric("trajectory_recall(order=sideways)")
