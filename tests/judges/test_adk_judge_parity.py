"""ADK's Gemini-judged criteria, ADK's numbers: ADK's own evaluators (from its metric registry, as
``LocalEvalService`` gets and calls them) and toolpath's same-named criteria judge the same three invocations
against one fake Gemini server on 127.0.0.1 with scripted verdicts — well-formed, malformed, tied and partial
replies over several samples. Both must send the same request bodies (prompt text, generation config; the same
number of each: the samples) and give the same per-invocation scores and statuses."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation")

from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents
from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.genai import types

from tests.helpers.fake_gemini import Reply, serving_gemini
from toolpath.evaluation.catalog import criterion_metric
from toolpath.evaluation.runner import evaluate
from toolpath.judges.client import JudgeSettings
from toolpath.metrics.rows import turn_row
from toolpath.model import ToolCall

CASES: list[dict[str, Any]] = [
    {
        "prompt": "Set the office to 22 degrees.",
        "response": "I set the office to 22 °C. It was 19 °C before.",
        "reference": "Done: the office is at 22 °C.",
        "intermediate": ["Checking the office first."],
        "calls": [
            ToolCall(name="get_temperature", args={"room": "office"}, result={"celsius": 19}, call_id="c1-1"),
            ToolCall(
                name="set_temperature", args={"room": "office", "celsius": 22}, result={"ok": True}, call_id="c1-2"
            ),
        ],
    },
    {
        "prompt": "Lock the back door.",
        "response": "The back door is locked.",
        "reference": "The back door is locked.",
        "intermediate": [],
        "calls": [ToolCall(name="lock", args={"door": "back"}, error="DeviceError: lock jammed", call_id="c2-1")],
    },
    {
        "prompt": "What's the weather in Paris?",
        "response": "It is sunny in Paris, 25 °C. Paris is the capital of Italy.",
        "reference": "Sunny, 25 °C.",
        "intermediate": [],
        "calls": [ToolCall(name="get_weather", args={"city": "Paris"}, result="sunny, 25 °C", call_id="c3-1")],
    },
]

RUBRICS = [
    {"rubric_id": "concise", "rubric_content": {"text_property": "The answer is one or two sentences."}},
    {"rubric_id": "units", "rubric_content": {"text_property": "Temperatures carry units."}},
]
TOOL_RUBRICS = [
    {"rubric_id": "looks", "rubric_content": {"text_property": "The agent calls a tool before answering."}},
    {"rubric_id": "uses", "rubric_content": {"text_property": "The answer uses the tool's result."}},
]
CRITERIA: dict[str, dict[str, Any]] = {
    "final_response_match_v2": {"threshold": 1.0},
    "rubric_based_final_response_quality_v1": {"threshold": 0.7, "rubrics": RUBRICS},
    "rubric_based_tool_use_quality_v1": {
        "threshold": 1.0,
        "rubrics": TOOL_RUBRICS,
        "judge_model_options": {"num_samples": 3},
    },
    "hallucinations_v1": {"threshold": 0.8, "evaluate_intermediate_nl_responses": True},
}

# --- the scripted judge: replies by invocation (found by its prompt) and sample ---------------------------

VALID = '{{"reasoning": "checked", "is_the_agent_response_valid": {label}}}'
MATCH = {  # c1: 3 valid ("true" too) vs 1 (["invalid"]), one malformed; c2: a 2-2 tie (invalid); c3: none readable
    0: [VALID.format(label='"valid"'), VALID.format(label='"true"'), VALID.format(label='["invalid"]'), "Valid, I think.",
        VALID.format(label='"valid"')],
    1: [VALID.format(label='"valid"'), VALID.format(label='"invalid"'), "no idea", VALID.format(label='"valid"'),
        VALID.format(label='"invalid"')],
    2: ["The agent is right.", "```\nvalid\n```", "", "nothing", '{"verdict": "valid"}'],
}  # fmt: skip


def verdicts(*pairs: tuple[str | None, str, str]) -> str:
    """ADK's rubric reply: per rubric an ``ID:`` line (none when ``None``), ``Property:``, ``Rationale:`` and
    ``Verdict:``."""
    blocks = []
    for rubric_id, text, verdict in pairs:
        lines = ([f"ID: {rubric_id}"] if rubric_id else []) + [
            f"Property: {text}",
            "Rationale: as seen.",
            f"Verdict: {verdict}",
        ]
        blocks.append("\n".join(lines))
    return "STEP 1 done.\n\n" + "\n\n".join(blocks)


C, U = ("concise", "The answer is one or two sentences."), ("units", "Temperatures carry units.")
L, S = ("looks", "The agent calls a tool before answering."), ("uses", "The answer uses the tool's result.")
QUALITY = {  # 5 samples each
    0: [verdicts((*C, "yes"), (*U, "yes")), verdicts((*C, "yes"), (*U, "no")), verdicts((*C, "yes")),  # partial
        "I cannot rate this.", verdicts((*C, "no"), (*U, "no"))],
    1: [verdicts((*C, "yes"), (*U, "yes")), verdicts((*C, "yes"), (*U, "no")), verdicts((*C, "yes"), (*U, "yes")),
        verdicts((*C, "yes"), (*U, "no")), "garbage"],  # units tied 2-2: no
    2: [verdicts((None, "**The answer is one or two sentences.**", "yes"), (None, "Temperatures carry units", "yes"))] * 5,
}  # fmt: skip
TOOL_USE = {  # 3 samples each
    0: [verdicts((*L, "yes"), (*S, "yes")), verdicts((*L, "yes"), (*S, "no")), verdicts((*L, "yes"), (*S, "yes"))],
    1: [verdicts((*L, "yes"), (*S, "no")), verdicts((*L, "yes"), (*S, "no")), "Verdict: maybe"],
    2: [verdicts((*L, "yes"))] * 3,  # "uses" never judged: ADK scores the rubrics it read
}  # fmt: skip
SENTENCES = {
    "Checking the office first.": [("Checking the office first.", "not_applicable")],
    CASES[0]["response"]: [("I set the office to 22 °C.", "supported"), ("It was 19 °C before.", "unsupported")],
    CASES[1]["response"]: [("The back door is locked.", "supported")],
    CASES[2]["response"]: [("It is sunny in Paris, 25 °C.", "supported"), ("Paris is the capital of Italy.", "contradictory")],
}  # fmt: skip
LABELS = dict(pair for pairs in SENTENCES.values() for pair in pairs)


def case_of(prompt: str) -> int:
    return next(i for i, case in reversed(list(enumerate(CASES))) if case["response"] in prompt)


def script(prompt: str, seen: int) -> Reply:
    if "is_the_agent_response_valid" in prompt:
        return Reply(MATCH[case_of(prompt)][seen % 5])
    if "final answer quality" in prompt:
        return Reply(QUALITY[case_of(prompt)][seen % 5])
    if "<rubric>" in prompt or "Property:" in prompt:
        return Reply(TOOL_USE[[c["prompt"] in prompt for c in CASES].index(True)][seen % 3])
    if "**Context Begin**" in prompt:  # the sentence validator
        found = re.findall(r"<sentence>(.*?)</sentence>", prompt.rsplit("**Sentences Begin**", 1)[1])
        if "The back door is locked." in found:
            return Reply("sentence: The back door is locked.\nverdict: fine")  # unreadable
        blocks = [
            f"sentence: {s}\nlabel: {LABELS[s]}\nrationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null"
            for s in found
        ]
        return Reply("\n\n".join(blocks))
    text = next(t for t in sorted(SENTENCES, key=len, reverse=True) if t in prompt)  # the segmenter
    return Reply("".join(f"<sentence>{s}</sentence>" for s, _ in SENTENCES[text]))


# --- the two sides -----------------------------------------------------------------------------------------


def adk_invocations() -> tuple[list[Invocation], list[Invocation]]:
    """The invocations as ADK's inference records them: invocation events (the intermediate text, then each
    call's ``function_call`` and ``function_response``), and the expected ones with the reference."""
    actual, expected = [], []
    for case in CASES:
        events = [
            InvocationEvent(author="agent", content=types.Content(role="model", parts=[types.Part(text=t)]))
            for t in case["intermediate"]
        ]
        for call in case["calls"]:
            fc = types.FunctionCall(id=call.call_id, name=call.name, args=call.args)
            events.append(
                InvocationEvent(
                    author="agent", content=types.Content(role="model", parts=[types.Part(function_call=fc)])
                )
            )
            body = (
                {"error": call.error}
                if call.error
                else call.result
                if isinstance(call.result, dict)
                else {"result": call.result}
            )
            fr = types.FunctionResponse(id=call.call_id, name=call.name, response=body)
            events.append(
                InvocationEvent(
                    author="agent", content=types.Content(role="user", parts=[types.Part(function_response=fr)])
                )
            )
        user = types.Content(role="user", parts=[types.Part(text=case["prompt"])])
        actual.append(
            Invocation(
                user_content=user,
                final_response=types.Content(role="model", parts=[types.Part(text=case["response"])]),
                intermediate_data=InvocationEvents(invocation_events=events),
            )
        )
        expected.append(
            Invocation(
                user_content=user,
                final_response=types.Content(role="model", parts=[types.Part(text=case["reference"])]),
            )
        )
    return actual, expected


