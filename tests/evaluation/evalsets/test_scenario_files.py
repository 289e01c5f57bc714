"""Conversation scenarios and ``user_simulator_config`` load exactly as google-adk 2.x loads them."""

from __future__ import annotations

import json

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from pydantic import ValidationError

from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets.files import load_eval_set

SCENARIO = {"startingPrompt": "I need a flight.", "conversationPlan": "From Paris to Rome, next Tuesday."}
SIMULATORS = [
    None,
    {},
    {"model": "gemini-2.0-flash", "maxAllowedInvocations": 4},
    {"type": "llm_backed", "model_configuration": {"temperature": 0.3}, "include_function_calls": True},
    {
        "max_allowed_invocations": -1,
        "custom_instructions": "{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }}",
    },
    {"type": "llm_backed", "some_future_key": 1},
]


def write(folder, case: dict, simulator: dict | None):
    (folder / "s.evalset.json").write_text(json.dumps({"eval_set_id": "s", "eval_cases": [case]}))
    config: dict = {"criteria": {"safety_v1": 0.8}}
    if simulator is not None:
        config["userSimulatorConfig"] = simulator
    (folder / "test_config.json").write_text(json.dumps(config))
    return folder / "s.evalset.json", folder / "test_config.json"


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_a_scenario_case_and_its_simulator_config_read_as_adk_reads_them(tmp_path, simulator):
    evalset, config = write(tmp_path, {"eval_id": "c", "conversation_scenario": SCENARIO}, simulator)
    ours = load_eval_set(evalset)
    adk_case = AdkEvalSet.model_validate_json(evalset.read_text()).eval_cases[0]
    adk_config = AdkEvalConfig.model_validate_json(config.read_text()).user_simulator_config
    [case] = ours.cases
    assert case.conversation_scenario == {
        "starting_prompt": adk_case.conversation_scenario.starting_prompt,
        "conversation_plan": adk_case.conversation_scenario.conversation_plan,
        "user_persona": None,
    }
    assert case.invocations == [] and adk_case.conversation is None
    if simulator is None:
        assert ours.user_simulator is None and adk_config is None
        return
    assert ours.user_simulator.model_dump(mode="json") == adk_config.model_dump(mode="json")


@pytest.mark.parametrize(
    ("case", "simulator", "message"),
    [
        (
            {"eval_id": "c", "conversation": [], "conversation_scenario": SCENARIO},
            None,
            "Exactly one of conversation and conversation_scenario",
        ),
        ({"eval_id": "c", "conversation_scenario": {"starting_prompt": "hi"}}, None, "conversation_plan"),
        (
            {"eval_id": "c", "conversation_scenario": SCENARIO},
            {"custom_instructions": "{{ conversation_plan }}"},
            "custom_instructions",
        ),
        (
            {"eval_id": "c", "conversation_scenario": SCENARIO},
            {"max_allowed_invocations": "many"},
            "max_allowed_invocations",
        ),
        (
            {"eval_id": "c", "conversation_scenario": SCENARIO},
            {"type": "scripted"},
            "userSimulatorConfig: Input tag 'scripted'",
        ),
    ],
)
def test_what_adk_rejects_is_one_error(tmp_path, case, simulator, message):
    evalset, config = write(tmp_path, case, simulator)
    with pytest.raises(ValidationError):
        AdkEvalSet.model_validate_json(evalset.read_text())
        AdkEvalConfig.model_validate_json(config.read_text())
    with pytest.raises(DatasetError, match=message) as raised:
        load_eval_set(evalset)
    assert str(raised.value).startswith(str(tmp_path))
