"""ADK's Gemini-judged criteria on a real ADK agent: ADK's own ``LocalEvalService`` (inference and evaluation) and
toolpath's ``evaluate_eval_sets`` run the same agent — instructions, two tools, a scripted model, an intermediate
text between calls — on the same eval set (rubrics on the case and on an invocation), judged by one fake Gemini
server on 127.0.0.1. Both must send the same request bodies (so ADK's prompts see the same instructions, tool
declarations and event order) and give the same per-invocation scores and statuses; and so must
``--from-results`` scoring (:func:`score_recorded`) of the results ADK recorded of its run."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk.evaluation")

from google.adk.agents import LlmAgent
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager

from tests.helpers.adk_agent import ScriptedModel, StreamingAdkApp, answer, call, calls
from tests.helpers.adk_eval import adk_eval_run
from tests.helpers.fake_gemini import Reply, serving_gemini
from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_sets
from toolpath.evaluation.evalsets.history import score_recorded
from toolpath.evaluation.evalsets.result_files import load_results

SET = "Set the office to 22 degrees."
ASK = "How warm is the kitchen?"
SET_ANSWER = "I set the office to 22 °C. It was 19 °C before."
ASK_ANSWER = "The kitchen is at 21 °C. Paris is the capital of Italy."
INTERMEDIATE = "Checking the office first."


def get_temperature(room: str) -> dict[str, Any]:
    """Read a room's temperature in °C."""
    return {"room": room, "celsius": 19 if room == "office" else 21}


def set_temperature(room: str, celsius: int) -> dict[str, Any]:
    """Set a room's thermostat."""
    return {"room": room, "celsius": celsius, "ok": True}


def build_agent() -> LlmAgent:
    return LlmAgent(
        name="thermostat",
        description="Reads and sets room temperatures.",
        instruction="You run the thermostats. Always read a room before changing it.",
        model=ScriptedModel(
            turns={
                SET: [
                    calls(call("get_temperature", room="office")),
                    calls(INTERMEDIATE, call("set_temperature", room="office", celsius=22)),
                    answer(SET_ANSWER),
                ],
                ASK: [calls(call("get_temperature", room="kitchen")), answer(ASK_ANSWER)],
            }
        ),
        tools=[get_temperature, set_temperature],
    )


def rubric(rubric_id: str, text: str, kind: str | None = None) -> dict[str, Any]:
    return {"rubric_id": rubric_id, "rubric_content": {"text_property": text}, **({"type": kind} if kind else {})}


CRITERION_RUBRICS = [rubric("concise", "The answer is one or two sentences.")]
TOOL_RUBRICS = [rubric("reads", "The agent reads the room before answering.")]
CASE_RUBRICS = [rubric("units", "Temperatures carry units.", "FINAL_RESPONSE_QUALITY")]
INVOCATION_RUBRICS = [
    rubric("before", "The answer says the temperature before the change.", "FINAL_RESPONSE_QUALITY"),
    rubric("order", "The agent sets the temperature only after reading it.", "TOOL_USE_QUALITY"),
]
ALL_RUBRICS = CRITERION_RUBRICS + TOOL_RUBRICS + CASE_RUBRICS + INVOCATION_RUBRICS
CRITERIA: dict[str, dict[str, Any]] = {
    "final_response_match_v2": {"threshold": 1.0, "judge_model_options": {"num_samples": 3}},
    "rubric_based_final_response_quality_v1": {"threshold": 0.7, "rubrics": CRITERION_RUBRICS},
    "rubric_based_tool_use_quality_v1": {"threshold": 1.0, "rubrics": TOOL_RUBRICS},
    "hallucinations_v1": {"threshold": 0.8, "evaluate_intermediate_nl_responses": True},
}


def turn(prompt: str, response: str, calls_: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": calls_, "tool_responses": [], "intermediate_responses": []},
        **extra,
    }