def adk_results(name: str) -> list[tuple[float | None, str]]:
    """ADK's per-invocation (score, status) of criterion ``name``, its evaluator got and called as
    ``LocalEvalService._evaluate_metric`` does."""
    (metric,) = get_eval_metrics_from_config(EvalConfig.model_validate({"criteria": {name: CRITERIA[name]}}))[:1]
    evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(eval_metric=metric)
    actual, expected = adk_invocations()
    result = asyncio.run(evaluator.evaluate_invocations(actual_invocations=actual, expected_invocations=expected))
    return [(r.score, r.eval_status.name) for r in result.per_invocation_results]


def toolpath_results(name: str) -> list[tuple[float | None, str]]:
    """toolpath's per-invocation (score, status) of criterion ``name``: the criterion as an eval set's
    ``test_config.json`` gives it, over the rows every source of invocations builds (:func:`turn_row`)."""
    options = {k: v for k, v in CRITERIA[name].items() if k != "threshold"}
    rows = [
        {
            **turn_row(
                prompt=case["prompt"],
                response=case["response"],
                tool_calls=case["calls"],
                latency_in_seconds=1.0,
                failure=0,
                intermediate_responses=[("agent", t) for t in case["intermediate"]],
            ),
            "reference": case["reference"],
        }
        for case in CASES
    ]
    table = evaluate(
        rows, [criterion_metric(name, options)], judge=JudgeSettings(backoff=0.01, timeout=10)
    ).metrics_table
    threshold = CRITERIA[name]["threshold"]
    out = []
    for row in table:
        score = row[f"{name}/score"]
        assert row[f"{name}/judge"] == "adk", row[f"{name}/explanation"]
        out.append((score, "NOT_EVALUATED" if score is None else "PASSED" if score >= threshold else "FAILED"))
    return out


