"""Vertex-style datasets from JSONL, CSV and JSON files (and lists of dicts): what users give is read, and a
malformed trajectory or an empty file is an error naming the file, the line (or row) and the column."""

from __future__ import annotations

import json

import pytest

from toolpath.datasets import load_rows, read_rows
from toolpath.errors import DatasetError
from toolpath.model import ToolCall

CALL = {"tool_name": "get_weather", "tool_input": {"city": "Paris"}}


def test_vertex_eval_dataset_json_as_rows_or_columns(tmp_path):
    rows = [
        {"prompt": "weather in Paris?", "reference_trajectory": [CALL]},
        {"prompt": "hi", "reference_trajectory": []},
    ]
    (tmp_path / "eval_dataset.json").write_text(json.dumps(rows))
    assert load_rows(tmp_path / "eval_dataset.json") == rows
    columns = {"prompt": [r["prompt"] for r in rows], "reference_trajectory": [r["reference_trajectory"] for r in rows]}
    (tmp_path / "columns.json").write_text(json.dumps(columns))  # DataFrame.to_dict(orient="list")
    assert load_rows(tmp_path / "columns.json") == rows


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        # a broken cell among good ones: the line the record starts on (the quoted cell before spans two lines)
        (
            "broken.csv",
            'prompt,predicted_trajectory\n"two\nlines",[]\nb,"[{""tool_name"": ""x""}"\nc,[]\n',
            r"broken.csv:4: predicted_trajectory: not valid JSON \(Expecting ',' delimiter at char 19\); "
            r"expected a list of tool calls",
        ),
        (
            "plain.jsonl",
            json.dumps({"prompt": "a", "predicted_trajectory": []})
            + "\n\n"
            + json.dumps({"prompt": "b", "predicted_trajectory": "get_weather"})
            + "\n",
            r"plain.jsonl:3: predicted_trajectory: not valid JSON",
        ),
        (
            "noname.jsonl",
            json.dumps({"reference_trajectory": [CALL, {"tool": "get_time"}]}) + "\n",
            r"noname.jsonl:1: reference_trajectory\[1\]: has neither 'tool_name' nor 'name'",
        ),
        (
            "args.json",
            json.dumps([{"reference_trajectory": [{"tool_name": "x", "tool_input": [1]}]}]),
            r"args.json: row 1: reference_trajectory\[0\]: arguments of 'x' must be an object, got list",
        ),
        ("empty.jsonl", "\n\n", r"empty.jsonl: no rows"),
        ("header.csv", "prompt,reference_trajectory\n", r"header.csv: no rows"),
        ("empty.json", "[]", r"empty.json: no rows"),
        ("scalar.json", '["a"]', r"scalar.json: row 1: expected a JSON object, got str"),
        ("ragged.json", '{"prompt": ["a", "b"], "reference": ["x"]}', r"ragged.json: the column lists have different"),
        ("set.json", '{"eval_set_id": "s", "eval_cases": []}', r"set.json: this is an ADK eval set; name it"),
        ("cases.txt", "prompt\n", r"cases.txt: unsupported dataset format '.txt'; use .jsonl, .ndjson, .csv, .json"),
    ],
)
def test_malformed_datasets_name_file_line_and_column(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_rows(tmp_path / name)


def test_rows_in_memory_are_checked_too():
    with pytest.raises(DatasetError, match=r"dataset row 1: predicted_trajectory\[0\]: expected an object"):
        load_rows([{"predicted_trajectory": []}, {"predicted_trajectory": ["get_weather"]}])
    with pytest.raises(DatasetError, match="dataset: no rows"):
        load_rows([])
    # a missing column is not malformed: the metrics that need it say so, row by row
    assert load_rows([{"prompt": "a"}]) == [{"prompt": "a"}]


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ([{"tool_name": "x", "tool_input": {1: "a"}}], r"\[0\]: argument names of 'x' must be strings, got \[1\]"),
        ([CALL, {"tool_name": "y", "tool_input": {"a": 1, 2: 3}}], r"\[1\]: argument names of 'y' must be strings"),
        ([{"name": "x", "args": {}, "id": 7}], r"\[0\]: the id of 'x' must be a string, got int"),
        ([CALL, {"tool_name": "", "tool_input": {}}], r"\[1\]: tool name must be a non-empty string, got ''"),
        ([{"tool_name": "x", "tool_input": "[1]"}], r"\[0\]: arguments of 'x' are a string that is not a JSON object"),
    ],
)
def test_each_call_is_checked_field_by_field(calls, message):
    with pytest.raises(DatasetError, match=r"^dataset row 1: reference_trajectory" + message):
        load_rows([{"reference_trajectory": []}, {"reference_trajectory": calls}])


@pytest.mark.parametrize(
    "item",
    [
        {"tool_name": "get_weather", "tool_input": {"city": "Paris", "days": [1, 2]}},
        {"tool_name": "get_weather"},
        {"tool_name": "get_weather", "tool_input": None, "tool_output": {"t": 20}, "error": ValueError("x")},
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "call-1", "result": [1]},
        {"name": "get_weather", "args": '{"city": "Paris"}', "call_id": "c2"},
    ],
)
def test_a_parsed_call_is_the_record_pydantic_builds(item):
    """Parsing skips pydantic's validation; the record it builds is the one validation would build."""
    parsed = ToolCall.from_item(item)
    args = item.get("tool_input", item.get("args"))
    validated = ToolCall(
        name=item.get("tool_name", item.get("name")),
        args=json.loads(args) if isinstance(args, str) else args,
        result=item.get("tool_output", item.get("result")),
        call_id=item.get("id", item.get("call_id")),
        error=None if item.get("error") is None else str(item["error"]),
    )
    assert parsed == validated
    assert parsed.model_dump() == validated.model_dump()
    assert parsed.model_fields_set == validated.model_fields_set
    assert repr(parsed) == repr(validated)
    assert args is None or parsed.args is not args  # arguments are copied: the dataset's dicts are not shared
    moved = parsed.model_copy(update={"start_time": 5})
    assert moved.start_time == 5 and parsed.start_time is None


def test_a_file_is_read_as_it_is_scored(tmp_path):
    """read_rows streams: a bad line far down is reported when it is reached, with its line; errors about the
    file itself come at once."""
    good = json.dumps({"prompt": "a", "predicted_trajectory": [CALL]})
    path = tmp_path / "rows.jsonl"
    path.write_text(f"{good}\n{good}\n" + json.dumps({"predicted_trajectory": [{"tool": "x"}]}) + "\n")
    rows = read_rows(path)
    first = next(rows)
    assert first[0]["prompt"] == "a" and first[1]["predicted_trajectory"][0].name == "get_weather"
    assert next(rows)[0]["prompt"] == "a"
    with pytest.raises(DatasetError, match=r"rows.jsonl:3: predicted_trajectory\[0\]: has neither"):
        next(rows)
    with pytest.raises(DatasetError, match="no such file"):
        read_rows(tmp_path / "missing.csv")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match=r"empty\.jsonl: no rows"):
        read_rows(tmp_path / "empty.jsonl")


def test_rows_given_in_memory_are_left_as_they_are():
    rows = [{"prompt": "a", "expected": [CALL]}]
    loaded = load_rows(rows, {"reference_trajectory": "expected"})
    assert loaded == [{"prompt": "a", "expected": [CALL], "reference_trajectory": [CALL]}]
    assert rows == [{"prompt": "a", "expected": [CALL]}]
