"""ADK's own evaluator and ``toolpath eval sets/ --agent deviating_agent.agent:root_agent`` on the same real agent
(an ``LlmAgent`` with tools and a sub-agent, driven by a scripted model that deviates from its eval sets in every
way ADK's scoring can tell) and the same eval sets: every per-invocation score and status, every per-case score
and status, and every case's status are ADK's, under EXACT, IN_ORDER and ANY_ORDER trajectory matching; and the
user's message of two parts reaches the agent as two parts, as ADK sends it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_config import get_evaluation_criteria_or_default
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.eval_set import EvalSet

from tests.helpers import adk_deviating
from tests.helpers.adk_eval import adk_eval_run, adk_metric_results, adk_verdict, importable
from tests.helpers.cli import run_cli
from toolpath.metrics.adk_args_rule import none_args_equal_empty
from toolpath.store.store import Store

AGENT = "deviating_agent"
KINDS = list(adk_deviating.CONFIGS)
CASES = list(adk_deviating.DEVIATIONS)
NO_ENV = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": None}
"""What ADK's evaluation runs with: no variable set (its own tool spans carry no arguments)."""


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """A working directory with the agent folder ``deviating_agent/`` and ``sets/{exact,in_order,any_order}/``."""
    folder = tmp_path_factory.mktemp("adk_parity")
    adk_deviating.write_deviation_suite(folder)
    return folder


def evalset_file(suite: Path, kind: str) -> Path:
    return suite / "sets" / kind / "deviations.evalset.json"


@pytest.fixture(scope="module")
def adk(suite) -> dict[str, Any]:
    """ADK's side: per eval set, the ``EvalCaseResult`` of each case from ``LocalEvalService`` inferring and
    evaluating; the text parts the agent's models were sent; and ``AgentEvaluator.evaluate``'s failure lines."""
    adk_deviating.USER_PARTS.clear()
    with importable(suite, AGENT):
        from deviating_agent import agent  # the user's folder, as ADK imports it

        results = {
            kind: adk_eval_run(
                agent.root_agent,
                EvalSet.model_validate_json(evalset_file(suite, kind).read_text()),
                get_evaluation_criteria_or_default(str(evalset_file(suite, kind).parent / "test_config.json")),
            )
            for kind in KINDS
        }
        parts = list(adk_deviating.USER_PARTS)
        failures = {kind: agent_evaluator_failures(evalset_file(suite, kind)) for kind in KINDS}
    return {"results": results, "parts": parts, "failures": failures}


def agent_evaluator_failures(path: Path) -> list[str]:
    """The failure lines of ``AgentEvaluator.evaluate`` on one eval-set file (its ``test_config.json`` beside it)."""
    try:
        asyncio.run(AgentEvaluator.evaluate(AGENT, str(path), print_detailed_results=False))
    except AssertionError as failed:
        return sorted(str(failed).splitlines()[1:])
    return []


@pytest.fixture(scope="module")
def ours(suite) -> dict[str, Any]:
    """toolpath's side: ``toolpath eval sets --agent deviating_agent.agent:root_agent`` with no variable set."""
    adk_deviating.USER_PARTS.clear()
    result = run_cli(suite, "eval", "sets", "--agent", f"{AGENT}.agent:root_agent", "--output", "out.json", env=NO_ENV)
    assert result.returncode == 1, result.stdout + result.stderr  # cases fail: the agent deviates
    cases = json.loads((suite / "out.json").read_text())["eval_cases"]
    by_set = {kind: {c["eval_id"]: c for c in cases if c["eval_set_id"] == f"deviations_{kind}"} for kind in KINDS}
    store = Store(f"sqlite:///{suite / 'toolpath.db'}")
    invocations = {eval_id: store.get_session(by_set["exact"][eval_id]["sessions"][0]).invocations for eval_id in CASES}
    return {"cases": by_set, "invocations": invocations, "parts": list(adk_deviating.USER_PARTS), "out": result.stdout}


def adk_metrics(result: EvalCaseResult) -> dict[str, Any]:
    """Per metric of a case's criteria (ADK's informational efficiency metrics left out): the score, status,
    per-invocation scores and statuses ADK recorded."""
    return adk_metric_results(result, informational=False)