def canonical(bodies: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True, ensure_ascii=False) for body in bodies)


@pytest.fixture
def fake(monkeypatch):
    with serving_gemini(monkeypatch, script) as server:
        yield server


EXPECTED = {  # what ADK gives, written out so that a change in either side shows here too
    "final_response_match_v2": [(1.0, "PASSED"), (0.0, "FAILED"), (None, "NOT_EVALUATED")],
    "rubric_based_final_response_quality_v1": [(0.5, "FAILED"), (0.5, "FAILED"), (1.0, "PASSED")],
    "rubric_based_tool_use_quality_v1": [(1.0, "PASSED"), (0.5, "FAILED"), (1.0, "PASSED")],
    "hallucinations_v1": [(0.75, "FAILED"), (None, "NOT_EVALUATED"), (0.5, "FAILED")],
}


@pytest.mark.parametrize("name", list(CRITERIA))
def test_same_requests_same_scores_as_adk(fake, name):
    adk = adk_results(name)
    adk_bodies = list(fake.bodies)
    fake.bodies.clear()
    ours = toolpath_results(name)
    our_bodies = list(fake.bodies)

    assert ours == adk
    if name.startswith("rubric_based_"):
        # the third case's judge leaves a rubric without a verdict: google-adk 2.14 and later do not score such a
        # sample (NOT_EVALUATED), earlier releases average the rubrics it answered; toolpath gives what ADK gives
        assert adk[:2] == EXPECTED[name][:2]
        assert adk[2] in (EXPECTED[name][2], (None, "NOT_EVALUATED"))
    else:
        assert adk == EXPECTED[name]
    assert adk_bodies and canonical(our_bodies) == canonical(adk_bodies)  # prompts, configs, samples of each
    samples = CRITERIA[name].get("judge_model_options", {}).get("num_samples", 5)
    if name != "hallucinations_v1":  # ADK's hallucinations_v1 asks once per text, whatever num_samples says
        assert len(our_bodies) == samples * len(CASES)
    for body in our_bodies:
        assert "responseMimeType" not in json.dumps(body)


def test_tool_results_and_errors_reach_adks_prompts(fake):
    toolpath_results("rubric_based_tool_use_quality_v1")
    toolpath_results("hallucinations_v1")
    prompts = fake.prompts
    tool_use = [p for p in prompts if '"door": "back"' in p and "Property:" in p]
    assert tool_use and all("lock jammed" in p for p in tool_use)
    validator = [p for p in prompts if "**Context Begin**" in p and "<sentence>It was 19 °C before." in p]
    assert validator and all('"celsius": 19' in p for p in validator)
    assert any('"result": "sunny, 25 °C"' in p for p in prompts)
