"""The trajectory metrics' fast paths give what the slow ones give: small trajectories are paired by scanning call
keys, large ones by counting hashable identities, and both must equal a maximum matching found by search."""

from __future__ import annotations

import json
import random

import pytest

from toolpath.metrics import pairing
from toolpath.metrics import trajectory_match as tj
from toolpath.metrics.equality import call_predicate
from toolpath.model import ToolCall
from toolpath.trajectory import Trajectory, parse_trajectory

# argument values that are == in Python but differ as JSON, or differ by nesting and list order
METRICS = [tj.exact_match, tj.in_order_match, tj.any_order_match, tj.precision, tj.recall]
VALUES = [1, 1.0, True, 0, False, 2, "1", [1, 2], [2, 1], [True, 2], {"a": 1}, {"a": True}, {"a": [1]}, None]


def random_calls(rng: random.Random, count: int, wildcards: bool = False) -> list[ToolCall]:
    calls = []
    for _ in range(count):
        if wildcards and rng.random() < 0.2:
            calls.append(ToolCall(name=rng.choice("ab"), args=None))
            continue
        args = {key: rng.choice(VALUES) for key in rng.sample("xyz", rng.randint(0, 2))}
        calls.append(ToolCall(name=rng.choice("abc"), args=args))
    return calls


def searched(predicted: list[ToolCall], reference: list[ToolCall], json_strict: bool, wildcard: bool) -> int:
    """The maximum matching by augmenting paths over the call predicate: no shortcut of the fast paths."""
    return pairing.max_matching(predicted, reference, call_predicate("name_and_args", json_strict, wildcard))


@pytest.mark.parametrize("sizes", [(0, 3), (3, 0), (4, 4), (5, 6), (8, 8), (9, 7), (20, 15)])
@pytest.mark.parametrize("json_strict", [False, True])
@pytest.mark.parametrize("wildcards", [False, True])
def test_pairs_equal_a_searched_maximum_matching_on_both_sides_of_the_threshold(sizes, json_strict, wildcards):
    assert sizes[0] * sizes[1] <= pairing.SMALL or sizes in [(9, 7), (20, 15)]  # both paths are exercised
    rng = random.Random(hash((sizes, json_strict, wildcards)) & 0xFFFF)
    for _ in range(150):
        reference = random_calls(rng, sizes[1], wildcards)
        # a shuffled, perturbed copy of the reference: many equal calls, some repeated
        predicted = [*rng.sample(reference, len(reference)), *random_calls(rng, sizes[0])][: sizes[0]]
        expected = searched(predicted, reference, json_strict, True)
        options = {"json_strict": json_strict}
        for p, r in [(predicted, reference), (Trajectory(predicted), Trajectory(reference))]:
            assert tj.matched_pairs(p, r, **options) == expected
            assert tj.any_order_match(p, r, **options).score == (1.0 if expected == len(reference) else 0.0)
            if predicted:
                assert tj.precision(p, r, **options).score == expected / len(predicted)
            if reference:
                assert tj.recall(p, r, **options).score == expected / len(reference)
        strict = searched(predicted, reference, json_strict, False)  # null arguments as a value
        assert tj.matched_pairs(Trajectory(predicted), Trajectory(reference), null_args_wildcard=False, **options) == (
            strict
        )
        for metric in METRICS:  # Trajectory records take the keyed path, plain lists the general one: same results
            for wildcard in (True, False):
                same = {"json_strict": json_strict, "null_args_wildcard": wildcard}
                fast = metric(Trajectory(predicted), Trajectory(reference), **same)
                assert fast == metric(list(predicted), list(reference), **same), (metric.__name__, same)


def test_scan_and_counts_agree_on_large_trajectories_with_repeats():
    rng = random.Random(3)
    for _ in range(50):
        reference = random_calls(rng, 30)
        predicted = [*rng.sample(reference, 20), *random_calls(rng, 15)]
        assert len(predicted) * len(reference) > pairing.SMALL
        expected = searched(predicted, reference, False, True)
        assert tj.matched_pairs(Trajectory(predicted), Trajectory(reference)) == expected
        assert len(reference) - len(pairing.unmatched(Trajectory(predicted), Trajectory(reference))) == expected


def test_missing_calls_are_named_in_reference_order_on_either_path():
    a, b = ToolCall(name="a", args={"x": 1}), ToolCall(name="b", args={})
    result = tj.any_order_match([b], [a, b, a])
    assert (result.score, result.explanation) == (0.0, "2 of 3 reference call(s) unmatched; missing a, a")
    result = tj.recall([], [b, a])
    assert (result.score, result.explanation) == (0.0, "0 of 2 reference call(s) matched; missing b, a")
    many = [ToolCall(name=f"t{i}", args={}) for i in range(10)]  # above the threshold: identity counts
    result = tj.any_order_match(many[:9], many)
    assert result.explanation == "1 of 10 reference call(s) unmatched; missing t9"


