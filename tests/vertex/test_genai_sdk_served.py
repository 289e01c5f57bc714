"""Google's GenAI-style evaluation SDK, ``agentplatform.Client(...).evals`` (the installed ``google-cloud-aiplatform``),
pointed at a running ``toolpath collect`` by its ``base_url``: ``evaluate_instances`` and ``evaluate`` get
toolpath's scores, its errors arrive as the SDK's own, and the deprecated ``vertexai.Client`` name is still
served."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.collector import TOKEN, Collector
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply
from tests.helpers.genai_client import new_client, post
from toolpath.metrics import text, tool_calls

INSTANCES = [
    {"prediction": "The hall light is off and the door is locked.", "reference": "The door is locked, the hall light off."},
    {"prediction": "Heating in the office is set to 21 degrees.", "reference": "The office is now heated to 21 degrees."},
    {"prediction": "It will rain in Porto tomorrow.", "reference": "It will rain in Porto tomorrow."},
]  # fmt: skip


def calls(*named: tuple[str, dict]) -> str:
    return json.dumps({"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in named]})


BOOK = {"restaurant": "Casa Azul", "party_size": "4"}
TOOL_INSTANCES = [
    {"prediction": calls(("reserve_table", BOOK)), "reference": calls(("reserve_table", BOOK))},
    {"prediction": calls(("reserve_table", {**BOOK, "party_size": "5"})), "reference": calls(("reserve_table", BOOK))},
    {"prediction": calls(("find_restaurant", {"cuisine": "thai"})), "reference": calls(("reserve_table", BOOK))},
]  # fmt: skip


@pytest.fixture(scope="module")
def collector(tmp_path_factory) -> Any:
    served = Collector(tmp_path_factory.mktemp("genai_sdk")).start()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Any:
    """A collector whose judge is a fake Gemini server that rates "four" 5 and anything else 1."""

    def script(prompt: str, seen: int) -> Reply:
        if '"pairwise_choice"' in prompt:
            return json_reply(pairwise_choice="B" if "B: four" in prompt else "A", explanation="says four")
        return json_reply(score=5 if "four" in prompt else 1, explanation="four is right" if "four" in prompt else "no")

    fake = FakeGemini(script)
    with fake.running():
        with pytest.MonkeyPatch.context() as env:  # the collector's environment only, not this process's client's
            env.setenv("GOOGLE_API_KEY", "test-key")
            env.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
            for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
                env.delenv(var, raising=False)
            served = Collector(tmp_path_factory.mktemp("genai_sdk_judged")).start()
        try:
            yield served, fake
        finally:
            served.stop()


def test_evaluate_instances_gets_toolpaths_scores(collector):
    client = new_client(collector)
    for rouge_type, stemmer in (("rouge1", False), ("rougeL", True)):
        spec = {"rouge_type": rouge_type, "use_stemmer": stemmer}
        reply = client.evals.evaluate_instances(
            metric_config={"rouge_input": {"metric_spec": spec, "instances": INSTANCES}}
        )
        expected = [text.rouge(i["prediction"], i["reference"], rouge_type=rouge_type, use_stemmer=stemmer).score
                    for i in INSTANCES]  # fmt: skip
        assert [v.score for v in reply.rouge_results.rouge_metric_values] == pytest.approx(expected, abs=1e-6)
        assert len(set(expected)) == 3  # the instances score apart: their order is checked too
    reply = client.evals.evaluate_instances(
        metric_config={"bleu_input": {"metric_spec": {"use_effective_order": True}, "instances": INSTANCES}}
    )
    expected = [text.bleu(i["prediction"], i["reference"], use_effective_order=True).score for i in INSTANCES]
    assert [v.score for v in reply.bleu_results.bleu_metric_values] == pytest.approx(expected, abs=1e-6)
    reply = client.evals.evaluate_instances(metric_config={"exact_match_input": {"instances": INSTANCES}})
    assert [v.score for v in reply.exact_match_results.exact_match_metric_values] == [0.0, 0.0, 1.0]
    reply = client.evals.evaluate_instances(
        metric_config={"tool_parameter_kv_match_input": {"instances": TOOL_INSTANCES}}
    )
    expected = [tool_calls.tool_parameter_kv_match(i["prediction"], i["reference"]).score for i in TOOL_INSTANCES]
    assert [v.score for v in reply.tool_parameter_kv_match_results.tool_parameter_kv_match_metric_values] == expected
    assert len(set(expected)) > 1


def test_api_version_v1_and_the_async_client(collector):
    """``http_options={"api_version": "v1"}`` posts under ``/v1/``, which toolpath serves too; ``client.aio`` gets
    what the blocking client gets."""
    import asyncio

    body = {"tool_name_match_input": {"instances": TOOL_INSTANCES}}
    expected = [tool_calls.tool_name_match(i["prediction"], i["reference"]).score for i in TOOL_INSTANCES]
    over_v1 = new_client(collector, api_version="v1").evals.evaluate_instances(metric_config=body)
    over_aio = asyncio.run(new_client(collector).aio.evals.evaluate_instances(metric_config=body))
    for reply in (over_v1, over_aio):
        assert [v.score for v in reply.tool_name_match_results.tool_name_match_metric_values] == expected
    assert expected == [1.0, 1.0, 0.0]


def test_judged_inputs_reach_toolpaths_judge(judged):
    """``pointwise_metric_input`` and ``pairwise_metric_input`` with an ``autorater_config``, built with the SDK's
    own types, are judged by toolpath's judge with the template filled and the samples asked for."""
    from agentplatform import types
    from google.genai import types as genai_types

    collector, fake = judged
    client = new_client(collector)
    template = "Rate the answer {response} to {prompt}."
    asked = fake.requests
    reply = client.evals.evaluate_instances(
        metric_config=types._EvaluateInstancesRequestParameters(
            pointwise_metric_input=types.PointwiseMetricInput(
                metric_spec=genai_types.PointwiseMetricSpec(metric_prompt_template=template),
                instance=types.PointwiseMetricInstance(
                    json_instance=json.dumps({"prompt": "2+2?", "response": "four"})
                ),
            ),
            autorater_config=genai_types.AutoraterConfig(sampling_count=3),
        )
    )
    assert (reply.pointwise_metric_result.score, reply.pointwise_metric_result.explanation) == (5.0, "four is right")
    assert [p.startswith("Rate the answer four to 2+2?.") for p in fake.prompts[asked:]] == [True] * 3
    pairwise = "Which is better, A: {baseline_model_response} or B: {response}?"
    for candidate, choice in (("four", "CANDIDATE"), ("five", "BASELINE")):
        instance = json.dumps({"response": candidate, "baseline_model_response": "4, I think"})
        reply = client.evals.evaluate_instances(metric_config={"pairwise_metric_input": {
            "metric_spec": {"metric_prompt_template": pairwise}, "instance": {"json_instance": instance}}})  # fmt: skip
        assert reply.pairwise_metric_result.pairwise_choice == choice
    assert fake.prompts[-1].startswith("Which is better, A: 4, I think or B: five?")