def eval_set() -> dict[str, Any]:
    return {
        "eval_set_id": "thermo",
        "eval_cases": [
            {
                "eval_id": "set",
                "conversation": [
                    turn(
                        SET,
                        "Done: the office is at 22 °C.",
                        [
                            {"name": "get_temperature", "args": {"room": "office"}},
                            {"name": "set_temperature", "args": {"room": "office", "celsius": 22}},
                        ],
                        rubrics=INVOCATION_RUBRICS,
                    )
                ],
            },
            {
                "eval_id": "ask",
                "rubrics": CASE_RUBRICS,
                "conversation": [
                    turn(ASK, "It is 21 °C in the kitchen.", [{"name": "get_temperature", "args": {"room": "kitchen"}}])
                ],
            },
        ],
    }


# --- the scripted judge: its replies depend on the prompt only --------------------------------------------

SENTENCES = {
    INTERMEDIATE: [(INTERMEDIATE, "not_applicable")],
    SET_ANSWER: [("I set the office to 22 °C.", "supported"), ("It was 19 °C before.", "supported")],
    ASK_ANSWER: [("The kitchen is at 21 °C.", "supported"), ("Paris is the capital of Italy.", "contradictory")],
}
LABELS = dict(pair for pairs in SENTENCES.values() for pair in pairs)
NOT_MET = {"before", "concise"}


def script(prompt: str, seen: int) -> Reply:
    if "is_the_agent_response_valid" in prompt:
        label = "valid" if SET_ANSWER in prompt else "invalid"
        return Reply(json.dumps({"reasoning": "checked", "is_the_agent_response_valid": label}))
    if "**Context Begin**" in prompt:  # the sentence validator
        found = re.findall(r"<sentence>(.*?)</sentence>", prompt.rsplit("**Sentences Begin**", 1)[1])
        return Reply(
            "\n\n".join(
                f"sentence: {s}\nlabel: {LABELS.get(s, 'unsupported')}\nrationale: r\n"
                "supporting_excerpt: null\ncontradicting_excerpt: null"
                for s in found
            )
        )
    shown = [r for r in ALL_RUBRICS if r["rubric_content"]["text_property"] in prompt]
    if shown:  # a rubric judge: a verdict per rubric it shows
        blocks = [
            f"ID: {r['rubric_id']}\nProperty: {r['rubric_content']['text_property']}\nRationale: as seen.\n"
            f"Verdict: {'no' if r['rubric_id'] in NOT_MET else 'yes'}"
            for r in shown
        ]
        return Reply("STEP 1 done.\n\n" + "\n\n".join(blocks))
    text = next((t for t in sorted(SENTENCES, key=len, reverse=True) if t in prompt), None)  # the segmenter
    return Reply("".join(f"<sentence>{s}</sentence>" for s, _ in SENTENCES.get(text or "", [])))


@pytest.fixture
def fake(monkeypatch):
    with serving_gemini(monkeypatch, script) as server:
        yield server


CALL_ID = re.compile(r"adk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def canonical(bodies: list[dict[str, Any]], *, ids: bool = True) -> Counter[str]:
    """The bodies as comparable text; without ``ids``, ADK's call ids (random in each run of the agent) as one."""
    texts = (json.dumps(body, sort_keys=True, ensure_ascii=False) for body in bodies)
    return Counter(text if ids else CALL_ID.sub("adk-<id>", text) for text in texts)


def judged(bodies: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The request bodies of one criterion's judge (told apart by their prompts)."""

    def prompt(body: dict[str, Any]) -> str:
        return "".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))

    def kind(text: str) -> str:
        if "is_the_agent_response_valid" in text:
            return "final_response_match_v2"
        if "final answer quality" in text:
            return "rubric_based_final_response_quality_v1"
        if "<sentence>" in text or "**Context Begin**" in text or "sentence" in text.lower():
            return "hallucinations_v1"
        return "rubric_based_tool_use_quality_v1"

    return [b for b in bodies if kind(prompt(b)) == name]


