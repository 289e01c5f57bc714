"""Vertex-style datasets from JSONL, CSV and JSON files (and lists of dicts): what users give is read, and a
malformed trajectory or an empty file is an error naming the file, the line (or row) and the column."""

from __future__ import annotations

import json

import pytest

from toolpath.datasets import load_rows
from toolpath.errors import DatasetError

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