def test_exact_and_in_order_compare_keys_by_the_rule():
    p = Trajectory([ToolCall(name="f", args={"on": True, "n": [1.0]}), ToolCall(name="g", args={})])
    r = Trajectory([ToolCall(name="f", args={"n": [1], "on": 1}), ToolCall(name="g", args={})])
    assert tj.exact_match(p, r).score == tj.in_order_match(p, r).score == 1.0
    assert tj.exact_match(p, r, json_strict=True).score == tj.in_order_match(p, r, json_strict=True).score == 0.0
    absent = Trajectory([ToolCall(name="f", args={"on": True, "n": [1.0]}), ToolCall(name="g", args=None)])
    assert tj.exact_match(p, absent, null_args_wildcard=False).score == 0.0
    assert tj.in_order_match(p, absent, null_args_wildcard=False).score == 0.0
    assert tj.exact_match(p, absent).score == 1.0  # a null reference is a wildcard by default


def test_parsed_trajectories_carry_the_keys_their_calls_give():
    """``parse_trajectory`` fills the cached keys as it builds the calls: they must be what the calls say, for
    every item form (the inline Vertex form, ADK's, arguments as JSON text, no arguments, a ``ToolCall``)."""
    items = [
        {"tool_name": "a", "tool_input": {"x": 1}},
        {"name": "b", "args": {"y": [1, 2]}, "id": "c1"},
        {"tool_name": "c", "tool_input": '{"z": true}'},
        {"tool_name": "d"},
        {"tool_name": "e", "tool_input": None},
        ToolCall(name="f", args={"w": 2}),
        {"tool_name": "g", "tool_input": {}, "tool_output": "ok"},
    ]
    for count in range(len(items) + 1):
        parsed = parse_trajectory(items[:count])
        assert parsed.match_keys == tuple(call.match_key for call in parsed)
        assert parsed.has_wildcard == any(call.args is None for call in parsed)
        assert parsed.has_wildcard == (count > 3)
    inline = parse_trajectory([{"tool_name": "a", "tool_input": {"x": {"deep": 1}}}])
    assert inline.match_keys[0][1] is inline[0].args  # the key holds the call's own (copied) arguments
    source = {"x": 1}
    assert parse_trajectory([{"tool_name": "a", "tool_input": source}])[0].args is not source
    assert inline[0].model_dump() == ToolCall(name="a", args={"x": {"deep": 1}}).model_dump()
    assert inline[0] == ToolCall(name="a", args={"x": {"deep": 1}})


def test_metrics_pass_only_the_options_that_differ_from_the_function_defaults():
    from toolpath.evaluation.catalog import resolve_metric

    assert resolve_metric("trajectory_precision").call is tj.precision  # type: ignore[attr-defined]
    strict = resolve_metric("trajectory_precision(json_strict=true, order=in_order)").call  # type: ignore[attr-defined]
    assert strict.keywords == {"json_strict": True, "order": "in_order"}
    row = {
        "predicted_trajectory": [{"tool_name": "a", "tool_input": {"on": 1}}, {"tool_name": "b", "tool_input": {}}],
        "reference_trajectory": [{"tool_name": "b", "tool_input": {}}, {"tool_name": "a", "tool_input": {"on": True}}],
    }
    assert resolve_metric("trajectory_precision").score(row).score == 1.0
    assert resolve_metric("trajectory_precision(order=in_order)").score(row).score == 0.5
    assert resolve_metric("trajectory_precision(json_strict=true)").score(row).score == 0.5


def test_differences_name_values_as_json_writes_them():
    from toolpath.metrics.equality import describe_difference

    for got, want in [(6, 5), (-(10**30), 2**70), (True, 1), (1.5, 2), ("é", "e"), ([1], {"a": None}), (None, 0)]:
        p, r = ToolCall(name="f", args={"v": got}), ToolCall(name="f", args={"v": want})
        text = describe_difference(p, r, json_strict=True)
        assert (
            text == f"f v: expected {json.dumps(want, ensure_ascii=False)}, got {json.dumps(got, ensure_ascii=False)}"
        )


def test_the_metrics_of_one_row_share_the_pairing_and_nothing_leaks_to_the_next_pair():
    a, b, c = (ToolCall(name=n, args={"v": 1}) for n in "abc")
    first, second = (Trajectory([a]), Trajectory([a, b])), (Trajectory([a, c]), Trajectory([a, b]))
    for _ in range(2):
        assert pairing.unmatched(*first) == ("b",)
        assert pairing.unmatched(*first) is pairing.unmatched(*first)  # asked again: the answer kept
        assert pairing.unmatched(*second) == ("b",)
        assert pairing.unmatched(second[1], first[0]) == ()
        assert [tj.recall(*pair).score for pair in (first, second, first)] == [0.5, 0.5, 0.5]
        assert tj.precision(*second).score == 0.5 and tj.precision(*first).score == 1.0