def test_adk_evaluator_and_toolpath_agree_on_a_deviating_agent(adk, ours):
    # -- the deviations are really there (as ADK itself inferred and scored them) ----------------------------
    exact = adk["results"]["exact"]
    assert sorted(exact) == sorted(CASES)
    calls = {
        eval_id: [
            [(c.name, c.args) for c in get_all_tool_calls(i.actual_invocation.intermediate_data)]
            for i in r.eval_metric_result_per_invocation
        ]
        for eval_id, r in exact.items()
    }
    assert calls["wrong_args"] == [[("get_weather", {"city": "Malaga"})]]
    assert calls["swapped_order"] == [[("lookup_order", {"order_id": "B-2"}), ("lookup_order", {"order_id": "A-1"})]]
    assert calls["extra_call"] == [[("get_weather", {"city": c}) for c in ("東京", "大阪", "京都")]]
    assert calls["missing_call"] == [[("get_weather", {"city": "서울"})]]
    [[(_, zero)]] = calls["zero_false"]
    assert zero == {"order_id": "42", "enabled": 0} and type(zero["enabled"]) is int
    assert calls["no_args"] == [[("list_stores", {})]]
    assert calls["multi_turn"] == [
        [("get_customer", None)],
        [("transfer_to_agent", {"agent_name": "billing"}), ("refund", {"order_id": "A-1", "amount": 12.5})],
    ]
    [extra] = exact["extra_call"].eval_metric_result_per_invocation
    first_turn = extra.actual_invocation.intermediate_data.invocation_events[0].content
    assert [p.function_call.name for p in first_turn.parts] == ["get_weather", "get_weather"]  # one model turn
    assert [p.text for p in extra.actual_invocation.final_response.parts] == ["東京・晴れ 24度", "大阪・曇り 24度"]
    trajectory = {
        kind: {e: adk_metrics(r)["tool_trajectory_avg_score"]["score"] for e, r in adk["results"][kind].items()}
        for kind in KINDS
    }
    # no_args: {} against a reference without args, unequal before google-adk 2.15 and equal since
    no_args = 1.0 if none_args_equal_empty() else 0.0
    assert trajectory == {
        "exact": dict(zip(CASES, [0.0, 0.0, 0.0, 0.0, 1.0, no_args, 1.0, 1.0], strict=True)),
        "in_order": dict(zip(CASES, [0.0, 0.0, 1.0, 0.0, 1.0, no_args, 1.0, 1.0], strict=True)),
        "any_order": dict(zip(CASES, [0.0, 1.0, 1.0, 0.0, 1.0, no_args, 1.0, 1.0], strict=True)),
    }
    response = {e: adk_metrics(r)["response_match_score"]["per_invocation"] for e, r in exact.items()}
    assert response["no_reference"] == [0.0] and response["multi_turn"][1] == 0.0  # no reference response
    assert 0.0 < response["swapped_order"][0] < 1.0 and 0.0 < response["extra_call"][0] < 1.0
    statuses = {kind: sorted(r.final_eval_status.name for r in adk["results"][kind].values()) for kind in KINDS}
    passed = int(no_args)  # no_args passes where its call matches (exact's criteria fail it on its answer)
    assert {kind: s.count("PASSED") for kind, s in statuses.items()} == {
        "exact": 1,
        "in_order": 3 + passed,
        "any_order": 5 + passed,
    }

    # -- toolpath gives ADK's numbers and statuses, each -------------------------------------------------------
    for kind in KINDS:
        for eval_id, theirs in adk["results"][kind].items():
            case = ours["cases"][kind][eval_id]
            where = f"{kind}/{eval_id}"
            assert case["status"] == theirs.final_eval_status.name, where
            verdict = adk_verdict([theirs])
            for name, metric in adk_metrics(theirs).items():
                [run] = case["metrics"][name]["runs"]
                assert run == {k: metric[k] for k in run}, f"{where} {name}"
                assert (case["metrics"][name]["score"], case["metrics"][name]["status"]) == verdict[name], where
                assert case["metrics"][name]["per_invocation_status"] == metric["per_invocation_status"], where
            assert sorted(case["metrics"]) == sorted(adk_metrics(theirs)), where
        mine = sorted(
            f"{name} for {AGENT} Failed. Expected {m['threshold']}, but got {m['score']}."
            for case in ours["cases"][kind].values()
            for name, m in case["metrics"].items()
            if m["status"] == "FAILED"
        )
        assert mine == adk["failures"][kind], kind
    adk_passed = sum(s.count("PASSED") for s in statuses.values())  # as ADK judged them
    assert f"24 case(s): {adk_passed} passed, {24 - adk_passed} failed" in ours["out"]
    no_args = ours["out"].split("deviations_exact / no_args")[1]
    shown = "expected tools: list_stores (without args)\n      actual tools:   list_stores()"
    assert (shown in no_args) == (not none_args_equal_empty())  # shown only where the calls differ

    # -- what scoring reads is what ADK's inference produced ----------------------------------------------------
    for eval_id in CASES:
        stored = ours["invocations"][eval_id]
        inferred = [i.actual_invocation for i in exact[eval_id].eval_metric_result_per_invocation]
        assert [[(c.name, c.args) for c in inv.tool_calls] for inv in stored] == calls[eval_id], eval_id
        assert [inv.response for inv in stored] == [
            AgentEvaluator._convert_content_to_text(i.final_response) for i in inferred
        ], eval_id
        assert [inv.prompt for inv in stored] == [
            AgentEvaluator._convert_content_to_text(i.user_content) for i in inferred
        ], eval_id
    [[(_, zero)]] = [[(c.name, c.args) for c in inv.tool_calls] for inv in ours["invocations"]["zero_false"]]
    assert type(zero["enabled"]) is int

    # -- a user's message of two parts is sent as two parts, and shown as ADK shows it ------------------------
    two_parts = list(adk_deviating.GREETING)
    assert ours["parts"].count(two_parts) == adk["parts"].count(two_parts) == len(KINDS) * 2  # two model calls
    assert ["\n".join(two_parts)] not in ours["parts"] + adk["parts"]
    assert ours["invocations"]["multi_turn"][0].prompt == "Hallo, ich bin Zoë.\nWie heiße ich?"
