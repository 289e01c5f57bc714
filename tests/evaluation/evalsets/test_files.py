"""ADK eval sets: ADK's own files, both intermediate_data shapes, camelCase, errors with JSON paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ADK_FIXTURES
from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets.files import (
    DEFAULT_CRITERIA,
    load_criteria,
    load_eval_set,
    load_eval_sets,
    split_selector,
)


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
            "eval_set_id": "home",  # the top level is snake_case only (ADK's EvalSet has no aliases)
            "eval_cases": [
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
        tmp_path,
        "old.test.json",
        [{"query": "q", "reference": "r", "expected_tool_use": [{"tool_name": "now", "tool_input": None}]}],
    )
    assert load_eval_set(legacy).cases[0].invocations[0].reference_trajectory[0].args is None
    with pytest.raises(
        DatasetError, match=r"\$\.eval_cases\[0\]: Exactly one of conversation and conversation_scenario"
    ):
        load_eval_set(write(tmp_path, "y.evalset.json", {"eval_set_id": "y", "eval_cases": [{"eval_id": "a"}]}))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"eval_set_id": "x", "eval_cases": [', r"bad.evalset.json:1:\d+: not valid JSON"),
        ({"eval_set_id": "x", "eval_cases": {}}, r"\$\.eval_cases: expected an array, got an object"),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversaton": []}]},
            r"\$\.eval_cases\[0\]: Exactly one of conversation and conversation_scenario .*\(the case also has: "
            r"conversaton\)",
        ),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [{"userContnet": {"parts": []}}]}]},
            r"\$\.eval_cases\[0\]\.conversation\[0\]\.userContnet: unknown field \(expected one of: .*user_content",
        ),
        (
            {
                "eval_set_id": "x",
                "eval_cases": [
                    {
                        "eval_id": "a",
                        "conversation": [
                            {"user_content": content("hi"), "intermediate_data": {"tool_uses": [{"name": 3}]}}
                        ],
                    }
                ],
            },
            r"conversation\[0\]\.intermediate_data\.tool_uses\[0\]\.name: expected a string, got a number",
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
            r"tool_uses\[0\]\.args: expected an object, got an array",
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
    with pytest.raises(DatasetError, match=r"\$\[0\]\.query: missing"):
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
    write(tmp_path, "x.test.json", [{"query": "hi", "expected_tool_use": [], "reference": "hello"}])
    assert load_eval_set(tmp_path / "x.test.json").criteria["response_match_score"] == 0.7
    assert load_eval_set(ADK_FIXTURES / "weather.test.json", config=config).criteria == load_criteria(config)


def test_defaults_without_config(tmp_path):
    path = write(tmp_path, "x.test.json", [{"query": "hi", "expected_tool_use": [], "reference": "hello"}])
    assert load_eval_set(path).criteria == DEFAULT_CRITERIA


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"criteria": {"response_match_score": "high"}}, r"\$\.criteria\.response_match_score: expected a number"),
        (
            {"criteria": {"response_match_score": {"match_type": "EXACT"}}},
            r"response_match_score\.threshold: missing",
        ),
        ({"criterion": {}}, r"\$\.criterion: unknown field \(expected one of: criteria, custom_metrics"),
        ({"criteria": {}}, r"\$: no criteria"),
    ],
)
def test_bad_criteria(tmp_path, data, message):
    with pytest.raises(DatasetError, match=message):
        load_criteria(write(tmp_path, "test_config.json", data))


# --- case selection: ADK's file.evalset.json:case_a,case_b ---------------------------------------------------


@pytest.fixture
def three_cases(tmp_path) -> Path:
    turn = {"user_content": content("hi")}
    cases = [{"eval_id": name, "conversation": [turn]} for name in ("a", "b", "c")]
    return write(tmp_path, "three.evalset.json", {"eval_set_id": "three", "eval_cases": cases})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("x.evalset.json", ("x.evalset.json", None)),
        ("x.evalset.json:a,b", ("x.evalset.json", ["a", "b"])),
        ("x.evalset.json:", ("x.evalset.json", None)),
        ("x.evalset.json:a,,b, ", ("x.evalset.json", ["a", "b"])),
        ("x.evalset.json:a:ignored", ("x.evalset.json", ["a"])),
        ("C:\\evals\\x.evalset.json:a", ("C:\\evals\\x.evalset.json", ["a"])),
    ],
)
def test_selector_is_read_as_adk_eval_reads_it(spec, expected):
    assert split_selector(spec) == expected
    pytest.importorskip("google.adk.cli.cli_eval")
    from google.adk.cli.cli_eval import parse_and_get_evals_to_run

    [(file, ids)] = parse_and_get_evals_to_run([spec]).items()
    assert (file, ids or None) == expected


def test_selector_keeps_the_named_cases_in_file_order(three_cases):
    [eval_set] = load_eval_sets(f"{three_cases}:c,a")
    assert [case.eval_id for case in eval_set.cases] == ["a", "c"]
    assert [case.eval_id for case in load_eval_sets(f"{three_cases}:")[0].cases] == ["a", "b", "c"]


def test_selector_naming_unknown_cases_is_an_error(three_cases):
    with pytest.raises(DatasetError) as info:
        load_eval_sets(f"{three_cases}:a,zz,yy")
    assert str(info.value) == f"{three_cases}: no eval case 'zz', 'yy' (the file has: 'a', 'b', 'c')"


def test_selector_on_a_folder_is_an_error(three_cases):
    with pytest.raises(DatasetError, match="picks cases of one eval-set file, not a folder"):
        load_eval_sets(f"{three_cases.parent}:a")


# --- folders: every *.test.json as ADK's AgentEvaluator finds them, each with its own folder's config -------


def test_folders_are_scanned_as_adks_agent_evaluator_scans_them(tmp_path):
    legacy = [{"query": "hi", "expected_tool_use": [], "reference": "hello"}]
    write(tmp_path, "top.test.json", legacy)
    (tmp_path / "nested" / "deeper").mkdir(parents=True)
    write(tmp_path / "nested", "mid.test.json", legacy)
    write(tmp_path / "nested", "test_config.json", {"criteria": {"response_match_score": 0.5}})
    turn = {"user_content": content("hi"), "final_response": content("hello", "model")}
    new_schema = {"eval_set_id": "deep", "eval_cases": [{"eval_id": "d", "conversation": [turn]}]}
    write(tmp_path / "nested" / "deeper", "deep.test.json", new_schema)
    write(tmp_path / "nested" / "deeper", "notes.json", {"not": "an eval set"})
    sets = {s.path: s for s in load_eval_sets(tmp_path)}
    pytest.importorskip("google.adk.evaluation.agent_evaluator")
    import os

    from google.adk.evaluation.agent_evaluator import AgentEvaluator

    found = [Path(root) / f for root, _, files in os.walk(tmp_path) for f in files if f.endswith(".test.json")]
    assert set(sets) == set(found)
    for path in found:  # each judged by the config ADK would find for it
        assert sets[path].criteria == {
            name: c.threshold if hasattr(c, "threshold") else c
            for name, c in AgentEvaluator.find_config_for_test_file(str(path)).criteria.items()
        }
    assert sets[tmp_path / "nested" / "deeper" / "deep.test.json"].cases[0].eval_id == "d"


def test_legacy_files_take_any_criterion_where_adks_agent_evaluator_allows_four(tmp_path):
    path = write(tmp_path, "x.test.json", [{"query": "hi", "expected_tool_use": [], "reference": "hello"}])
    write(tmp_path, "test_config.json", {"criteria": {"final_response_match_v2": 0.5}})
    assert load_eval_set(path).criteria == {"final_response_match_v2": 0.5}
    pytest.importorskip("google.adk.evaluation.agent_evaluator")
    from google.adk.evaluation.agent_evaluator import AgentEvaluator

    config = AgentEvaluator.find_config_for_test_file(str(path))
    with pytest.raises(ValueError, match="Invalid criteria key: final_response_match_v2"):
        AgentEvaluator._load_eval_set_from_file(str(path), config, {})


def test_legacy_intermediate_responses_keep_their_author(tmp_path):
    turn = {
        "query": "hi",
        "expected_tool_use": [{"tool_name": "f", "tool_input": None}],
        "expected_intermediate_agent_responses": [{"author": "planner", "text": "thinking"}],
        "reference": "hello",
    }
    [case] = load_eval_set(write(tmp_path, "x.test.json", [turn])).cases
    [invocation] = case.invocations
    assert invocation.intermediate_responses == [("planner", "thinking")]
    assert [(c.name, c.args) for c in invocation.reference_trajectory] == [
        ("f", None)
    ]  # null stays null: ADK holds it unequal to {}


def test_the_loaders_stand_without_google_adk(tmp_path):
    """google-adk is optional: eval sets, configs and ADK's recorded results load with it made unimportable."""
    history = tmp_path / "app" / ".adk" / "eval_history"
    history.mkdir(parents=True)
    turn = {"user_content": content("hi"), "final_response": content("hello", "model")}
    (history / "app_s_1.evalset_result.json").write_text(
        json.dumps(
            {
                "eval_set_result_id": "app_s_1",
                "eval_set_id": "s",
                "eval_case_results": [
                    {
                        "eval_id": "a",
                        "final_eval_status": 1,
                        "overall_eval_metric_results": [],
                        "eval_metric_result_per_invocation": [{"actual_invocation": turn, "expected_invocation": turn}],
                        "session_id": "s1",
                    }
                ],
            }
        )
    )
    code = f"""
import sys
sys.modules["google.adk"] = None  # any import of google.adk now fails
from toolpath.evaluation.evalsets.files import load_eval_sets
from toolpath.evaluation.evalsets.result_files import load_results
from toolpath.evaluation.evalsets.history import score_recorded
[s] = load_eval_sets({str(ADK_FIXTURES / "weather.evalset.json")!r})
[case] = load_results({str(history)!r})
print(len(s.cases), score_recorded([case]).cases[0].status, "google.adk" in sys.modules and sys.modules["google.adk"])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[3])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "PASSED", "None"]


def test_a_user_message_of_several_parts_is_kept_as_it_is(tmp_path):
    """ADK sends an invocation's ``user_content`` to the agent as it is: the loader keeps a message that is more
    than its text as one part (the prompt, as ADK shows it, is the parts' text joined by newlines)."""
    two = {"role": "user", "parts": [{"text": "Refund A-1."}, {"text": "Amount: 12.50"}]}
    turns = [{"user_content": two}, {"user_content": content("one part")}]
    data = {"eval_set_id": "x", "eval_cases": [{"eval_id": "c", "conversation": turns}]}
    [case] = load_eval_set(write(tmp_path, "x.evalset.json", data)).cases
    assert [(i.prompt, i.user_content) for i in case.invocations] == [
        ("Refund A-1.\nAmount: 12.50", two),
        ("one part", None),
    ]
