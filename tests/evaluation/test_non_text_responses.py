"""An agent whose answer has no text (bytes, a generator it handed back) has no response: null, with the reason in
the row, on the agent span and on the stored invocation, and the response metrics are not scored, with that reason,
instead of 0 for a made-up ``"<15 bytes>"``."""

from __future__ import annotations

import json

import pytest
from langchain_core.runnables import RunnableLambda

import toolpath
from toolpath.adapters.agent_engine import instrument_app
from toolpath.collector.reconstruct import build_invocation
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

BYTES = b"hello, bytes!!!"
REASON = "the agent returned 15 bytes, not text"
ROWS = [{"prompt": "say hello", "reference": "hello, bytes!!!"}]


def bytes_agent(prompt: str) -> bytes:
    return BYTES


def custom_shape_agent(prompt: str) -> dict:
    return {"response": BYTES, "predicted_trajectory": []}


def words(prompt: str):
    yield "hello"


def generator_agent(prompt: str):
    return words(prompt)


@pytest.mark.parametrize(
    ("runnable", "reason"),
    [
        pytest.param(bytes_agent, REASON, id="a function"),
        pytest.param(custom_shape_agent, REASON, id="the custom-function shape"),
        pytest.param(RunnableLambda(bytes_agent), REASON, id="a LangChain runnable"),
        pytest.param(generator_agent, "the agent returned a generator object, not text", id="a generator"),
    ],
)
def test_a_response_without_text_is_null_with_the_reason_and_not_scored(tracing, runnable, reason):
    result = toolpath.evaluate(ROWS, ["response_match_score", "exact_match", "rouge_1"], runnable)
    [row] = result.metrics_table
    assert row["response"] is None and row["response_note"] == reason
    for metric in ("response_match_score", "exact_match", "rouge_1"):
        assert row[f"{metric}/score"] is None
        assert row[f"{metric}/explanation"] == f"row has no 'response': {reason}"
    assert toolpath.flush(timeout=10)
    [invocation] = tracing.store.list_invocations()
    assert invocation.response is None and invocation.attributes[sc.TOOLPATH_RESPONSE_NOT_TEXT] == reason


def test_the_agent_span_says_why_and_holds_no_made_up_text(tracing, app_spans):
    agent = toolpath.agent(name="bytes_bot")(bytes_agent)
    assert agent("hi") == BYTES  # the caller still gets what the agent returned
    [span] = [s for s in app_spans.get_finished_spans() if s.name == "invoke_agent bytes_bot"]
    assert span.attributes[sc.TOOLPATH_RESPONSE_NOT_TEXT] == REASON
    assert sc.GEN_AI_OUTPUT_MESSAGES not in span.attributes


def test_an_agent_engine_app_answering_bytes(tracing, app_spans):
    class App:
        def query(self, *, input: str) -> dict:
            return {"output": bytearray(BYTES)}

    instrument_app(App(), name="engine").query(input="hi")
    [span] = [s for s in app_spans.get_finished_spans() if s.name == "invoke_agent engine"]
    assert span.attributes[sc.TOOLPATH_RESPONSE_NOT_TEXT] == REASON
    assert sc.GEN_AI_OUTPUT_MESSAGES not in span.attributes


def test_a_langchain_run_answering_bytes_through_the_callback_handler(tracing, app_spans):
    from toolpath.adapters.langchain import ToolpathCallbackHandler

    chain = RunnableLambda(bytes_agent, name="bytes_chain")
    assert chain.invoke("hi", config={"callbacks": [ToolpathCallbackHandler()]}) == BYTES
    [span] = [s for s in app_spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert span.attributes[sc.TOOLPATH_RESPONSE_NOT_TEXT] == REASON
    assert sc.GEN_AI_OUTPUT_MESSAGES not in span.attributes


def test_a_models_text_is_not_taken_for_an_answer_that_had_none():
    """The collector reads a response from the last model call when the agent span has none; not when the agent
    span says the agent's own answer had no text."""
    trace, root_id = "1" * 32, "a" * 16
    root = SpanRecord(
        trace,
        root_id,
        None,
        "invoke_agent bot",
        1,
        0,
        10,
        attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: "bot",
            sc.TOOLPATH_RESPONSE_NOT_TEXT: REASON,
        },
    )
    model = SpanRecord(trace, "b" * 16, root_id, "chat m", 3, 1, 5, attributes={
        sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "a model's words"}]}])})  # fmt: skip
    invocation = build_invocation(root, [model])
    assert invocation.response is None and invocation.attributes[sc.TOOLPATH_RESPONSE_NOT_TEXT] == REASON
    del root.attributes[sc.TOOLPATH_RESPONSE_NOT_TEXT]
    assert build_invocation(root, [model]).response == "a model's words"


def test_text_and_json_answers_are_unchanged(tracing):
    rows = [{"prompt": "a", "reference": "hello"}, {"prompt": "b", "reference": "[1, 2]"}]
    answers = {"a": "hello", "b": [1, 2]}
    result = toolpath.evaluate(rows, ["exact_match"], lambda prompt: answers[prompt], concurrency=1)
    assert [(r["response"], r["exact_match/score"]) for r in result.metrics_table] == [("hello", 1.0), ("[1,2]", 0.0)]
    assert all("response_note" not in r for r in result.metrics_table)


def test_an_eval_sets_turns_say_why_and_the_response_criterion_is_not_evaluated(tracing):
    from tests.helpers import ADK_FIXTURES
    from toolpath.evaluation.evalsets.evaluator import evaluate_eval_sets
    from toolpath.evaluation.evalsets.files import load_eval_set

    [case] = evaluate_eval_sets([load_eval_set(ADK_FIXTURES / "weather.test.json")], bytes_agent).cases
    assert [t["response_note"] for t in case.turns[0]] == [REASON] * len(case.turns[0])
    assert all(t["response"] is None for t in case.turns[0])
    assert case.metrics["response_match_score"].per_invocation == [None] * len(case.turns[0])


def test_a_case_scores_its_text_turns_and_says_why_it_left_the_other_out():
    from toolpath.metrics.builtin import ResponseMatchScore

    turns = [
        {"response": None, "response_note": REASON, "reference": "hello"},
        {"response": "hello there", "reference": "hello there"},
        {"response": None, "reference": "said nothing"},  # no response at all: "" as in ADK, 0
    ]
    result = ResponseMatchScore().score({"invocations": turns})
    assert result.details["per_invocation_scores"] == [None, 1.0, 0.0]
    assert result.score == 0.5 and f"invocation 1: row has no 'response': {REASON}" in result.explanation
