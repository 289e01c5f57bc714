"""``evaluateInstances``' newer form, ``metrics`` with one ``instance`` answered with ``metric_results``, sent by the
GenAI-style SDK (``agentplatform.Client(...).evals``) and as raw JSON to a running ``toolpath collect``: computed
metrics give the numbers toolpath's metric functions give, and what toolpath does not serve is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.collector import Collector
from tests.helpers.genai_client import new_client, post
from toolpath.metrics import text

RESPONSE = "The hall light is off and the front door is locked."
REFERENCE = "The front door is locked, and the hall lights are off."
INSTANCE = {"response": {"text": RESPONSE}, "reference": {"text": REFERENCE}}


@pytest.fixture(scope="module")
def collector(tmp_path_factory) -> Any:
    served = Collector(tmp_path_factory.mktemp("instance_metrics")).start()
    yield served
    served.stop()


def test_computed_specs_through_the_sdk(collector):
    """``types.Metric(name=…)`` as the SDK turns it into a spec (``exact_match_spec``, ``bleu_spec``, ``rouge_spec``
    with the type its name gives), with a ``types.EvaluationInstance`` whose reference is given as contents."""
    from agentplatform import types
    from google.genai import types as genai_types

    client = new_client(collector)
    reference = types.evals.InstanceData(
        contents=types.evals.InstanceDataContents(contents=[genai_types.Content(parts=[genai_types.Part(text=REFERENCE)])])
    )  # fmt: skip
    instance = types.EvaluationInstance(response=types.evals.InstanceData(text=RESPONSE), reference=reference)
    expected = {
        "exact_match": text.exact_match(RESPONSE, REFERENCE).score,
        "bleu": text.bleu(RESPONSE, REFERENCE, use_effective_order=False).score,  # bleu_spec {}: the field unset
        "rouge_1": text.rouge(RESPONSE, REFERENCE, rouge_type="rouge1").score,
        "rouge_l_sum": text.rouge(RESPONSE, REFERENCE, rouge_type="rougeLsum").score,
    }
    assert len(set(expected.values())) == 4
    for name, score in expected.items():
        reply = client.evals.evaluate_instances(
            metric_config={"metrics": [types.Metric(name=name)], "instance": instance}
        )
        assert [r.score for r in reply.metric_results] == [pytest.approx(score, abs=1e-6)], name
        assert reply.metric_results[0].error is None


def test_contents_read_as_the_sdk_reads_them_for_the_older_form(collector):
    """A response of several text parts, a thought part and a function call: ``client.evals.evaluate`` sends its
    text in the older form (``exact_match_input``, its text parts run together, the thought and the call left out);
    the same contents in the metrics form get the same scores. A response with no text part is a 400 naming it."""
    from agentplatform import types
    from google.genai import types as genai_types

    client = new_client(collector)
    call = genai_types.Part(function_call=genai_types.FunctionCall(name="lights_off", args={"room": "hall"}))
    parts = [genai_types.Part(text="Let me check the hall.", thought=True), call, genai_types.Part(text="The hall light"),
             genai_types.Part(text=" is off.")]  # fmt: skip
    response = genai_types.Content(role="model", parts=parts)
    reference = genai_types.Content(parts=[genai_types.Part(text="The hall light is off.")])
    case = types.EvalCase(
        prompt=genai_types.Content(parts=[genai_types.Part(text="Turn off the hall light.")]),
        responses=[types.ResponseCandidate(response=response)], reference=types.ResponseCandidate(response=reference),
    )  # fmt: skip
    names = ("exact_match", "rouge_l_sum")
    result = client.evals.evaluate(dataset=types.EvaluationDataset(eval_cases=[case]),
                                   metrics=[types.Metric(name=n) for n in names])  # fmt: skip
    older = {n: r.score for n, r in result.eval_case_results[0].response_candidate_results[0].metric_results.items()}
    assert older == {"exact_match": 1.0, "rouge_l_sum": 1.0}

    def data(content: Any) -> Any:
        return types.evals.InstanceData(contents=types.evals.InstanceDataContents(contents=[content]))

    instance = types.EvaluationInstance(response=data(response), reference=data(reference))
    reply = client.evals.evaluate_instances(
        metric_config={"metrics": [types.Metric(name=n) for n in names], "instance": instance}
    )
    assert [r.score for r in reply.metric_results] == [older[n] for n in names]
    only_a_call = {"contents": {"contents": [{"role": "model", "parts": [{"function_call": {"name": "lights_off"}}]}]}}
    status, reply = post(collector, {"metrics": [{"exact_match_spec": {}}],
                                     "instance": {"response": only_a_call, "reference": {"text": "off"}}})  # fmt: skip
    assert status == 400
    assert reply["error"]["message"] == (
        "instance.response.contents.contents[0].parts[0]: instance.response has no text part to score"
    )


def test_spec_options_and_computation_based_specs_over_raw_json(collector):
    """``rouge_spec``'s ``rouge_type``, ``use_stemmer`` and ``split_summaries``, ``bleu_spec``'s
    ``use_effective_order``, and ``computation_based_metric_spec`` with the same options as its ``parameters``:
    the numbers of toolpath's ROUGE and BLEU with those options."""
    response, reference = "The cats were running home.\nThey slept.", "A cat runs home.\nIt sleeps."
    instance = {"response": {"text": response}, "reference": {"text": reference}}
    cases = [
        ({"rouge_type": "rougeLsum", "use_stemmer": True}, "rouge"),
        ({"rouge_type": "rouge2", "use_stemmer": True}, "rouge"),
        ({"rouge_type": "rougeL"}, "rouge"),
        ({"use_effective_order": True}, "bleu"),
        ({"use_effective_order": False}, "bleu"),
    ]
    scores = []
    for options, kind in cases:
        if kind == "bleu":  # a response shorter than BLEU's 4-grams, where the effective order counts
            response, reference = "cat runs", "a cat runs"
            instance = {"response": {"text": response}, "reference": {"text": reference}}
        function = text.rouge if kind == "rouge" else text.bleu
        expected = function(response, reference, **options).score
        scores.append(expected)
        computation = {"type": kind.upper(), "parameters": options}
        status, reply = post(collector, {"metrics": [{f"{kind}_spec": options}, {"computationBasedMetricSpec": computation}],
                                         "instance": instance})  # fmt: skip
        assert status == 200, reply
        assert [r["score"] for r in reply["metricResults"]] == [pytest.approx(expected, abs=1e-6)] * 2, options
    assert len(set(scores)) == len(scores)  # each option changes the number: each is read
    status, reply = post(collector, {"metrics": [{"computation_based_metric_spec": {"type": "EXACT_MATCH"}}],
                                     "instance": {"response": {"text": "yes"}, "reference": {"text": "yes"}}})  # fmt: skip
    assert (status, reply) == (200, {"metricResults": [{"score": 1.0}]})
    status, reply = post(collector, {"metric_sources": [{"metric": {"exact_match_spec": {}}}], "instance": INSTANCE})
    assert (status, reply) == (200, {"metricResults": [{"score": 0.0}]})
    response, reference = "The cats were running home.\nThey slept.", "A cat runs home.\nIt sleeps."
    instance = {"response": {"text": response}, "reference": {"text": reference}}
    split = {"rouge_type": "rougeLsum", "split_summaries": True}
    status, reply = post(collector, {"metrics": [{"rouge_spec": split}], "instance": instance})
    expected = text.rouge(response, reference, **split).score  # NLTK's sentence model comes with the install
    assert reply == {"metricResults": [{"score": pytest.approx(expected, abs=1e-6)}]}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"metrics": [{"rouge_spec": {"rouge_type": "rougeL", "stemmer": True}}], "instance": INSTANCE},
         'has no field named "stemmer"'),
        ({"metrics": [{"bleu_spec": {"use_effective_order": "yes"}}], "instance": INSTANCE}, "use_effective_order"),
        ({"metrics": [{"rouge_spec": {}}], "instance": INSTANCE}, "metrics[0].rouge_spec.rouge_type is required"),
        ({"metrics": [{"computation_based_metric_spec": {"type": "ROUGE", "parameters": {"rouge_typ": "rouge1"}}}],
          "instance": INSTANCE}, 'metrics[0].computation_based_metric_spec.parameters: Message type'),
        ({"metrics": [{"computation_based_metric_spec": {"parameters": {}}}], "instance": INSTANCE},
         "computation_based_metric_spec.type is COMPUTATION_BASED_METRIC_TYPE_UNSPECIFIED"),
        ({"metrics": [{"exact_match_spec": {}}], "instance": {"response": {"text": "a"}}}, "instance.reference is required"),
        ({"metrics": [{"exact_match_spec": {}}]}, "instance is required"),
        ({"metrics": [{}], "instance": INSTANCE}, "metrics[0] has no metric spec"),
        ({"metrics": [{"exact_match_spec": {}}], "instance": {"response": {"text": "a"}, "reference": {}}},
         "instance.reference needs text or contents"),
        ({"metrics": [{"exact_match_spec": {}}], "instance": {**INSTANCE, "answer": {"text": "a"}}},
         'has no field named "answer"'),
        ({"metrics": [{"exact_match_spec": {}}], "instance": INSTANCE, "exact_match_input": {"instances": []}},
         "exact_match_input and metrics are two forms of request"),
        ({"metrics": [{"predefined_metric_spec": {"metric_spec_name": "general_quality_v1"}},
                      {"rouge_spec": {"rouge_type": "rougeX"}}], "instance": INSTANCE}, "rougeX"),
    ],
)  # fmt: skip
def test_bad_requests_are_one_400_naming_the_field(collector, body, said):
    status, reply = post(collector, body)
    assert status == 400, reply
    assert said in reply["error"]["message"] and reply["error"]["status"] == "INVALID_ARGUMENT"


