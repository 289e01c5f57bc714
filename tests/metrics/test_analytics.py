"""Partial credit and behaviour metrics, pinned on hand-computed cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolpath.evaluation.catalog import resolve_metric
from toolpath.evaluation.scoring import score_row
from toolpath.metrics import analytics, trajectory_match
from toolpath.model import ToolCall
from toolpath.values import canonical_json


def call(name: str, args: dict | None = None, error: str | None = None) -> ToolCall:
    return ToolCall(name=name, args=args if args is not None else {}, error=error)


def row_score(spec: str, predicted, reference=None):
    row = {"predicted_trajectory": [c.to_item() for c in predicted]}
    if reference is not None:
        row["reference_trajectory"] = [c.to_item() if c.args is not None else {"tool_name": c.name} for c in reference]
    return score_row(resolve_metric(spec), row)


class TestF1AndModes:
    PRED = (call("search", {"q": "cats", "limit": 5}), call("open", {"id": 1}), call("extra"))
    REF = (call("search", {"q": "cats"}), call("open", {"id": 2}))

    def test_f1_is_harmonic_mean(self):
        # name_and_args: nothing matches (extra key limit; id differs)
        assert row_score("trajectory_f1", self.PRED, self.REF).score == 0.0
        # name: 2 pairs; precision 2/3, recall 1 -> F1 = 0.8
        assert row_score("trajectory_f1(match=name)", self.PRED, self.REF).score == pytest.approx(0.8)
        # required args: search matches (extra key fine), open does not; P 1/3, R 1/2 -> F1 0.4
        result = row_score("trajectory_f1(match=name_and_required_args)", self.PRED, self.REF)
        assert result.score == pytest.approx(0.4)
        assert result.explanation == "precision 0.333 (1/3), recall 0.500 (1/2)"

    def test_match_option_on_every_trajectory_metric(self):
        pred, ref = [call("a", {"x": 1, "y": 2})], [call("a", {"x": 1})]
        for name in ("exact_match", "in_order_match", "any_order_match", "precision", "recall"):
            assert row_score(f"trajectory_{name}", pred, ref).score == 0.0, name
            assert row_score(f"trajectory_{name}(match=name_and_required_args)", pred, ref).score == 1.0, name
            assert row_score(f"trajectory_{name}(match=name)", [call("a", {"z": 0})], ref).score == 1.0, name
        assert row_score("tool_trajectory_avg_score(match=name_and_required_args)", pred, ref).score == 1.0

    def test_in_order_uses_longest_common_subsequence(self):
        a, b, c = call("a"), call("b"), call("c")
        pred, ref = [b, a, c], [a, b, c]
        assert trajectory_match.precision_recall_f1(pred, ref, order="any")[3] == 3
        # LCS of b,a,c and a,b,c is 2 (a,c or b,c)
        p, r, f, pairs = trajectory_match.precision_recall_f1(pred, ref, order="in_order")
        assert (pairs, p, r, f) == (2, pytest.approx(2 / 3), pytest.approx(2 / 3), pytest.approx(2 / 3))
        assert row_score("trajectory_recall(order=in_order)", pred, ref).score == pytest.approx(2 / 3)

    def test_ties_in_required_args_matching_need_augmenting_paths(self):
        # ref1 needs {x:1}; ref2 needs {x:1, y:2}. pred1 = {x:1, y:2} fits both, pred2 = {x:1} fits only ref1.
        # Greedy in reference order would give pred1 to ref1 and strand ref2; the maximum matching pairs both.
        pred = [call("f", {"x": 1, "y": 2}), call("f", {"x": 1})]
        ref = [call("f", {"x": 1}), call("f", {"x": 1, "y": 2})]
        assert trajectory_match.pair_count(pred, ref, match="name_and_required_args") == 2
        assert row_score("trajectory_any_order_match(match=name_and_required_args)", pred, ref).score == 1.0

    def test_empty_trajectories(self):
        assert row_score("trajectory_f1", [], []).score == 1.0
        assert row_score("trajectory_f1", [call("a")], []).score == 0.0  # precision 0, recall 1
        assert row_score("trajectory_f1", [], [call("a")]).score == 0.0

    def test_bad_options(self):
        for spec, message in (
            ("trajectory_f1(match=fuzzy)", "match must be one of"),
            ("trajectory_recall(order=backwards)", "order must be one of"),
            ("trajectory_exact_match(order=in_order)", "order applies to"),
        ):
            with pytest.raises(ValueError, match=message):
                resolve_metric(spec)


class TestArgumentSimilarity:
    def test_partial_credit_by_key(self):
        pred = [call("set_temperature", {"location": "bedroom", "temperature": 70})]
        ref = [call("set_temperature", {"location": "bedroom", "temperature": 21.1})]
        result = row_score("tool_argument_similarity", pred, ref)
        assert result.score == 0.5
        assert result.explanation == "arguments that differ: set_temperature.temperature (0.00)"

    def test_strings_numbers_booleans(self):
        assert analytics.value_similarity("Living  Room!", "living room") == 1.0
        assert analytics.value_similarity("the living room", "living room") == pytest.approx(0.8)  # P 2/3, R 1
        assert analytics.value_similarity(1, 1.0) == 1.0
        assert analytics.value_similarity(True, 1) == 0.0
        assert analytics.value_similarity(1, True) == 0.0
        assert analytics.value_similarity("1", 1) == 0.0
        assert analytics.value_similarity(None, None) == 1.0

    def test_unicode_text(self):
        assert analytics.value_similarity("ＣＡＦÉ crème", "café Crème") == 1.0  # NFKC + casefold
        assert analytics.value_similarity("東京 大阪", "東京") == pytest.approx(2 / 3)

    def test_nested_objects_and_lists(self):
        want = {"brightness": 30, "color": {"hue": 30, "saturation": 0.65}, "rooms": ["hall", "kitchen"]}
        got = {"brightness": 30, "color": {"hue": 35, "saturation": 0.65}, "rooms": ["hall"], "extra": 1}
        # brightness 1; color (0 + 1) / 2 = 0.5; rooms (1 + 0) / 2 = 0.5 -> (1 + 0.5 + 0.5) / 3
        assert analytics.value_similarity(got, want) == pytest.approx(2 / 3)
        result = row_score("tool_argument_similarity", [call("set", got)], [call("set", want)])
        assert result.score == pytest.approx(2 / 3)
        assert "set.color (0.50)" in result.explanation and "set.rooms (0.50)" in result.explanation

    def test_pairs_by_name_in_order_and_averages_pairs(self):
        pred = [call("f", {"x": 1}), call("g", {"y": "a"}), call("f", {"x": 3})]
        ref = [call("f", {"x": 1}), call("f", {"x": 2}), call("h", {"z": 1})]
        # pairs: f#1-f#1 = 1, f#2-f#2 = 0; h unpaired -> mean 0.5
        assert row_score("tool_argument_similarity", pred, ref).score == 0.5

    def test_missing_key_wildcard_and_no_args(self):
        assert row_score("tool_argument_similarity", [call("f", {})], [call("f", {"x": 1})]).score == 0.0
        assert (
            row_score("tool_argument_similarity", [call("f", {"x": 9})], [ToolCall(name="f", args=None)]).score == 1.0
        )
        assert row_score("tool_argument_similarity", [call("f", {"x": 9})], [call("f", {})]).score == 1.0

    def test_not_evaluated_never_zero(self):
        no_ref = row_score("tool_argument_similarity", [call("f")], None)
        assert no_ref.score is None and no_ref.explanation == "row has no 'reference_trajectory'"
        empty_ref = row_score("tool_argument_similarity", [call("f")], [])
        assert empty_ref.score is None and "no tool calls" in empty_ref.explanation
        no_pair = row_score("tool_argument_similarity", [call("g")], [call("f", {"x": 1})])
        assert no_pair.score is None


class TestBehaviour:
    def test_count_and_redundancy(self):
        calls = [call("a", {"x": 1}), call("b"), call("a", {"x": 1.0}), call("a", {"x": 2}), call("b")]
        assert row_score("tool_call_count", calls).score == 5.0
        redundant = row_score("redundant_tool_calls", calls)
        assert redundant.score == 2.0 and redundant.explanation == "repeated: a, b"
        assert row_score("tool_call_count", []).score == 0.0
        assert row_score("redundant_tool_calls", []).score == 0.0
        absent = [ToolCall(name="f", args=None), ToolCall(name="f", args={}), ToolCall(name="f", args={"x": True})]
        assert analytics.redundant_tool_calls(absent).score == 1.0  # absent arguments count as {}; true is not 1
        assert analytics.redundant_tool_calls([*absent, ToolCall(name="f", args={"x": 1})]).score == 1.0

    def test_loops_of_one_call_and_of_cycles(self):
        a, b, c = call("a"), call("b"), call("c")
        assert row_score("tool_loop_detected", [a, a, a]).score == 1.0
        assert row_score("tool_loop_detected", [a, a, b, a]).score == 0.0
        cycle = row_score("tool_loop_detected", [c, a, b, a, b, a, b])
        assert cycle.score == 1.0 and cycle.explanation == "a → b repeated 3 times from call 2"
        assert row_score("tool_loop_detected(min_repeats=4)", [c, a, b, a, b, a, b]).score == 0.0
        assert row_score("tool_loop_detected(max_cycle=1)", [a, b, a, b, a, b]).score == 0.0
        assert (
            row_score("tool_loop_detected", [call("a", {"x": 1}), call("a", {"x": 2}), call("a", {"x": 3})]).score
            == 0.0
        )
        assert row_score("tool_loop_detected", []).score == 0.0
        with pytest.raises(ValueError, match="min_repeats"):
            resolve_metric("tool_loop_detected(min_repeats=1)")

    def test_error_rate(self):
        assert row_score("tool_error_rate", [call("a", error="E: x"), call("b"), call("c"), call("d")]).score == 0.25
        empty = row_score("tool_error_rate", [])
        assert empty.score is None and empty.explanation == "no tool calls"

    @pytest.mark.parametrize(
        ("calls", "score", "outcomes"),
        [
            ([call("a", error="E"), call("b")], 1.0, ["recovered"]),  # different call succeeded
            ([call("a", {"x": 1}, error="E"), call("a", {"x": 2})], 1.0, ["recovered"]),  # new arguments
            ([call("a", error="E"), call("a", error="E"), call("a", error="E")], 0.0, ["repeated"]),
            ([call("a", error="E")], 0.0, ["gave_up"]),
            ([call("a", error="E"), call("b", error="F")], 0.0, ["gave_up", "gave_up"]),
            (
                [call("a", error="E"), call("a", error="E"), call("c"), call("d", error="F")],
                0.5,
                ["recovered", "gave_up"],
            ),
        ],
    )
    def test_error_recovery(self, calls, score, outcomes):
        result = row_score("error_recovery", calls)
        assert result.score == score
        assert result.details["outcomes"] == outcomes

    def test_error_recovery_without_failures_is_not_evaluated(self):
        result = row_score("error_recovery", [call("a")])
        assert result.score is None and result.explanation == "no failing tool call"


def _by_identities(predicted, min_repeats=3, max_cycle=3):
    """Both behaviour metrics as defined: every call's (name, canonical arguments) compared, nothing skipped."""
    ids = [(c.name, canonical_json(c.args if c.args is not None else {})) for c in predicted]
    redundant = sum(1 for i, key in enumerate(ids) if key in ids[:i])
    for length in range(1, max_cycle + 1):
        for start in range(len(ids) - length * min_repeats + 1):
            cycle, repeats = ids[start : start + length], 1
            while ids[start + repeats * length : start + (repeats + 1) * length] == cycle:
                repeats += 1
            if repeats >= min_repeats:
                return redundant, 1.0
    return redundant, 0.0


CALLS = st.builds(
    ToolCall,
    name=st.sampled_from(["a", "b", "c"]),
    args=st.one_of(st.none(), st.fixed_dictionaries({}, optional={"x": st.sampled_from([1, 1.0, True, "1", [1]])})),
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(CALLS, max_size=10), st.integers(2, 4), st.integers(1, 3))
def test_the_shortcuts_on_names_give_what_comparing_every_call_gives(predicted, min_repeats, max_cycle):
    redundant, loop = _by_identities(predicted, min_repeats, max_cycle)
    assert analytics.redundant_tool_calls(predicted).score == redundant
    assert analytics.tool_loop_detected(predicted, min_repeats=min_repeats, max_cycle=max_cycle).score == loop
