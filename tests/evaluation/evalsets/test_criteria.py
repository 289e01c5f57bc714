"""``test_config.json`` criteria: what ADK 2.x accepts and evaluates, what it rejects, and where toolpath is
stricter (a typo must not leave every case NOT_EVALUATED and the run green)."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from toolpath.errors import ConfigError, DatasetError, MetricError
from toolpath.evaluation.evalsets import adk_models as adk_schema
from toolpath.evaluation.evalsets.criteria import resolve_criteria
from toolpath.evaluation.evalsets.files import load_config
from toolpath.metrics.trajectory_match import MatchType, tool_trajectory_avg_score
from toolpath.model import ToolCall

DEFAULTS = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


def trajectory(**options: Any) -> dict[str, Any]:
    return {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, **options}}}


# (name, config, ADK evaluates it, toolpath accepts it — different only where toolpath documents why)
CONFIGS: list[tuple[str, dict[str, Any], bool, bool]] = [
    ("ADK's defaults", {"criteria": DEFAULTS}, True, True),
    ("match_type in-order", trajectory(match_type="in-order"), True, True),
    ("match_type In Order", trajectory(match_type="In Order"), True, True),
    ("match_type 1", trajectory(match_type=1), True, True),
    ("matchType ANY_ORDER", trajectory(matchType="ANY_ORDER"), True, True),
    ("match_type ' exact '", trajectory(match_type=" exact "), True, True),
    ("match_type sideways", trajectory(match_type="sideways"), False, False),
    ("match_type 3", trajectory(match_type=3), False, False),
    ("match_type '1'", trajectory(match_type="1"), False, False),
    ("ignore_args as 'yes'", trajectory(ignore_args="yes"), True, True),
    ("ignore_args as 'maybe'", trajectory(ignore_args="maybe"), False, False),
    ("threshold as text", {"criteria": {"response_match_score": "0.8"}}, True, True),
    ("threshold null", {"criteria": {"response_match_score": None}}, False, False),
    ("object without threshold", {"criteria": {"response_match_score": {}}}, False, False),
    (
        "camelCase options",
        {"criteria": {"hallucinations_v1": {"threshold": 0.5, "evaluateIntermediateNlResponses": True}}},
        True,
        True,
    ),
    (
        "judge options",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 3}}}},
        True,
        True,
    ),
    (
        "judge num_samples 0",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 0}}}},
        False,
        False,
    ),
    (
        "judge option misspelt",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_sample": 3}}}},
        False,
        False,
    ),
    (
        "rubrics",
        {
            "criteria": {
                "rubric_based_tool_use_quality_v1": {
                    "threshold": 0.5,
                    "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "calls the weather tool"}}],
                }
            }
        },
        True,
        True,
    ),
    (
        "rubric without content",
        {"criteria": {"rubric_based_tool_use_quality_v1": {"threshold": 0.5, "rubrics": [{"rubric_id": "r1"}]}}},
        False,
        False,
    ),
    ("an efficiency metric with a threshold", {"criteria": {"token_usage_v1": 100}}, False, False),
    ("criterion name misspelt: ADK evaluates nothing", {"criteria": {"tool_trajectory_avg_scor": 1.0}}, False, False),
    ("a key misspelt: ADK silently ignores it", trajectory(ignore_arg=True), True, False),
    ("toolpath's own criterion: ADK has no such metric", {"criteria": {"trajectory_precision": 0.5}}, False, True),
    ("toolpath's match option on ADK's criterion (ADK ignores it)", trajectory(match="name"), True, True),
    ("toolpath's match option misspelt", trajectory(match="names"), True, False),
    ("no criteria: ADK evaluates nothing", {"criteria": {}}, True, False),
    ("criteria misspelt: ADK ignores the key and evaluates nothing", {"criterion": DEFAULTS}, True, False),
    ("ADK's criterion toolpath does not compute", {"criteria": {"response_evaluation_score": 0.5}}, True, False),
    (
        "include_intermediate_responses_in_final, not yet in toolpath's judge",
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "include_intermediate_responses_in_final": True}}},
        True,
        False,
    ),
    (
        "a code_config with an unknown key",
        {"criteria": DEFAULTS, "custom_metrics": {"x": {"code_config": {"name": "m.f", "path": "m.py"}}}},
        False,
        False,
    ),
    ("live model config", {"criteria": DEFAULTS, "liveModelConfig": {"timeoutSeconds": 60}}, True, True),
    # google-adk 2.14 runs each case numRuns times (earlier releases ignore the key); toolpath does not apply it
    (
        "a multi-run config, not applied by toolpath",
        {"criteria": DEFAULTS, "multiRunConfig": {"numRuns": 3}},
        True,
        False,
    ),
    ("a multi-run config null, as ADK writes it unset", {"criteria": DEFAULTS, "multiRunConfig": None}, True, True),
    ("parallelism (google-adk 2.15; earlier releases ignore it)", {"criteria": DEFAULTS, "parallelism": 2}, True, True),
]


def adk_evaluates(path: Path) -> bool:
    """ADK's verdict: its ``EvalConfig`` reads the file, and each criterion gets an evaluator: a metric ADK has
    (not an efficiency metric, which refuses a threshold) whose criterion model reads the options."""
    pytest.importorskip("google.adk.evaluation.eval_config")
    from google.adk.evaluation import eval_metrics
    from google.adk.evaluation.eval_config import EvalConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            config = EvalConfig.model_validate_json(path.read_text())
        except Exception:
            return False
    if not config.criteria:
        return True  # valid: ADK runs, and evaluates nothing
    for name, criterion in config.criteria.items():
        if name not in adk_schema.ADK_CRITERIA:
            return False
        model = getattr(eval_metrics, adk_schema.ADK_CRITERIA[name].__name__)
        base = (
            criterion
            if isinstance(criterion, eval_metrics.BaseCriterion)
            else eval_metrics.BaseCriterion(threshold=criterion)
        )
        try:
            model.model_validate(base.model_dump())
        except Exception:
            return False
    return True


def toolpath_accepts(path: Path) -> bool:
    try:
        config = load_config(path)
        resolve_criteria(config.criteria, config.custom_metrics, source=path)
    except (DatasetError, ConfigError) as exc:
        assert str(path) in str(exc)
        return False
    return True


@pytest.mark.parametrize(("name", "config", "adk", "ours"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_configs_adk_accepts_and_rejects(tmp_path, name, config, adk, ours):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(config))
    assert adk_evaluates(path) is adk, "ADK's verdict changed: update the table"
    assert toolpath_accepts(path) is ours


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [("in-order", "IN_ORDER"), ("In Order", "IN_ORDER"), (2, "ANY_ORDER"), ("exact", "EXACT")],
)
def test_match_type_spellings_reach_the_metric(tmp_path, spelling, canonical):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(trajectory(match_type=spelling, ignoreArgs="true")))
    criteria = load_config(path).criteria
    assert criteria == {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": canonical, "ignore_args": True}}
    [criterion] = resolve_criteria(criteria).values()
    assert (criterion.metric.match_type, criterion.metric.ignore_args) == (canonical, True)


def test_unknown_criterion_lists_the_known_ones(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"tool_trajectory_avg_scor": 1.0}}))
    with pytest.raises(ConfigError) as info:
        resolve_criteria(load_config(path).criteria, source=path)
    message = str(info.value)
    assert message.startswith(f"{path}: criterion 'tool_trajectory_avg_scor': unknown criterion")
    assert "(did you mean 'tool_trajectory_avg_score'?)" in message
    known = message.split("known criteria: ")[1].split(", ")
    assert {"tool_trajectory_avg_score", "response_match_score", "final_response_match_v2", "bleu"} <= set(known)
    assert known == sorted(known)


def test_newer_adk_config_parts_toolpath_does_not_apply_are_refused_by_name(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": DEFAULTS, "multiRunConfig": {"numRuns": 3}}))
    with pytest.raises(DatasetError, match=r"test_config.json: \$\.multiRunConfig: google-adk's multi-run config"):
        load_config(path)
    path.write_text(json.dumps({"criteria": {"tool_parameter_match": {"threshold": 0.5, "match_type": "EXACT"}}}))
    with pytest.raises(ConfigError) as info:
        resolve_criteria(load_config(path).criteria, source=path)
    assert str(info.value) == (
        f"{path}: criterion 'tool_parameter_match': google-adk 2.15's criterion, which toolpath does not compute yet"
    )


def test_unknown_key_lists_the_keys_the_criterion_takes(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(trajectory(ignore_arg=True)))
    with pytest.raises(ConfigError) as info:
        resolve_criteria(load_config(path).criteria, source=path)
    assert str(info.value) == (
        f"{path}: criterion 'tool_trajectory_avg_score': unknown key 'ignore_arg'; it takes: threshold, ignore_args, "
        "include_intermediate_responses_in_final, match, match_type"
    )
    with pytest.raises(ConfigError, match=r"unknown key 'tool'; it takes: threshold, tool_name"):
        resolve_criteria({"trajectory_single_tool_use": {"threshold": 1, "tool": "x"}})


def test_a_custom_metric_takes_any_key_and_is_named_in_the_known_list(tmp_path, monkeypatch):
    pytest.importorskip("google.adk.evaluation.eval_metrics")
    (tmp_path / "criteria_metrics.py").write_text(
        "def always(eval_metric, actual, expected, scenario):\n    return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "criteria_metrics", raising=False)
    [criterion] = resolve_criteria(
        {"my_metric": {"threshold": 0.5, "strictness": "high"}}, {"my_metric": "criteria_metrics.always"}
    ).values()
    assert (criterion.custom_function_path, dict(criterion.options)) == (
        "criteria_metrics.always",
        {"strictness": "high"},
    )
    with pytest.raises(ConfigError, match=r"cannot import custom metric function 'criteria_metrics.nothing'"):
        resolve_criteria({"my_metric": 0.5}, {"my_metric": "criteria_metrics.nothing"})


def test_criteria_given_in_python_read_as_a_config_file_reads_them():
    [criterion] = resolve_criteria({"tool_trajectory_avg_score": {"threshold": "1", "matchType": "in-order"}}).values()
    assert (criterion.threshold, criterion.metric.match_type) == (1.0, "IN_ORDER")
    with pytest.raises(
        DatasetError,
        match=r"criteria: \$.criteria.tool_trajectory_avg_score.match_type: expected EXACT, IN_ORDER or ANY_ORDER .*; got 'sideways'",
    ):
        resolve_criteria({"tool_trajectory_avg_score": {"threshold": 1, "match_type": "sideways"}})


def test_match_types_are_adks_and_read_back_from_adks_own_files(tmp_path):
    """ADK's ``MatchType`` members, by name, as toolpath's; a criterion ADK itself wrote (its numbers) reaches the
    metric as the member of the same name, is written out again as the name, and ADK reads that back as its own."""
    pytest.importorskip("google.adk.evaluation.eval_metrics")
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_metrics import ToolTrajectoryCriterion

    theirs = list(ToolTrajectoryCriterion.MatchType)
    assert [m.value for m in MatchType] == [m.name for m in theirs]
    assert [(m.name, m.value) for m in adk_schema.MatchType] == [(m.name, m.value) for m in theirs]
    for member in theirs:
        written = EvalConfig(
            criteria={"tool_trajectory_avg_score": ToolTrajectoryCriterion(threshold=1.0, match_type=member)}
        )
        path = tmp_path / "test_config.json"
        path.write_text(written.model_dump_json(by_alias=True))  # ADK's file: "matchType": 0, 1 or 2
        criteria = load_config(path).criteria
        ours = criteria["tool_trajectory_avg_score"]["match_type"]
        assert type(ours) is MatchType and ours == member.name
        assert f'"match_type": "{member.name}"' in json.dumps(criteria)  # the text results and the store hold
        [criterion] = resolve_criteria(criteria).values()
        assert criterion.metric.match_type is ours
        read_back = ToolTrajectoryCriterion.model_validate({"threshold": 1.0, "match_type": str(ours)})
        assert read_back.match_type is member
    calls = [ToolCall(name="a", args={}), ToolCall(name="b", args={})]
    result = tool_trajectory_avg_score([calls[::-1]], [calls], match_type="any_order")
    assert (result.score, result.explanation) == (1.0, "all 1 invocation(s) match (ANY_ORDER)")
    with pytest.raises(MetricError, match=r"^match_type must be one of EXACT, IN_ORDER, ANY_ORDER, got 'sideways'$"):
        tool_trajectory_avg_score([calls], [calls], match_type="sideways")