def test_what_is_not_served_is_refused_by_name(collector, tmp_path):
    """A request's only metric, when toolpath does not serve it, is a 501 naming its spec (the SDK's
    ``ServerError``); the code of ``custom_code_execution_spec`` is never run."""
    from agentplatform import types
    from google.genai import errors

    client = new_client(collector)
    instance = types.EvaluationInstance(response=types.evals.InstanceData(text="a"))
    ran = tmp_path / "ran"
    refused = [
        (types.Metric(name="general_quality_v1"), r"predefined_metric_spec \(general_quality_v1\): Google's managed"),
        (
            types.Metric(
                name="x",
                custom_function=f"def evaluate(instance):\n    open({str(ran)!r}, 'w')\n    return 1.0\n",
            ),
            "custom_code_execution_spec: toolpath never runs code",
        ),
    ]
    for metric, said in refused:
        with pytest.raises(errors.ServerError, match=said) as raised:
            client.evals.evaluate_instances(metric_config={"metrics": [metric], "instance": instance})
        assert (raised.value.code, raised.value.status) == (501, "UNIMPLEMENTED")
    assert not ran.exists()
    raw = types.LLMMetric(name="raw", prompt_template="Rate {response}.", return_raw_output=True)
    with pytest.raises(errors.ServerError, match=r"metrics\[0\]\.llm_based_metric_spec\.custom_output_format_config"):
        client.evals.evaluate_instances(metric_config={"metrics": [raw], "instance": instance})
    # fields the SDK sends that the installed message types lack: said to be refused, not unknown
    newer = [
        ({"metrics": [{"predefined_metric_spec": {"metric_spec_name": "multi_turn_general_quality_v1",
                                                  "step_autorater_configs": [{}]}}], "instance": INSTANCE},
         "metrics[0].predefined_metric_spec.step_autorater_configs: Google's managed metrics"),
        ({"metrics": [{"exact_match_spec": {}}], "instance": {**INSTANCE, "interactionsDataSource": {"name": "x"}}},
         "instance.interactions_data_source: toolpath does not fetch interactions"),
    ]  # fmt: skip
    for body, said in newer:
        status, reply = post(collector, body)
        assert (status, reply["error"]["status"]) == (501, "UNIMPLEMENTED") and said in reply["error"]["message"]
    status, reply = post(collector, {"metric_sources": [{"metric_resource_name": "projects/p/locations/l/evaluationMetrics/m"}],
                                     "instance": INSTANCE})  # fmt: skip
    assert status == 501 and "metric_sources[0].metric_resource_name" in reply["error"]["message"]


