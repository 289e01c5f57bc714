"""``evaluateInstances``' newer form with a judge's prompt template (``llm_based_metric_spec`` as the GenAI-style
SDK's ``LLMMetric`` sends it, ``pointwise_metric_spec``): the template is filled from the instance and asked of
toolpath's judge, here a fake Gemini server on loopback, and its score and explanation come back in
``metric_results``; what toolpath cannot judge is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.collector import TOKEN, Collector
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply
from tests.helpers.genai_client import new_client, post


def script(prompt: str, seen: int) -> Reply:
    if "REFUSED" in prompt:
        return Reply(status=400)  # the model refuses the request: no retry
    if "GARBAGE" in prompt:
        return Reply("I would rather not say.")
    right = "four" in prompt.split("Answer:", 1)[-1]
    return json_reply(score=5 if right else 1, explanation=f"{'right' if right else 'wrong'}, sample {seen}")


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Any:
    fake = FakeGemini(script)
    with fake.running(), pytest.MonkeyPatch.context() as env:  # the collector's environment, not this client's
        env.setenv("GOOGLE_API_KEY", "test-key")
        env.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
            env.delenv(var, raising=False)
        collector = Collector(tmp_path_factory.mktemp("instance_metrics_judged")).start()
        try:
            yield collector, fake
        finally:
            collector.stop()


TEMPLATE = "Question: {prompt}\nContext: {context}\nReference: {reference}\nAnswer: {response}\nRate the answer."


def test_an_llm_metric_evaluated_by_the_sdk(judged):
    """``client.evals.evaluate`` with an ``LLMMetric`` (a template, a system instruction, two samples): each case's
    template is filled from its row, asked twice with the system instruction, and its score and explanation are the
    judge's."""
    import pandas as pd
    from agentplatform import types

    collector, fake = judged
    dataset = pd.DataFrame({
        "prompt": ["What is 2+2?", "What is 2+3?"], "response": ["four", "six"],
        "reference": ["4", "5"], "context": ["arithmetic", "sums"],
    })  # fmt: skip
    metric = types.LLMMetric(name="correct_answer", prompt_template=TEMPLATE,
                             judge_model_system_instruction="You grade arithmetic.", judge_model_sampling_count=2)  # fmt: skip
    asked = fake.requests
    result = new_client(collector).evals.evaluate(dataset=dataset, metrics=[metric])
    got = [case.response_candidate_results[0].metric_results["correct_answer"] for case in result.eval_case_results]
    assert [(r.score, r.error_message) for r in got] == [(5.0, None), (1.0, None)]
    assert [r.explanation.split(",")[0] for r in got] == ["right", "wrong"]
    prompts = sorted(fake.prompts[asked:])
    filled = [TEMPLATE.format(prompt=p, context=c, reference=r, response=a)
              for p, c, r, a in (("What is 2+2?", "arithmetic", "4", "four"), ("What is 2+3?", "sums", "5", "six"))]  # fmt: skip
    assert len(prompts) == 4 and all(any(p.startswith(f) for f in filled) for p in prompts)
    assert {sum(p.startswith(f) for p in prompts) for f in filled} == {2}  # two samples of each case
    assert all(b["systemInstruction"]["parts"][0]["text"] == "You grade arithmetic." for b in fake.bodies[asked:])
    (summary,) = result.summary_metrics
    assert (summary.mean_score, summary.num_cases_valid) == (3.0, 2)


def test_pointwise_spec_other_data_and_judge_settings_over_raw_json(judged):
    """``pointwise_metric_spec`` over raw JSON: ``other_data``'s keys fill the template (the instance's own field
    wins over a key of its name), contents are read as their text, and ``autorater_config`` chooses the model; an
    ``llm_based_metric_spec``'s ``judge_autorater_config`` wins over the request's."""
    collector, fake = judged
    instance = {
        "prompt": {"contents": {"contents": [{"role": "user", "parts": [{"text": "What is "}, {"text": "2+2,"}]},
                                             {"role": "user", "parts": [{"text": "exactly?"}]}]}},
        "response": {"text": "four"},
        "other_data": {"map_instance": {"context": {"text": "arithmetic"}, "response": {"text": "five"},
                                        "reference": {"text": "4"}}},
    }  # fmt: skip
    body = {"metrics": [{"pointwise_metric_spec": {"metric_prompt_template": TEMPLATE}}], "instance": instance,
            "autorater_config": {"autorater_model": "projects/p/locations/l/publishers/google/models/gemini-judge"}}  # fmt: skip
    status, reply = post(collector, body)
    assert status == 200, reply
    assert reply["metricResults"] == [{"score": 5.0, "explanation": "right, sample 0"}]
    assert fake.prompts[-1].startswith(
        "Question: What is 2+2,\nexactly?\nContext: arithmetic\nReference: 4\nAnswer: four\nRate the answer."
    )
    assert fake.models[-1] == "gemini-judge"
    spec = {"metric_prompt_template": TEMPLATE, "judge_autorater_config": {"autorater_model": "gemini-spec-judge"}}
    status, reply = post(collector, {**body, "metrics": [{"llm_based_metric_spec": spec}]})
    assert status == 200 and fake.models[-1] == "gemini-spec-judge"


