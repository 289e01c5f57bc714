"""Issue 31's acceptance test: a multi-agent ADK app (a transfer to a billing sub-agent, an ``AgentTool``, a Sequential
+ Parallel workflow, parallel calls in one response, a tool error the agent handles and one that raises, nested
non-ASCII arguments, e-mail addresses and tokens in arguments and answers) judged by ADK's own evaluation and by
``toolpath eval SET --agent shop_agent.agent:root_agent`` with no settings, on the same eval sets (every match type,
both config forms, multi-turn cases, a case that crashes in turn 1 of 2): every case status, criterion score,
per-invocation score and efficiency figure is ADK's, also over ``--runs 2``; the store holds none of the e-mail
addresses or tokens in clear; every stored call names the agent ADK says made it."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation.local_eval_service")

from google.adk.evaluation.eval_config import get_evaluation_criteria_or_default
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.eval_set import EvalSet

from tests.helpers import adk_release
from tests.helpers.adk_eval import adk_eval_run, adk_metric_results, adk_verdict, importable
from tests.helpers.cli import run_cli
from toolpath.store.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

AGENT = "shop_agent"
KINDS = list(adk_release.CONFIGS)
CASES = list(adk_release.CASES)
FIGURES = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")
"""ADK's efficiency figures that do not depend on the clock (``invocation_duration_v1`` does)."""
NO_ENV = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": None}


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("release")
    adk_release.write_release_suite(folder)
    return folder


def evalset_file(suite: Path, kind: str) -> Path:
    return suite / "sets" / kind / "release.evalset.json"


def adk_run(suite: Path, kind: str) -> dict[str, EvalCaseResult]:
    path = evalset_file(suite, kind)
    with importable(suite, AGENT):
        from shop_agent import agent  # the user's folder, as ADK imports it

        return adk_eval_run(
            agent.root_agent,
            EvalSet.model_validate_json(path.read_text()),
            get_evaluation_criteria_or_default(str(path.parent / "test_config.json")),
        )


@pytest.fixture(scope="module")
def adk(suite) -> dict[str, dict[str, EvalCaseResult]]:
    """ADK's side: per eval set, each case's ``EvalCaseResult`` from ``LocalEvalService`` inferring and evaluating."""
    return {kind: adk_run(suite, kind) for kind in KINDS}


@pytest.fixture(scope="module")
def ours(suite) -> dict[str, Any]:
    """toolpath's side: ``toolpath eval sets --agent shop_agent.agent:root_agent``, no settings."""
    result = run_cli(suite, "eval", "sets", "--agent", f"{AGENT}.agent:root_agent", "--output", "out.json", env=NO_ENV)
    assert result.returncode == 1, result.stdout + result.stderr  # some cases fail
    cases = json.loads((suite / "out.json").read_text())["eval_cases"]
    by_set = {kind: {c["eval_id"]: c for c in cases if c["eval_set_id"] == f"release_{kind}"} for kind in KINDS}
    return {"cases": by_set, "store": suite / "toolpath.db", "out": result.stdout}


def metric_results(result: EvalCaseResult) -> dict[str, Any]:
    """Per metric ADK scored on a case (criteria and efficiency figures): score, status, per-invocation scores
    and statuses."""
    return adk_metric_results(result)


def calls_by_agent(result: EvalCaseResult) -> list[list[tuple[str, str]]]:
    """Per invocation ADK inferred, each tool call it counts and the author of the event that made it."""
    turns = []
    for per_invocation in result.eval_metric_result_per_invocation:
        events = per_invocation.actual_invocation.intermediate_data.invocation_events
        turns.append(
            [
                (part.function_call.name, event.author)
                for event in events
                for part in (event.content.parts if event.content else None) or []
                if part.function_call
            ]
        )
    return turns


def test_the_app_does_what_the_cases_say(adk):
    """ADK's own inference of the app: the sub-agents, the workflow and the parallel calls are really there."""
    floats = adk["floats"]
    assert calls_by_agent(floats["refund"]) == [[("transfer_to_agent", "coordinator"), ("refund", "billing_agent")]]
    assert calls_by_agent(floats["fulfil"]) == [
        [("transfer_to_agent", "coordinator"), ("get_stock", "stock_agent"), ("get_price", "price_agent")]
    ]
    assert calls_by_agent(floats["where"]) == [[("order_lookup", "coordinator")]]
    [stock] = floats["stock_swapped"].eval_metric_result_per_invocation
    first = stock.actual_invocation.intermediate_data.invocation_events[0].content
    assert [p.function_call.args for p in first.parts] == [{"sku": "茶-01"}, {"sku": "café-02"}]  # one response
    [missing] = floats["handled_error"].eval_metric_result_per_invocation
    responses = [
        p.function_response.response
        for p in missing.actual_invocation.intermediate_data.invocation_events[1].content.parts
    ]
    assert responses == [{"error": "'unknown sku X-404'"}]
    crashed = floats["crash_then_hello"]
    assert crashed.final_eval_status.name == "FAILED" and crashed.overall_eval_metric_results == []
    statuses = {kind: {e: r.final_eval_status.name for e, r in adk[kind].items()} for kind in KINDS}
    for kind in KINDS:  # each set passes some cases and fails others
        assert {"PASSED", "FAILED"} <= set(statuses[kind].values()), kind
    assert statuses["floats"]["order"] == statuses["floats"]["sign_in"] == "PASSED"
    assert statuses["floats"]["order_other_email"] == statuses["floats"]["sign_in_other_token"] == "FAILED"