def test_several_metrics_each_get_a_result_or_an_error(collector):
    """Google's service reads only the first metric of a request; toolpath answers each, in order: the refused one
    with its ``error`` (``google.rpc.Status``, code 12, UNIMPLEMENTED), the others with their scores."""
    from agentplatform import types

    metrics = [
        {"exact_match_spec": {}},
        {"predefined_metric_spec": {"metric_spec_name": "safety_v1"}},
        {"rouge_spec": {"rouge_type": "rouge1"}},
    ]
    status, reply = post(collector, {"metrics": metrics, "instance": INSTANCE})
    assert status == 200, reply
    first, refused, last = reply["metricResults"]
    assert first == {"score": 0.0}
    assert last == {"score": pytest.approx(text.rouge(RESPONSE, REFERENCE, rouge_type="rouge1").score, abs=1e-6)}
    assert refused["error"]["code"] == 12 and "predefined_metric_spec (safety_v1)" in refused["error"]["message"]
    assert "score" not in refused
    named = [types.Metric(name=n) for n in ("exact_match", "safety_v1", "rouge_1")]  # the same specs, by the SDK
    reply = new_client(collector).evals.evaluate_instances(metric_config={"metrics": named, "instance": INSTANCE})
    assert [r.score for r in reply.metric_results] == [0.0, None, pytest.approx(last["score"], abs=1e-6)]
    assert reply.metric_results[1].error.code == 12
    assert isinstance(reply.metric_results[1], types.MetricResult)