def test_allow_cross_region_model_is_taken(collector):
    """The new SDK sends ``allowCrossRegionModel`` when asked (in ``metric_config``, or ``evaluate``'s config for
    its judged metrics); the installed message types lack it, and toolpath's judge has no regions to route across:
    taken when it is one boolean."""
    client = new_client(collector)
    for allowed in (True, False):
        reply = client.evals.evaluate_instances(
            metric_config={"exact_match_input": {"instances": INSTANCES}, "allow_cross_region_model": allowed}
        )
        assert [v.score for v in reply.exact_match_results.exact_match_metric_values] == [0.0, 0.0, 1.0]
    body = '{"exact_match_input": {"instances": [{"prediction": "a", "reference": "a"}]}, '
    for flag, status, said in (
        ('"allow_cross_region_model": true', 200, None),
        ('"allowCrossRegionModel": "yes"', 400, "allowCrossRegionModel must be a boolean"),
        ('"allowCrossRegionModel": true, "allow_cross_region_model": true', 400, "given 2 times"),
        ('"allowCrossRegionModel": true, "allowCrossRegionModel": false', 400, "given 2 times"),
    ):
        got, reply = post(collector, body + flag + "}")
        assert got == status, reply
        if said:
            assert said in reply["error"]["message"] and reply["error"]["status"] == "INVALID_ARGUMENT"


def test_errors_arrive_as_the_sdks_errors(collector):
    from google.genai import errors

    client = new_client(collector)
    with pytest.raises(errors.ClientError, match="rouge_type is required") as raised:
        client.evals.evaluate_instances(metric_config={"rouge_input": {"instances": INSTANCES}})
    assert (raised.value.code, raised.value.status) == (400, "INVALID_ARGUMENT")
    with pytest.raises(errors.ClientError) as raised:
        new_client(collector, token="wrong").evals.evaluate_instances(
            metric_config={"exact_match_input": {"instances": INSTANCES}}
        )
    assert (raised.value.code, raised.value.status) == (401, "UNAUTHENTICATED")
    with pytest.raises(errors.ServerError, match=r"predefined_metric_spec \(general_quality_v1\)") as raised:
        client.evals.evaluate_instances(
            metric_config={"metrics": [{"name": "general_quality_v1"}], "instance": {"response": {"text": "a"}}}
        )
    assert (raised.value.code, raised.value.status) == (501, "UNIMPLEMENTED")
    rubric_based = {"metric_spec": {"inline_rubrics": [{"content": {"property": {"description": "brief"}}}]},
                    "instance": {"json_instance": json.dumps({"response": "a"})}}  # fmt: skip
    with pytest.raises(errors.ServerError, match="rubric_based_metric_input: rubric-based metrics") as raised:
        client.evals.evaluate_instances(metric_config={"rubric_based_metric_input": rubric_based})
    assert (raised.value.code, raised.value.status) == (501, "UNIMPLEMENTED")  # said, not an unknown field