def adk_side(tmp_path: Path) -> tuple[dict[str, list[tuple[float | None, str]]], list[dict[str, Any]], Any]:
    results = adk_eval_run(
        build_agent(), AdkEvalSet.model_validate(eval_set()), EvalConfig.model_validate({"criteria": CRITERIA})
    )
    scores: dict[str, list[tuple[float | None, str]]] = {name: [] for name in CRITERIA}
    for eval_id in ("set", "ask"):
        for per in results[eval_id].eval_metric_result_per_invocation:
            for m in per.eval_metric_results:
                if m.metric_name in CRITERIA:
                    scores[m.metric_name].append((m.score, m.eval_status.name))
    return scores, [results["set"], results["ask"]], results


def toolpath_scores(result: Any) -> dict[str, list[tuple[float | None, str]]]:
    by_id = {case.eval_id: case for case in result.cases}
    return {
        name: [
            (score, status)
            for eval_id in ("set", "ask")
            for score, status in zip(
                by_id[eval_id].metrics[name].run_per_invocation[0],
                by_id[eval_id].metrics[name].run_per_invocation_status[0],
                strict=True,
            )
        ]
        for name in CRITERIA
    }


def write_set(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "thermo.evalset.json"
    path.write_text(json.dumps(eval_set()), encoding="utf-8")
    (folder / "test_config.json").write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    return path


EXPECTED = {  # per invocation (set, ask): what ADK gives, written out so that a change on either side shows
    "final_response_match_v2": [(1.0, "PASSED"), (0.0, "FAILED")],
    "rubric_based_final_response_quality_v1": [(0.0, "FAILED"), (0.5, "FAILED")],  # the eval set's rubrics count
    "rubric_based_tool_use_quality_v1": [(1.0, "PASSED"), (1.0, "PASSED")],
    "hallucinations_v1": [(1.0, "PASSED"), (0.5, "FAILED")],
}


def test_agent_run_and_recorded_results_send_adks_requests(fake, tmp_path):
    adk_scores, adk_results, _ = adk_side(tmp_path)
    adk_bodies = list(fake.bodies)
    fake.bodies.clear()

    sets = load_eval_sets(write_set(tmp_path / "sets"))
    ours = evaluate_eval_sets(sets, build_agent())
    our_bodies = list(fake.bodies)
    fake.bodies.clear()

    assert adk_bodies and len(our_bodies) == len(adk_bodies)
    for name in CRITERIA:
        ours_, adks = judged(our_bodies, name), judged(adk_bodies, name)
        assert canonical(ours_, ids=False) == canonical(adks, ids=False), name
    assert toolpath_scores(ours) == adk_scores == EXPECTED
    prompts = "".join(json.dumps(b) for b in our_bodies)
    assert "Always read a room before changing it." in prompts and "Agent has no tools." not in prompts
    assert "before the change" in prompts and "Temperatures carry units." in prompts  # the eval set's rubrics

    # --from-results: ADK's recorded results of its run, scored again against the same eval set
    app_dir = tmp_path / "agents"
    LocalEvalSetResultsManager(str(app_dir)).save_eval_set_result("thermo_app", "thermo", adk_results)
    recorded = load_results(app_dir / "thermo_app")
    again = score_recorded(recorded, eval_sets=sets)
    assert canonical(fake.bodies) == canonical(adk_bodies)
    assert toolpath_scores(again) == adk_scores


@pytest.mark.parametrize("sync_only", [False, True], ids=["async_stream_query", "stream_query"])
def test_adk_app_style_agent_sends_adks_requests(fake, tmp_path, sync_only):
    """The same agent as an Agent Engine ``AdkApp`` (events streamed as dicts, no plugin attached): its turns
    become ADK's invocations too, so the judges see what ADK's ``LocalEvalService`` shows them of the agent."""
    adk_scores, _, _ = adk_side(tmp_path)
    adk_bodies = list(fake.bodies)
    fake.bodies.clear()

    app = StreamingAdkApp(build_agent(), sync_only=sync_only)
    ours = evaluate_eval_sets(load_eval_sets(write_set(tmp_path / "sets")), app)
    our_bodies = list(fake.bodies)

    assert adk_bodies and len(our_bodies) == len(adk_bodies)
    for name in CRITERIA:
        assert canonical(judged(our_bodies, name), ids=False) == canonical(judged(adk_bodies, name), ids=False), name
    assert toolpath_scores(ours) == adk_scores == EXPECTED
