"""ADK eval sets: ADK's own files, both intermediate_data shapes, camelCase, errors with JSON paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES
from toolpath.datasets.adk import DEFAULT_CRITERIA, load_criteria, load_eval_set, load_eval_sets
from toolpath.errors import DatasetError


def write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def content(text: str, role: str = "user") -> dict:
    return {"parts": [{"text": text}], "role": role}


def test_adk_migrated_evalset_and_its_legacy_source_agree():
    migrated = load_eval_set(ADK_FIXTURES / "weather.evalset.json")
    legacy = load_eval_set(ADK_FIXTURES / "weather.test.json")
    assert migrated.criteria == legacy.criteria == {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    [m_case], [l_case] = migrated.cases, legacy.cases
    assert m_case.eval_id == "legacy/weather.test.json"
    for new, old in zip(m_case.invocations, l_case.invocations, strict=True):
        assert (new.prompt, new.reference) == (old.prompt, old.reference)
        assert [(c.name, c.args) for c in new.reference_trajectory] == [
            (c.name, c.args) for c in old.reference_trajectory
        ]
    assert m_case.invocations[1].reference_trajectory[0].args == {"city": "Paris"}


def test_folder_loads_every_file():
    sets = load_eval_sets(ADK_FIXTURES)
    assert sorted(s.path.name for s in sets) == ["weather.evalset.json", "weather.test.json"]


def test_camel_case_multi_turn_and_invocation_events(tmp_path):
    path = write(
        tmp_path,
        "home.evalset.json",
        {
            "evalSetId": "home",
            "evalCases": [
                {
                    "evalId": "two-turns",
                    "sessionInput": {"appName": "home", "userId": "u1", "state": {"unit": "C"}},
                    "conversation": [
                        {
                            "invocationId": "t1",
                            "userContent": content("Lights off"),
                            "finalResponse": content("Done.", "model"),
                            "intermediateData": {
                                "toolUses": [{"name": "set_light", "args": {"on": False}, "id": "x"}],
                                "intermediateResponses": [["sub_agent", [{"text": "working"}]]],
                            },
                        },
                        {
                            "userContent": content("And the heating?"),
                            "finalResponse": content("Set to 20.", "model"),
                            "intermediateData": {
                                "invocationEvents": [
                                    {
                                        "author": "home",
                                        "content": {"parts": [{"functionCall": {"name": "get_temp", "args": {}}}]},
                                    },
                                    {
                                        "author": "home",
                                        "content": {
                                            "parts": [{"functionResponse": {"name": "get_temp", "response": {"t": 18}}}]
                                        },
                                    },
                                    {
                                        "author": "home",
                                        "content": {
                                            "parts": [{"functionCall": {"name": "set_temp", "args": {"t": 20}}}]
                                        },
                                    },
                                    {"author": "home", "content": {"parts": [{"text": "thinking aloud"}]}},
                                ]
                            },
                        },
                    ],
                    "unknownButNull": None,
                }
            ],
        },
    )
    [case] = load_eval_set(path).cases
    assert (case.eval_set_id, case.eval_id, case.app_name, case.user_id, case.initial_state) == (
        "home",
        "two-turns",
        "home",
        "u1",
        {"unit": "C"},
    )
    first, second = case.invocations
    assert [(c.name, c.args, c.call_id) for c in first.reference_trajectory] == [("set_light", {"on": False}, "x")]
    assert first.intermediate_responses == [("sub_agent", "working")]
    assert [(c.name, c.args) for c in second.reference_trajectory] == [("get_temp", {}), ("set_temp", {"t": 20})]
    assert second.tool_responses == [{"name": "get_temp", "response": {"t": 18}}]
    assert second.intermediate_responses == [("home", "thinking aloud")]
    assert second.reference == "Set to 20."


def test_absent_args_stay_absent_and_empty_conversations_load(tmp_path):
    """ADK holds a call without ``args`` unequal to one with ``{}``, and leaves a case with no invocations
    NOT_EVALUATED: the loader keeps both as they are."""
    turn = {
        "user_content": content("time?"),
        "intermediate_data": {
            "tool_uses": [{"name": "now"}, {"name": "now", "args": None}, {"name": "now", "args": {}}]
        },
    }
    cases = [{"eval_id": "empty", "conversation": []}, {"eval_id": "calls", "conversation": [turn]}]
    empty, calls = load_eval_set(write(tmp_path, "x.evalset.json", {"eval_set_id": "x", "eval_cases": cases})).cases
    assert empty.invocations == []
    assert [c.args for c in calls.invocations[0].reference_trajectory] == [None, None, {}]
    legacy = write(
        tmp_path, "old.test.json", [{"query": "q", "expected_tool_use": [{"tool_name": "now", "tool_input": None}]}]
    )
    assert load_eval_set(legacy).cases[0].invocations[0].reference_trajectory[0].args is None
    with pytest.raises(DatasetError, match=r"\$\.eval_cases\[0\]\.conversation: missing"):
        load_eval_set(write(tmp_path, "y.evalset.json", {"eval_set_id": "y", "eval_cases": [{"eval_id": "a"}]}))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"eval_set_id": "x", "eval_cases": [', r"bad.evalset.json:1:\d+: not valid JSON"),
        ({"eval_set_id": "x", "eval_cases": {}}, r"\$\.eval_cases: expected an array, got dict"),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversaton": []}]},
            r"\$\.eval_cases\[0\]\.conversaton: unknown field",
        ),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [{"user_content": {"parts": []}}]}]},
            r"\$\.eval_cases\[0\]\.conversation\[0\]\.user_content: no user text",
        ),
        (
            {
                "eval_set_id": "x",
                "eval_cases": [
                    {
                        "eval_id": "a",
                        "conversation": [
                            {"user_content": content("hi"), "intermediate_data": {"tool_uses": [{"args": {}}]}}
                        ],
                    }
                ],
            },
            r"conversation\[0\]\.intermediate_data\.tool_uses\[0\]\.name: expected a string, got null",
        ),
        (
            {
                "eval_set_id": "x",
                "eval_cases": [
                    {
                        "eval_id": "a",
                        "conversation": [
                            {
                                "user_content": content("hi"),
                                "intermediate_data": {"tool_uses": [{"name": "f", "args": [1]}]},
                            }
                        ],
                    }
                ],
            },
            r"tool_uses\[0\]\.args: expected an object, got list",
        ),
    ],
)
def test_bad_files_name_file_and_json_path(tmp_path, data, message):
    path = write(tmp_path, "bad.evalset.json", data)
    with pytest.raises(DatasetError, match=message) as info:
        load_eval_set(path)
    assert str(path) in str(info.value)


def test_legacy_errors(tmp_path):
    path = write(tmp_path, "old.test.json", [{"query": "hi", "expected_tool_use": [{"tool_input": {}}]}])
    with pytest.raises(DatasetError, match=r"old.test.json: .*expected_tool_use\[0\]: has neither"):
        load_eval_set(path)
    path = write(tmp_path, "old2.test.json", [{"qeury": "hi"}])
    with pytest.raises(DatasetError, match=r"\$\[0\]\.qeury: unknown field"):
        load_eval_set(path)


def test_criteria_numbers_and_objects(tmp_path):
    config = write(
        tmp_path,
        "test_config.json",
        {
            "criteria": {
                "tool_trajectory_avg_score": {"threshold": 0.5, "matchType": "IN_ORDER"},
                "response_match_score": 0.7,
            }
        },
    )
    assert load_criteria(config) == {
        "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER"},
        "response_match_score": 0.7,
    }
    write(tmp_path, "x.test.json", [{"query": "hi", "reference": "hello"}])
    assert load_eval_set(tmp_path / "x.test.json").criteria["response_match_score"] == 0.7
    assert load_eval_set(ADK_FIXTURES / "weather.test.json", config=config).criteria == load_criteria(config)


def test_defaults_without_config(tmp_path):
    path = write(tmp_path, "x.test.json", [{"query": "hi"}])
    assert load_eval_set(path).criteria == DEFAULT_CRITERIA


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"criteria": {"response_match_score": "high"}}, r"\$\.criteria\.response_match_score: expected a threshold"),
        (
            {"criteria": {"response_match_score": {"match_type": "EXACT"}}},
            r"response_match_score\.threshold: expected a number",
        ),
        ({"criterion": {}}, r"\$: no 'criteria' object"),
    ],
)
def test_bad_criteria(tmp_path, data, message):
    with pytest.raises(DatasetError, match=message):
        load_criteria(write(tmp_path, "test_config.json", data))