def test_evaluate_runs_whole_against_toolpath(collector):
    """``client.evals.evaluate`` (its computation metrics call ``evaluateInstances`` per case) gives toolpath's
    scores case by case, and their means."""
    import pandas as pd
    from agentplatform import types

    responses = ["Paris, the capital of France.", "Lyon, I think.", "Paris is the capital of France."]
    reference = "Paris is the capital of France."
    dataset = pd.DataFrame({"prompt": ["capital?"] * 3, "response": responses, "reference": [reference] * 3})
    names = ["exact_match", "bleu", "rouge_1", "rouge_l_sum"]
    result = new_client(collector).evals.evaluate(dataset=dataset, metrics=[types.Metric(name=n) for n in names])
    got = [{name: r.score for name, r in case.response_candidate_results[0].metric_results.items()}
           for case in result.eval_case_results]  # fmt: skip
    expected = [
        {
            "exact_match": 1.0 if response == reference else 0.0,
            "bleu": pytest.approx(text.bleu(response, reference).score, abs=1e-6),
            "rouge_1": pytest.approx(text.rouge(response, reference, rouge_type="rouge1").score, abs=1e-6),
            "rouge_l_sum": pytest.approx(text.rouge(response, reference, rouge_type="rougeLsum").score, abs=1e-6),
        }
        for response in responses
    ]
    assert got == expected
    assert len({case["rouge_1"] for case in got}) == 3
    means = {m.metric_name: (m.mean_score, m.num_cases_valid, m.num_cases_error) for m in result.summary_metrics}
    assert means == {n: (pytest.approx(sum(case[n] for case in got) / 3, abs=1e-6), 3, 0) for n in names}


def test_the_deprecated_vertexai_client_name_is_still_served(collector, monkeypatch):
    """``vertexai.Client``, as users wrote it before the rename: the same requests, the same scores; it warns
    (once a process: the warning is made due again here, and caught, so the run shows no warning)."""
    import vertexai
    from google.oauth2.credentials import Credentials
    from vertexai._genai import client as old_client

    monkeypatch.setattr(old_client, "_CLIENT_WARNING_SHOWN", False)
    with pytest.warns(FutureWarning, match=r"vertexai\.Client.*deprecated.*agentplatform\.Client"):
        client = vertexai.Client(
            project="my-project", location="us-central1", credentials=Credentials(token=TOKEN),
            http_options={"base_url": f"{collector.url}/"},
        )  # fmt: skip
    reply = client.evals.evaluate_instances(
        metric_config={"rouge_input": {"metric_spec": {"rouge_type": "rouge1"}, "instances": INSTANCES}}
    )
    expected = [text.rouge(i["prediction"], i["reference"], rouge_type="rouge1").score for i in INSTANCES]
    assert [v.score for v in reply.rouge_results.rouge_metric_values] == pytest.approx(expected, abs=1e-6)


def test_the_docs_example_runs(collector, capsys):
    """docs/vertex.md's ``agentplatform.Client`` example, run as written but for the collector's address and token,
    prints the scores the page shows."""
    import ast
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "vertex.md").read_text(encoding="utf-8")
    (example,) = [block for block in re.findall(r"```python\n(.*?)```", page, re.DOTALL) if "agentplatform" in block]
    address = "http://127.0.0.1:4318/"
    assert address in example and "my-toolpath-token" in example
    code = example.replace(address, f"{collector.url}/").replace("my-toolpath-token", TOKEN)
    exec(compile(code, "docs/vertex.md", "exec"), {})
    printed = [ast.literal_eval(line) for line in capsys.readouterr().out.splitlines()]
    shown = [ast.literal_eval(comment) for comment in re.findall(r"^print\(.*\)\s+# (.+)$", example, re.MULTILINE)]
    assert len(shown) == 2 and printed == [pytest.approx(value, abs=1e-6) for value in shown]
