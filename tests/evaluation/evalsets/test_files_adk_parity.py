"""toolpath's ADK file models and loaders against ADK 2.x's own: the same fields, and the same verdict on a table
of eval-set files (ADK's ``load_eval_set_from_file`` for ``adk eval``, ``AgentEvaluator`` for ``*.test.json``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ADK_FIXTURES
from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets import adk_models as adk_schema
from toolpath.evaluation.evalsets.files import load_eval_set

pytest.importorskip("google.adk.evaluation.eval_set")

from google.adk.agents.common_configs import CodeConfig
from google.adk.evaluation import (
    app_details,
    conversation_scenarios,
    eval_case,
    eval_config,
    eval_metrics,
    eval_result,
    eval_rubrics,
    eval_set,
)
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

ADK_MODELS: dict[str, Any] = {
    "RubricContent": eval_rubrics.RubricContent,
    "Rubric": eval_rubrics.Rubric,
    "RubricScore": eval_rubrics.RubricScore,
    "AgentDetails": app_details.AgentDetails,
    "AppDetails": app_details.AppDetails,
    "IntermediateData": eval_case.IntermediateData,
    "InvocationEvent": eval_case.InvocationEvent,
    "InvocationEvents": eval_case.InvocationEvents,
    "Invocation": eval_case.Invocation,
    "SessionInput": eval_case.SessionInput,
    "ConversationScenario": conversation_scenarios.ConversationScenario,
    "EvalCase": eval_case.EvalCase,
    "EvalSet": eval_set.EvalSet,
    "JudgeModelOptions": eval_metrics.JudgeModelOptions,
    "BaseCriterion": eval_metrics.BaseCriterion,
    "LlmAsAJudgeCriterion": eval_metrics.LlmAsAJudgeCriterion,
    "RubricsBasedCriterion": eval_metrics.RubricsBasedCriterion,
    "HallucinationsCriterion": eval_metrics.HallucinationsCriterion,
    "ToolTrajectoryCriterion": eval_metrics.ToolTrajectoryCriterion,
    "LlmBackedUserSimulatorCriterion": eval_metrics.LlmBackedUserSimulatorCriterion,
    "CodeConfig": CodeConfig,
    "Interval": eval_metrics.Interval,
    "MetricValueInfo": eval_metrics.MetricValueInfo,
    "MetricInfo": eval_metrics.MetricInfo,
    "CustomMetricConfig": eval_config.CustomMetricConfig,
    "LiveModelConfig": eval_config.LiveModelConfig,
    "EvalConfig": eval_config.EvalConfig,
    "TokenUsageDetails": eval_metrics.TokenUsageDetails,
    "DurationDetails": eval_metrics.DurationDetails,
    "EvalMetric": eval_metrics.EvalMetric,
    "EvalMetricResultDetails": eval_metrics.EvalMetricResultDetails,
    "EvalMetricResult": eval_metrics.EvalMetricResult,
    "EvalMetricResultPerInvocation": eval_metrics.EvalMetricResultPerInvocation,
    "EvalCaseResult": eval_result.EvalCaseResult,
    "EvalSetResult": eval_result.EvalSetResult,
}


def _shape(model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = {name: (f.alias, f.is_required(), repr(f.default)) for name, f in model.model_fields.items()}
    config = {key: model.model_config.get(key) for key in ("extra", "populate_by_name")}
    config["camel"] = model.model_config.get("alias_generator") is not None
    return fields, config


NEWER_FIELDS = {
    "EvalConfig": {"multi_run_config", "parallelism"},
    "EvalCaseResult": {"repetition_index"},
    "EvalSetResult": {"multi_run_case_summaries"},
}
"""Fields google-adk 2.14 and 2.15 added: the mirror has them whichever ADK is installed."""


@pytest.mark.parametrize("name", sorted(ADK_MODELS))
def test_mirror_has_adks_fields_aliases_defaults_and_extra_policy(name):
    (mirror, mirror_config), (theirs, their_config) = _shape(getattr(adk_schema, name)), _shape(ADK_MODELS[name])
    assert mirror_config == their_config
    assert {field: mirror[field] for field in theirs if field in mirror} == theirs  # every field of the installed ADK
    assert set(mirror) - set(theirs) <= NEWER_FIELDS.get(name, set())  # and those an older one lacks


def test_enums_and_metric_names_are_adks():
    assert {m.name: m.value for m in adk_schema.MatchType} == {
        m.name: m.value for m in eval_metrics.ToolTrajectoryCriterion.MatchType
    }
    assert {m.name: m.value for m in adk_schema.EvalStatus} == {m.name: m.value for m in eval_metrics.EvalStatus}
    prebuilt = {m.value for m in eval_metrics.PrebuiltMetrics}
    assert set(adk_schema.ADK_CRITERIA) | set(adk_schema.EFFICIENCY_METRICS) == prebuilt - set(adk_schema.ADK_UNSCORED)
    assert set(adk_schema.EFFICIENCY_METRICS) == set(eval_config._DEFAULT_EFFICIENCY_METRICS)


def test_each_criterion_is_read_with_the_model_adks_evaluator_reads_it_with():
    from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
    from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator
    from google.adk.evaluation.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
    from google.adk.evaluation.rubric_based_multi_turn_trajectory_evaluator import (
        RubricBasedMultiTurnTrajectoryEvaluator,
    )
    from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
    from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    evaluators = {
        "tool_trajectory_avg_score": TrajectoryEvaluator,
        "final_response_match_v2": FinalResponseMatchV2Evaluator,
        "hallucinations_v1": HallucinationsV1Evaluator,
        "rubric_based_tool_use_quality_v1": RubricBasedToolUseV1Evaluator,
        "per_turn_user_simulator_quality_v1": PerTurnUserSimulatorQualityV1,
        "rubric_based_multi_turn_trajectory_quality_v1": RubricBasedMultiTurnTrajectoryEvaluator,
    }
    for name, evaluator in evaluators.items():
        assert adk_schema.ADK_CRITERIA[name].__name__ == evaluator.criterion_type.__name__, name
    # this one takes its criterion type as an argument of the shared rubric evaluator
    assert adk_schema.ADK_CRITERIA["rubric_based_final_response_quality_v1"].__name__ == "RubricsBasedCriterion"
    assert RubricBasedFinalResponseQualityV1Evaluator.criterion_type.__name__ == "RubricsBasedCriterion"


# --- a table of files: ADK's verdict and toolpath's -----------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}], "role": "user"}


def evalset(*cases: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"eval_set_id": "s", "eval_cases": list(cases), **top}


def case(*turns: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"eval_id": "a", "conversation": list(turns), **fields}


TURN = {"user_content": user("hi"), "final_response": {"parts": [{"text": "hello"}], "role": "model"}}
LEGACY_TURN = {"query": "hi", "expected_tool_use": [], "reference": "hello"}
SCENARIO = {"starting_prompt": "hi", "conversation_plan": "ask for the weather"}

# (name, file name, content, ADK accepts, toolpath accepts — different only where toolpath documents why)
FILES: list[tuple[str, str, Any, bool, bool]] = [
    ("minimal", "x.evalset.json", evalset(case(TURN)), True, True),
    (
        "camelCase below the top",
        "x.evalset.json",
        evalset(
            {
                "evalId": "a",
                "sessionInput": {"appName": "app", "userId": "u"},
                "conversation": [
                    {
                        "invocationId": "t1",
                        "userContent": user("hi"),
                        "intermediateData": {"toolUses": [{"name": "f", "args": {"x": 1}}]},
                    }
                ],
            }
        ),
        True,
        True,
    ),
    ("top level in camelCase", "x.evalset.json", {"evalSetId": "s", "evalCases": [case(TURN)]}, False, False),
    ("unknown top-level field", "x.evalset.json", evalset(case(TURN), version=2), True, True),
    (
        "session_input.session_id and an extra session field",
        "x.evalset.json",
        evalset(case(TURN, session_input={"app_name": "a", "user_id": "u", "session_id": "s1", "locale": "fr"})),
        True,
        True,
    ),
    (
        "session_input without user_id",
        "x.evalset.json",
        evalset(case(TURN, session_input={"app_name": "a"})),
        False,
        False,
    ),
    ("extra field on a case", "x.evalset.json", evalset(case(TURN, tags=["smoke"])), True, True),
    ("extra field on an invocation", "x.evalset.json", evalset(case({**TURN, "notes": "x"})), False, False),
    ("empty conversation", "x.evalset.json", evalset(case()), True, True),
    (
        "a scenario instead of a conversation",
        "x.evalset.json",
        evalset({"eval_id": "a", "conversation_scenario": SCENARIO}),
        True,
        True,
    ),
    ("conversation and scenario", "x.evalset.json", evalset(case(TURN, conversation_scenario=SCENARIO)), False, False),
    ("neither conversation nor scenario", "x.evalset.json", evalset({"eval_id": "a"}), False, False),
    ("eval_id a number", "x.evalset.json", evalset({"eval_id": 3, "conversation": [TURN]}), False, False),
    ("user content without parts", "x.evalset.json", evalset(case({"user_content": {}})), True, True),
    ("no user content", "x.evalset.json", evalset(case({"final_response": user("x")})), False, False),
    (
        "unknown key in a part",
        "x.evalset.json",
        evalset(case({"user_content": {"parts": [{"text": "hi", "bold": True}]}})),
        False,
        False,
    ),
    (
        "tool use without a name",
        "x.evalset.json",
        evalset(case({**TURN, "intermediate_data": {"tool_uses": [{"args": {}}]}})),
        True,
        True,
    ),
    (
        "tool arguments an array",
        "x.evalset.json",
        evalset(case({**TURN, "intermediate_data": {"tool_uses": [{"name": "f", "args": [1]}]}})),
        False,
        False,
    ),
    (
        "tool_uses and invocation_events together",
        "x.evalset.json",
        evalset(case({**TURN, "intermediate_data": {"tool_uses": [], "invocation_events": []}})),
        False,
        False,
    ),
    (
        "invocation events with the web editor's indices",
        "x.evalset.json",
        evalset(
            case(
                {
                    **TURN,
                    "intermediate_data": {
                        "invocation_events": [
                            {
                                "author": "bot",
                                "invocationIndex": 0,
                                "content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]},
                            }
                        ]
                    },
                }
            )
        ),
        True,
        True,
    ),
    (
        "invocation event without an author",
        "x.evalset.json",
        evalset(case({**TURN, "intermediate_data": {"invocation_events": [{"content": user("x")}]}})),
        False,
        False,
    ),
    (
        "intermediate responses as [author, parts]",
        "x.evalset.json",
        evalset(case({**TURN, "intermediate_data": {"intermediate_responses": [["sub", [{"text": "working"}]]]}})),
        True,
        True,
    ),
    (
        "intermediate response without parts",
        "x.evalset.json",
        evalset(case({**TURN, "intermediate_data": {"intermediate_responses": [["sub"]]}})),
        False,
        False,
    ),
    ("a timestamp as text", "x.evalset.json", evalset(case(TURN), creation_timestamp="12.5"), True, True),
    ("a timestamp as a word", "x.evalset.json", evalset(case(TURN), creation_timestamp="noon"), False, False),
    (
        "ADK's older name/data format",
        "x.evalset.json",
        [{"name": "a", "data": [LEGACY_TURN], "initial_session": {"app_name": "app", "user_id": "u", "state": {}}}],
        True,
        True,
    ),
    ("a list of turns in an .evalset.json", "x.evalset.json", [LEGACY_TURN], False, False),
    (
        "legacy turns",
        "x.test.json",
        [LEGACY_TURN, {"query": "more", "expected_tool_use": [], "reference": "ok"}],
        True,
        True,
    ),
    ("legacy turn with an extra key", "x.test.json", [{**LEGACY_TURN, "note": "ignored"}], True, True),
    ("legacy turns without expected_tool_use", "x.test.json", [{"query": "hi", "reference": "hello"}], False, False),
    ("legacy turn without a query", "x.test.json", [{"expected_tool_use": [], "reference": "hello"}], False, False),
    ("legacy query a number", "x.test.json", [{**LEGACY_TURN, "query": 5}], False, False),
    ("no legacy turns", "x.test.json", [], False, False),
    ("an EvalSet in a .test.json", "x.test.json", evalset(case(TURN)), True, True),
    ("an invalid EvalSet in a .test.json", "x.test.json", evalset({"eval_id": "a"}), False, False),
    (
        "legacy tool calls as {name, args}: docs/spec.md §1 lets every loader read both trajectory forms",
        "x.test.json",
        [{**LEGACY_TURN, "expected_tool_use": [{"name": "f", "args": {}}]}],
        False,
        True,
    ),
]


def adk_accepts(path: Path) -> bool:
    """ADK's verdict: ``adk eval``'s loader, or for a ``*.test.json`` the ``AgentEvaluator`` with the config
    beside the file (ADK's defaults here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if path.name.endswith(".test.json"):
                config = AgentEvaluator.find_config_for_test_file(str(path))
                AgentEvaluator._load_eval_set_from_file(str(path), config, {})
            else:
                load_eval_set_from_file(str(path), "s")
        except Exception:
            return False
    return True


def toolpath_accepts(path: Path) -> bool:
    try:
        load_eval_set(path)
    except DatasetError as exc:
        assert str(path) in str(exc)
        return False
    return True


@pytest.mark.parametrize(("name", "file_name", "content", "adk", "ours"), FILES, ids=[f[0] for f in FILES])
def test_accepts_what_adk_accepts(tmp_path, name, file_name, content, adk, ours):
    path = tmp_path / file_name
    path.write_text(json.dumps(content))
    assert adk_accepts(path) is adk, "ADK's verdict changed: update the table"
    assert toolpath_accepts(path) is ours


@pytest.mark.parametrize("fixture", ["weather.evalset.json", "weather.test.json"])
def test_adks_own_files(fixture):
    assert adk_accepts(ADK_FIXTURES / fixture) and toolpath_accepts(ADK_FIXTURES / fixture)


def test_what_both_read_agrees(tmp_path):
    """Where both accept, toolpath reads what ADK reads: the same cases, prompts, responses and tool calls."""
    for name, file_name, content, adk, ours in FILES:
        if not (adk and ours) or file_name.endswith(".test.json"):
            continue
        path = tmp_path / file_name
        path.write_text(json.dumps(content))
        theirs = load_eval_set_from_file(str(path), "s")
        mine = load_eval_set(path)
        assert [c.eval_id for c in theirs.eval_cases] == [c.eval_id for c in mine.cases], name
        for their_case, my_case in zip(theirs.eval_cases, mine.cases, strict=True):
            their_turns = their_case.conversation or []
            assert len(their_turns) == len(my_case.invocations), name
            for theirs_turn, my_turn in zip(their_turns, my_case.invocations, strict=True):
                text = "\n".join(p.text for p in theirs_turn.user_content.parts or [] if p.text)
                assert my_turn.prompt == text, name
                calls = eval_case.get_all_tool_calls(theirs_turn.intermediate_data)
                assert [(c.name or "", c.args or {}) for c in calls] == [
                    (c.name, c.args) for c in my_turn.reference_trajectory
                ], name
            session = their_case.session_input
            assert my_case.session_id == (session.session_id if session else None), name