def test_judged_and_computed_metrics_in_one_request(judged):
    """Several metrics: each gets its result, in order; a judge that refuses gets that metric its ``error`` (code 9,
    FAILED_PRECONDITION) and a judge without a rating a result without a score; alone, the refusal is the
    request's error."""
    collector, fake = judged
    instance = {"prompt": {"text": "2+2?"}, "response": {"text": "four"}, "reference": {"text": "four"}}
    metrics = [
        {"llm_based_metric_spec": {"metric_prompt_template": "Answer: {response} to {prompt}"}},
        {"exact_match_spec": {}},
        {"llm_based_metric_spec": {"metric_prompt_template": "REFUSED {response}"}},
        {"pointwise_metric_spec": {"metric_prompt_template": "GARBAGE {response}"}},
    ]
    status, reply = post(collector, {"metrics": metrics, "instance": instance})
    assert status == 200, reply
    judged_one, exact, refused, garbage = reply["metricResults"]
    assert (judged_one["score"], exact) == (5.0, {"score": 1.0})
    assert any(p.startswith("Answer: four to 2+2?") for p in fake.prompts)
    assert refused["error"]["code"] == 9 and "refused the request" in refused["error"]["message"]
    assert set(garbage) == {"explanation"} and garbage["explanation"].startswith("no rating")
    status, reply = post(collector, {"metrics": metrics[2:3], "instance": instance})
    assert (status, reply["error"]["status"]) == (400, "FAILED_PRECONDITION")
    asked = fake.requests  # a malformed request is found before the judge is asked for its first metric
    status, reply = post(collector, {"metrics": metrics[:2], "instance": {**instance, "reference": {}}})
    assert (status, fake.requests) == (400, asked) and "instance.reference needs text" in reply["error"]["message"]


def test_one_request_does_a_bounded_amount_of_work(judged):
    """``sampling_count`` caps one ``pointwise_metric_input`` at 32 asks of the judge; a metrics request is capped
    the same way in all (its judged metrics' samples summed), and at 32 metrics: past either, one 400 before the
    judge is asked."""
    collector, fake = judged
    instance = {"prompt": {"text": "2+2?"}, "response": {"text": "four"}, "reference": {"text": "four"}}
    status, reply = post(collector, {"metrics": [{"exact_match_spec": {}}] * 32, "instance": instance})
    assert status == 200 and [r["score"] for r in reply["metricResults"]] == [1.0] * 32
    asked = fake.requests
    status, reply = post(collector, {"metrics": [{"exact_match_spec": {}}] * 33, "instance": instance})
    assert status == 400 and "33 metrics in one request; at most 32" in reply["error"]["message"]
    judged_metric = {"llm_based_metric_spec": {"metric_prompt_template": "Answer: {response}",
                                               "judge_autorater_config": {"sampling_count": 17}}}  # fmt: skip
    status, reply = post(collector, {"metrics": [judged_metric, judged_metric], "instance": instance})
    assert status == 400 and "ask the judge 34 times in all" in reply["error"]["message"]
    many = [{"pointwise_metric_spec": {"metric_prompt_template": f"Answer {i}: {{response}}"}} for i in range(33)]
    status, reply = post(collector, {"metrics": many, "instance": instance})
    assert status == 400 and fake.requests == asked


