"""Trajectories as datasets are parsed into: the usual item is kept as its match key and its record is built only
when read; read or not, a trajectory behaves as the tuple of its call records."""

from __future__ import annotations

import pickle

import pytest

from toolpath.errors import DatasetError
from toolpath.model import Invocation, ToolCall
from toolpath.trajectory import Trajectory, parse_trajectory

ITEMS = [
    {"tool_name": "search", "tool_input": {"q": "paris", "limit": 3}},
    {"tool_name": "book", "tool_input": {"hotel": {"id": 7, "late": True}}},
]
RECORDS = (
    ToolCall(name="search", args={"q": "paris", "limit": 3}),
    ToolCall(name="book", args={"hotel": {"id": 7, "late": True}}),
)


def test_usual_items_are_compared_without_records_and_read_as_the_records_from_item_builds():
    parsed = parse_trajectory(ITEMS)
    assert parsed._calls is None  # the keys alone so far
    assert len(parsed) == 2 and bool(parsed) and not parse_trajectory([])
    assert parsed.match_keys == (("search", ITEMS[0]["tool_input"]), ("book", ITEMS[1]["tool_input"]))
    assert parsed._calls is None  # still: length and keys need no record
    assert parsed == RECORDS == tuple(parsed) and list(parsed) == list(RECORDS)
    assert [call.model_dump() for call in parsed] == [ToolCall.from_item(item).model_dump() for item in ITEMS]
    assert parsed[0] is parsed[0] and parsed[-1] == RECORDS[1] and parsed[:1] == RECORDS[:1]
    assert parsed == Trajectory(RECORDS) and parsed != Trajectory(RECORDS[:1]) and parsed != list(RECORDS)
    assert repr(parsed) == f"Trajectory({list(RECORDS)!r})"


def test_a_trajectory_is_read_like_the_tuple_it_was():
    parsed = parse_trajectory(ITEMS)
    assert parsed.index(RECORDS[1]) == 1 and parsed.count(RECORDS[0]) == 1 and RECORDS[1] in parsed
    assert list(reversed(parsed)) == list(reversed(RECORDS))
    invocation = Invocation(invocation_id="i", session_id="s", tool_calls=parsed)  # pydantic takes it as a list
    assert invocation.tool_calls == list(RECORDS)
    assert pickle.loads(pickle.dumps(parsed)) == parsed
    with pytest.raises(TypeError):
        hash(parsed)


def test_keys_hold_copies_of_the_arguments():
    source = {"q": "paris"}
    parsed = parse_trajectory([{"tool_name": "search", "tool_input": source}])
    source["q"] = "changed after parsing"
    assert parsed.match_keys == (("search", {"q": "paris"}),) and parsed[0].args == {"q": "paris"}


def test_an_unusual_item_after_usual_ones_gives_every_call_its_record_in_order():
    items = [*ITEMS, {"name": "pay", "args": {"amount": 5}, "id": "c3"}, ITEMS[0]]
    parsed = parse_trajectory(items)
    assert [c.name for c in parsed] == ["search", "book", "pay", "search"]
    assert parsed[2].call_id == "c3" and parsed.match_keys[3] == ("search", ITEMS[0]["tool_input"])


def test_a_bad_item_names_its_place_wherever_it_is():
    for bad, field in [
        ({"tool_name": "", "tool_input": {}}, "tool name"),
        ({"tool_name": "f", "tool_input": {1: 2}}, "argument names"),
    ]:
        with pytest.raises(DatasetError, match=rf"trajectory\[2\]: .*{field}"):
            parse_trajectory([*ITEMS, bad])