def test_every_verdict_is_adks(adk, ours):
    for kind in KINDS:
        assert sorted(ours["cases"][kind]) == sorted(adk[kind]) == sorted(CASES), kind
        for eval_id, theirs in adk[kind].items():
            case = ours["cases"][kind][eval_id]
            where = f"{kind}/{eval_id}"
            assert case["status"] == theirs.final_eval_status.name, where
            metrics = metric_results(theirs)
            criteria = {name: m for name, m in metrics.items() if m["status"] != "INFORMATIONAL"}
            if not metrics:  # a failed inference: no metric results at all
                assert all(m["score"] is None for m in case["metrics"].values()), where
                assert all(case["efficiency"][name] is None for name in FIGURES), where
                continue
            assert sorted(case["metrics"]) == sorted(criteria), where
            verdict = adk_verdict([theirs])
            for name, metric in criteria.items():
                [run] = case["metrics"][name]["runs"]
                assert run == {k: metric[k] for k in run}, f"{where} {name}"
                assert (case["metrics"][name]["score"], case["metrics"][name]["status"]) == verdict[name], where
                assert case["metrics"][name]["per_invocation"] == metric["per_invocation"], f"{where} {name}"
                assert case["metrics"][name]["per_invocation_status"] == metric["per_invocation_status"], where
            for name in FIGURES:
                assert case["efficiency"][name] == metrics[name]["score"], f"{where} {name}"
                per_turn = [turn[name] for turn in case["efficiency"]["per_invocation"]]
                assert per_turn == metrics[name]["per_invocation"], f"{where} {name}"


def scan_store(path: Path) -> list[tuple[str, str]]:
    """Every cell of every row of every table of the SQLite store, as text, with its table's name. A stored eval
    result's metric explanations are left out: :func:`kept_explanations` has them."""
    cells: list[tuple[str, str]] = []
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            names = [column[1] for column in db.execute(f'PRAGMA table_info("{table}")')]
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for name, cell in zip(names, row, strict=True):
                    if isinstance(cell, bytes):
                        cell = cell.decode("utf-8", "replace")
                    if table == "eval_results" and name == "row":
                        kept = json.loads(cell)
                        for metric in kept["metrics"].values():
                            metric.pop("explanation")
                        cell = json.dumps(kept, ensure_ascii=False)
                    if cell is not None:
                        cells.append((table, str(cell)))
    return cells


def kept_explanations(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = [json.loads(row) for (row,) in db.execute("SELECT row FROM eval_results")]
    return [m["explanation"] or "" for row in rows for m in row["metrics"].values()]


def test_the_store_holds_no_secret_in_clear(ours):
    cells = scan_store(ours["store"])
    assert {"spans", "invocations", "tool_calls", "eval_results"} <= {table for table, _ in cells}
    found = {(table, secret) for secret in adk_release.SECRETS for table, cell in cells if secret in cell}
    assert found == set()
    assert "[REDACTED]" in json.dumps([cell for table, cell in cells if table == "eval_results"])


def test_a_kept_explanation_quotes_no_secret(ours):
    explanations = kept_explanations(ours["store"])
    assert any("authenticate token" in e for e in explanations)
    assert {secret for secret in adk_release.SECRETS for e in explanations if secret in e} == set()


def test_every_stored_call_names_the_agent_adk_says_made_it(adk, ours):
    store = Store(f"sqlite:///{ours['store']}")
    for kind in KINDS:
        for eval_id, theirs in adk[kind].items():
            if not theirs.eval_metric_result_per_invocation:
                continue
            [session] = ours["cases"][kind][eval_id]["sessions"]
            stored = store.get_session(session).invocations
            assert [[(c.name, c.agent_name) for c in i.tool_calls] for i in stored] == calls_by_agent(theirs), (
                f"{kind}/{eval_id}"
            )
    sessions = {e: store.get_session(c["sessions"][0]).invocations for e, c in ours["cases"]["floats"].items()}
    [refund] = sessions["refund"]
    assert [(c.name, c.agent_name) for c in refund.tool_calls if c.name != "transfer_to_agent"] == [
        ("refund", "billing_agent")
    ]
    assert refund.answered_by == "billing_agent"
    [fulfil] = sessions["fulfil"]
    assert fulfil.answered_by == "summary_agent"
    [crash] = sessions["crash_then_hello"]  # the turn that raised is stored, its call with its (redacted) arguments
    [charge] = crash.tool_calls
    assert (charge.name, charge.agent_name, charge.args) == (
        "charge",
        "coordinator",
        {"order": 7, "card": {"holder": "Zoë", "email": "[REDACTED]"}},
    )


def test_runs_2_aggregate_as_adks_agent_evaluator(suite, adk):
    kind = "any_order"
    second = adk_run(suite, kind)
    result = run_cli(
        suite,
        "eval",
        f"sets/{kind}",
        "--agent",
        f"{AGENT}.agent:root_agent",
        "--runs",
        "2",
        "--output",
        "runs.json",
        env=NO_ENV,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    cases = {c["eval_id"]: c for c in json.loads((suite / "runs.json").read_text())["eval_cases"]}
    for eval_id, first in adk[kind].items():
        runs = [first, second[eval_id]]
        case = cases[eval_id]
        verdict = adk_verdict(runs)
        crashed = any(r.final_eval_status.name == "FAILED" and not r.overall_eval_metric_results for r in runs)
        failed = crashed or any(status == "FAILED" for _, status in verdict.values())
        assert case["status"] == ("FAILED" if failed else "PASSED"), eval_id
        for name, (score, status) in verdict.items():
            if name in FIGURES or name == "invocation_duration_v1":
                if name in FIGURES:
                    assert case["efficiency"][name] == score, f"{eval_id} {name}"
                continue
            assert (case["metrics"][name]["score"], case["metrics"][name]["status"]) == (score, status), eval_id
            assert [r["score"] for r in case["metrics"][name]["runs"]] == [
                metric_results(r)[name]["score"] for r in runs
            ], eval_id