@pytest.mark.parametrize(
    ("spec", "status", "said"),
    [
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response} {tone}"}}, 400,
         "instance has no value for the template's tone"),
        ({"llm_based_metric_spec": {"system_instruction": "be fair"}}, 400,
         "metrics[0].llm_based_metric_spec.metric_prompt_template is required"),
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response}",
                                    "judge_autorater_config": {"sampling_count": 99}}}, 400,
         "metrics[0].llm_based_metric_spec.judge_autorater_config.sampling_count must be 1 to 32, got 99"),
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response}",
                                    "judge_autorater_config": {"generation_config": {"top_k": 3}}}}, 400,
         "metrics[0].llm_based_metric_spec.judge_autorater_config.generation_config.top_k: toolpath's judge"),
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response}", "rubric_group_key": "g"}}, 501,
         "metrics[0].llm_based_metric_spec.rubric_group_key: judging against rubrics"),
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response}",
                                    "rubric_generation_spec": {"prompt_template": "write rubrics"}}}, 501,
         "rubric_generation_spec"),
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response}", "result_parser_config": {
            "custom_code_parser_config": {"parsing_function": "def parse(x): return 1"}}}}, 501,
         "result_parser_config: toolpath never runs code"),
        ({"pairwise_metric_spec": {"metric_prompt_template": "{response} {baseline_model_response}"}}, 501,
         "pairwise_metric_spec: a MetricResult has no field for a pairwise choice"),
        ({"pointwise_metric_spec": {"metric_prompt_template": "{response}",
                                    "custom_output_format_config": {"return_raw_output": True}}}, 501,
         "custom_output_format_config"),
        ({"llm_based_metric_spec": {"metric_prompt_template": "{response} {agent_data}"}}, 501,
         "does not render an instance's agent data"),
        ({"pointwise_metric_spec": {"metric_prompt_template": "{response} {picture}"}}, 400,
         "instance.other_data.map_instance['picture'].contents.contents[0].parts[1]: only text parts are read"),
    ],
)  # fmt: skip
def test_what_cannot_be_judged_is_said(judged, spec, status, said):
    collector, fake = judged
    picture = {
        "contents": {
            "contents": [
                {"parts": [{"text": "a chart"}, {"inline_data": {"mime_type": "image/png", "data": "iVBORw0K"}}]}
            ]
        }
    }
    instance = {"response": {"text": "four"}, "agent_eval_data": {"turns": [{"turn_index": 0, "events": [
        {"author": "user", "content": {"parts": [{"text": "2+2?"}]}}]}]}, "other_data": {"map_instance": {
        "picture": picture}}}  # fmt: skip
    asked = fake.requests
    got, reply = post(collector, {"metrics": [spec], "instance": instance})
    assert got == status, reply
    assert said in reply["error"]["message"]
    assert fake.requests == asked  # the judge was never asked


def test_a_rubric_metric_from_the_sdk_gets_its_error(judged):
    """``evaluate`` with one of Google's managed metrics and an ``LLMMetric``: the managed one's cases carry the
    refusal as their error; the ``LLMMetric`` is judged."""
    import pandas as pd
    from agentplatform import types

    collector, _ = judged
    dataset = pd.DataFrame({"prompt": ["What is 2+2?"], "response": ["four"]})
    metric = types.LLMMetric(name="answer", prompt_template="Answer: {response}")
    result = new_client(collector).evals.evaluate(
        dataset=dataset, metrics=[types.Metric(name="general_quality_v1"), metric]
    )
    results = result.eval_case_results[0].response_candidate_results[0].metric_results
    assert results["answer"].score == 5.0
    assert results["general_quality_v1"].score is None
    assert "predefined_metric_spec (general_quality_v1)" in results["general_quality_v1"].error_message


def test_the_metrics_form_over_grpc(judged):
    """``google-cloud-aiplatform``'s own client over gRPC: a computed and a judged metric, and a refused one alone as
    the client's ``NotImplemented`` error."""
    import grpc
    from google.api_core import exceptions
    from google.cloud import aiplatform_v1beta1 as v1beta1
    from google.cloud.aiplatform_v1beta1.services.evaluation_service.transports import EvaluationServiceGrpcTransport

    collector, fake = judged
    auth = [("authorization", f"Bearer {TOKEN}")]
    instance = {"response": {"text": "four over gRPC"}, "reference": {"text": "four over gRPC"}}
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        client = v1beta1.EvaluationServiceClient(transport=EvaluationServiceGrpcTransport(channel=channel))
        location = "projects/my-project/locations/us-central1"
        metrics = [
            {"exact_match_spec": {}},
            {"llm_based_metric_spec": {"metric_prompt_template": "Answer: {response}"}},
        ]
        reply = client.evaluate_instances(
            request={"location": location, "metrics": metrics, "instance": instance}, metadata=auth
        )
        with pytest.raises(exceptions.MethodNotImplemented, match="predefined_metric_spec"):
            client.evaluate_instances(request={"location": location, "instance": instance, "metrics": [
                {"predefined_metric_spec": {"metric_spec_name": "safety_v1"}}]}, metadata=auth)  # fmt: skip
    assert [r.score for r in reply.metric_results] == [1.0, 5.0]
    assert fake.prompts[-1].startswith("Answer: four over gRPC")
