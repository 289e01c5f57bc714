"""The behaviour metrics' shortcuts (a trajectory read as its records, a turn too short or without a name twice
left unsearched) and the one-pass stored row give what the plain definitions give, on many trajectories."""

from __future__ import annotations

import random

import pytest

from toolpath.evaluation import catalog
from toolpath.evaluation.scoring import score_table, score_views
from toolpath.metrics import analytics
from toolpath.metrics.rows import call_item, stored_row, turn_row, with_parsed_trajectories
from toolpath.model import ToolCall
from toolpath.trajectory import Trajectory, parse_trajectory
from toolpath.values import json_identity

ARGUMENTS = [None, {}, {"x": 1}, {"x": True}, {"x": 1.0}, {"y": [1, {"z": None}]}, {"x": "a"}]


def trajectories(seed: int, count: int = 400) -> list[list[ToolCall]]:
    rnd = random.Random(seed)
    return [
        [
            ToolCall(
                name=rnd.choice("abc"),
                args=rnd.choice(ARGUMENTS),
                result=rnd.choice([None, 1, {"ok": True}]),
                error=rnd.choice([None, None, "E: x"]),
                call_id=rnd.choice([None, "c1"]),
                agent_name=rnd.choice([None, "sub"]),
            )
            for _ in range(rnd.choice([0, 1, 2, 3, 4, 6, 9]))
        ]
        for _ in range(count)
    ]


def identity(call: ToolCall) -> tuple[str, object]:
    return call.name, json_identity({} if call.args is None else call.args)


def loop_by_definition(calls: list[ToolCall], min_repeats: int, max_cycle: int) -> float:
    """1 when some cycle of up to ``max_cycle`` calls repeats back to back ``min_repeats`` times, searched
    everywhere."""
    ids = [identity(c) for c in calls]
    for length in range(1, max_cycle + 1):
        for start in range(len(ids)):
            cycle = ids[start : start + length]
            if len(cycle) == length and ids[start : start + length * min_repeats] == cycle * min_repeats:
                return 1.0
    return 0.0


@pytest.mark.parametrize(("min_repeats", "max_cycle"), [(3, 3), (2, 1), (2, 2), (4, 1), (3, 2)])
def test_loops_are_found_as_the_definition_finds_them(min_repeats, max_cycle):
    for calls in trajectories(min_repeats * 10 + max_cycle):
        expected = loop_by_definition(calls, min_repeats, max_cycle)
        for given in (calls, Trajectory(calls)):
            result = analytics.tool_loop_detected(given, min_repeats=min_repeats, max_cycle=max_cycle)
            assert result.score == expected, calls
            if not expected:
                assert result.explanation == (
                    f"no call or cycle of up to {max_cycle} calls repeats {min_repeats} times"
                )


def test_repeats_and_errors_are_counted_as_defined():
    for calls in trajectories(5):
        seen: list[object] = []
        repeated = []
        for call in calls:
            if identity(call) in seen:
                repeated.append(call.name)
            seen.append(identity(call))
        failed = sum(1 for call in calls if call.error)
        for given in (calls, Trajectory(calls)):
            assert analytics.redundant_tool_calls(given).score == len(repeated)
            assert analytics.redundant_tool_calls(given).explanation == (
                f"repeated: {', '.join(repeated)}" if repeated else "no call repeats an earlier one"
            )
            assert analytics.tool_call_count(given).score == len(calls)
            rate = analytics.tool_error_rate(given)
            assert rate.score == (failed / len(calls) if calls else None)
            assert rate.explanation == (f"{failed} of {len(calls)} call(s) failed" if calls else "no tool calls")


def test_a_stored_row_is_the_row_and_trajectory_of_its_records():
    """Plain calls before and after calls with more (results, ids, errors, agents): the row is turn_row's, the
    trajectory parse_trajectory's of it, record for record."""
    plain = [
        [
            ToolCall(name=rnd.choice("ab"), args=rnd.choice(ARGUMENTS[1:]), agent_name=rnd.choice([None, "x"]))
            for _ in range(rnd.choice([0, 1, 3]))
        ]
        for rnd in [random.Random(9)]
        for _ in range(100)
    ]
    for calls in trajectories(7) + plain:
        stored = [(c.name, c.args, c.error, c.result, c.call_id, c.agent_name) for c in calls]
        ids = {"invocation_id": "i", "session_id": "s", "agent_name": None}
        row, predicted = stored_row(
            ids,
            prompt="p",
            response=None,
            calls=stored,
            latency_in_seconds=1.0,
            failure=0,
            intermediate_responses=[("a", "t")],
        )
        expected = {
            **ids,
            **turn_row(
                prompt="p",
                response=None,
                tool_calls=calls,
                latency_in_seconds=1.0,
                failure=0,
                intermediate_responses=[("a", "t")],
            ),
        }
        assert row == expected
        assert list(row) == list(expected)
        parsed = parse_trajectory([call_item(c) for c in calls])
        assert [c.model_dump() for c in predicted] == [c.model_dump() for c in parsed]
        assert [c.model_fields_set for c in predicted] == [c.model_fields_set for c in parsed]
        assert predicted.match_keys == parsed.match_keys
        for mine, theirs in zip(predicted, calls, strict=True):  # the records' arguments are their own
            assert mine.args is None or mine.args is not theirs.args


def test_rows_scored_without_a_summary_are_the_rows_scored_with_one():
    """Online scoring keeps rows only: without the summary they hold the same results, and the summary is empty."""
    metrics = [catalog.resolve_metric(name) for name in ("tool_call_count", "tool_error_rate", "tool_loop_detected")]
    rows = [{"predicted_trajectory": [c.to_item() for c in calls]} for calls in trajectories(3, 50)]
    with_summary, summary, _ = score_table(rows, metrics)
    views = [(dict(row), with_parsed_trajectories(row)) for row in rows]
    without, empty, _ = score_views(views, metrics, summarized=False)
    assert without == with_summary
    assert summary["row_count"] == 50 and empty == {}
