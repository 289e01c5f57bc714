"""The judged inputs of ``evaluateInstances``: a running ``toolpath collect`` asks the fake Gemini server through
toolpath's judge client (google-genai), with the judge's cache and budget; and ``toolpath ui`` serves the API
behind its own token."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from typing import Any

import pytest

from tests.helpers.collector import TOKEN, Collector, free_port
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply, serving_gemini
from toolpath.vertex.instance_inputs import JUDGED, Side

LOCATION = "projects/my-project/locations/us-central1"
PATH = f"/v1beta1/{LOCATION}:evaluateInstances"
CONTEXT = (
    "The night rate runs from 23:00 to 07:00 and costs 0.12 per kWh, against 0.31 in the day. The dishwasher and the "
    "washing machine both have delay timers, and the car charger can be scheduled from the app. The water heater "
    "has no timer of its own, but it is wired to a smart plug that can switch it on at a set hour."
)
PAIRWISE_SUMMARY = {  # a pairwise summarization request: the candidate summary says more than the baseline
    "pairwise_summarization_quality_input": {
        "metric_spec": {},
        "instance": {
            "prediction": "Run the dishwasher, washer, car charger and water heater between 23:00 and 07:00.",
            "baseline_prediction": "Electricity is cheaper at night.",
            "instruction": "Sum up how to save on electricity in two sentences at most.",
            "context": CONTEXT,
        },
    }
}


def script(prompt: str, seen: int) -> Reply:
    if "GARBAGE" in prompt:
        return Reply("I would rather not say.")
    if "REFUSED" in prompt:
        return Reply(status=400)
    if "SLOW" in prompt:
        return Reply(json.dumps({"score": 1, "explanation": "slow"}), delay=3.0)
    if '"pairwise_choice"' in prompt:
        return json_reply(pairwise_choice="A", explanation="A says more")
    return json_reply(score=2 if "SAMPLED" in prompt and seen == 2 else 1, explanation=f"rated {seen}")


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Any:
    """A collector whose judge is the fake Gemini server (found through the environment, as in production)."""
    fake = FakeGemini(script)
    with fake.running(), pytest.MonkeyPatch.context() as env:
        env.setenv("GOOGLE_API_KEY", "test-key")
        env.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
            env.delenv(var, raising=False)
        collector = Collector(tmp_path_factory.mktemp("judged")).start()
        try:
            yield collector, fake
        finally:
            collector.stop()


def post(url: str, body: dict | str, *, token: str | None = TOKEN, path: str = PATH) -> tuple[int, dict]:
    data = (body if isinstance(body, str) else json.dumps(body)).encode()
    request = urllib.request.Request(url + path, data=data, method="POST", headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def camel(name: str) -> str:
    return "".join(w.capitalize() if i else w for i, w in enumerate(name.split("_")))


def test_a_pairwise_summarization_request(judged):
    collector, fake = judged
    status, reply = post(collector.url, PAIRWISE_SUMMARY)
    assert status == 200, reply
    # toolpath's pairwise judge shows the candidate as "Response A" on the first sample: "A" is the candidate
    assert reply == {
        "pairwiseSummarizationQualityResult": {
            "pairwiseChoice": "CANDIDATE", "explanation": "A says more", "confidence": 1.0,
        }
    }  # fmt: skip
    prompt = fake.prompts[-1]
    for given in PAIRWISE_SUMMARY["pairwise_summarization_quality_input"]["instance"].values():
        assert given in prompt
    # Google's clients ask for enums as numbers (the REST transport's query): CANDIDATE is 2
    status, reply = post(collector.url, PAIRWISE_SUMMARY, path=PATH + "?%24alt=json%3Benum-encoding%3Dint")
    assert (status, reply["pairwiseSummarizationQualityResult"]["pairwiseChoice"]) == (200, 2)


@pytest.mark.parametrize("name", sorted(JUDGED))
def test_every_judged_input(judged, name):
    collector, fake = judged
    instance = {
        "prediction": f"the prediction of {name}",
        "baseline_prediction": "the baseline",
        "instruction": f"the instruction of {name}",
        "context": f"the context of {name}",
        "reference": f"the reference of {name}",
    }
    fields = JUDGED[name]
    kept = {k: v for k, v in instance.items() if k in ("prediction", *fields.shown)}
    if fields.side is Side.PAIRWISE:
        kept["baseline_prediction"] = instance["baseline_prediction"]
    spec = {"use_reference": True} if fields.reference_by_spec else {}
    if fields.reference_by_spec:
        kept["reference"] = instance["reference"]
    asked = fake.requests
    status, reply = post(collector.url, {name: {"metric_spec": spec, "instance": kept}})
    assert status == 200, reply
    assert fake.requests == asked + 1
    result = reply[camel(fields.result)]
    if fields.side is Side.PAIRWISE:
        assert result == {"pairwiseChoice": "CANDIDATE", "explanation": "A says more", "confidence": 1.0}
    else:
        assert result == {"score": 1.0, "explanation": "rated 0", "confidence": 1.0}
    for value in kept.values():
        assert value in fake.prompts[-1]  # the judge saw every field the input gave


def test_samples_model_and_cache(judged):
    collector, fake = judged
    body = {
        "fluency_input": {"instance": {"prediction": "SAMPLED text"}},
        "autorater_config": {"sampling_count": 3, "autorater_model": "projects/p/locations/l/publishers/google/models/gemini-x"},
    }  # fmt: skip
    asked = fake.requests
    status, reply = post(collector.url, body)
    assert status == 200, reply
    assert reply["fluencyResult"]["score"] == pytest.approx((1 + 1 + 2) / 3)
    assert reply["fluencyResult"]["confidence"] == pytest.approx(2 / 3)
    assert fake.requests == asked + 3 and fake.models[-3:] == ["gemini-x"] * 3
    assert post(collector.url, body) == (status, reply)  # the judge's cache (the store) answers the same request
    assert fake.requests == asked + 3


def sdk_request(metric: Any, row: dict) -> Any:
    """The request ``vertexai.evaluation`` itself builds for ``metric`` over ``row`` (a ``v1`` message)."""
    import vertexai
    from vertexai.evaluation._base import EvaluationRunConfig
    from vertexai.evaluation.metrics import _instance_evaluation

    vertexai.init(project="my-project", location="us-central1")
    config = EvaluationRunConfig(
        dataset=None, metrics=[metric], metric_column_mapping={k: k for k in ("prompt", "response", "baseline_model_response")},
        client=None, evaluation_service_qps=1.0, retry_timeout=10.0,
    )  # fmt: skip
    return _instance_evaluation.build_request(metric, row, config)


def test_the_sdks_own_pointwise_and_pairwise_requests_over_the_real_client(judged):
    """``vertexai.evaluation`` calls the ``v1`` API: its requests, sent by its client, read by its parser."""
    from google.cloud import aiplatform_v1
    from google.oauth2.credentials import Credentials
    from vertexai.evaluation import MetricPromptTemplateExamples, PairwiseMetric, PointwiseMetric
    from vertexai.evaluation.metrics import _instance_evaluation

    collector, fake = judged
    client = aiplatform_v1.EvaluationServiceClient(
        transport="rest",
        credentials=Credentials(token=TOKEN),
        client_options={"api_endpoint": f"http://127.0.0.1:{collector.http_port}"},
    )
    row = {"prompt": "Say hi", "response": "Hi there!", "baseline_model_response": "hi"}
    pointwise = PointwiseMetric(
        metric="fluency", metric_prompt_template=MetricPromptTemplateExamples.get_prompt_template("fluency")
    )
    reply = client.evaluate_instances(request=sdk_request(pointwise, row))
    assert _instance_evaluation.handle_response(reply) == {"score": 1.0, "explanation": "rated 0"}
    assert "Hi there!" in fake.prompts[-1] and "Say hi" in fake.prompts[-1]
    assert "{response}" not in fake.prompts[-1]
    pairwise = PairwiseMetric(
        metric="pairwise_fluency", metric_prompt_template=MetricPromptTemplateExamples.get_prompt_template("pairwise_fluency")
    )  # fmt: skip
    reply = client.evaluate_instances(request=sdk_request(pairwise, row))
    # Vertex AI's pairwise templates show the baseline as "Response A"
    assert _instance_evaluation.handle_response(reply) == {"pairwise_choice": "BASELINE", "explanation": "A says more"}


def test_templated_inputs_raw_output_and_errors(judged):
    collector, fake = judged
    template = "Rate the answer {response} to {prompt}."
    instance = {"json_instance": json.dumps({"prompt": "What is 2+2?", "response": "4"})}
    body = {"pointwise_metric_input": {"metric_spec": {"metric_prompt_template": template,
            "custom_output_format_config": {"return_raw_output": True}}, "instance": instance}}  # fmt: skip
    status, reply = post(collector.url, body)
    assert status == 200, reply
    assert reply["pointwiseMetricResult"]["customOutput"] == {
        "rawOutputs": {"rawOutput": [json.dumps({"score": 1, "explanation": "rated 0"})]}
    }
    assert fake.prompts[-1].startswith("Rate the answer 4 to What is 2+2?.")
    content_map = {"values": {"response": {"contents": [{"parts": [{"text": "four"}]}]},
                              "prompt": {"contents": [{"parts": [{"text": "2+2?"}]}]}}}  # fmt: skip
    status, reply = post(collector.url, {"pointwise_metric_input": {
        "metric_spec": {"metric_prompt_template": template}, "instance": {"content_map_instance": content_map}}})  # fmt: skip
    assert (status, reply["pointwiseMetricResult"]["score"]) == (200, 1.0)
    assert fake.prompts[-1].startswith("Rate the answer four to 2+2?.")
    for text, expected in (("REFUSED {response}", (400, "FAILED_PRECONDITION")),
                           ("{response} {missing}", (400, "INVALID_ARGUMENT"))):  # fmt: skip
        spec = {"metric_prompt_template": text}
        status, reply = post(collector.url, {"pointwise_metric_input": {"metric_spec": spec, "instance": instance}})
        assert (status, reply["error"]["status"]) == expected, reply
        assert set(reply["error"]) == {"code", "message", "status"}
    assert "missing" in reply["error"]["message"]
    # a judge that answers without a rating: a result without a score, saying why (never a 500)
    spec = {"metric_prompt_template": "GARBAGE {response}"}
    status, reply = post(collector.url, {"pointwise_metric_input": {"metric_spec": spec, "instance": instance}})
    assert status == 200 and set(reply["pointwiseMetricResult"]) == {"explanation"}
    assert reply["pointwiseMetricResult"]["explanation"].startswith("no rating: sample 1: no JSON object")
    status, reply = post(collector.url, {"fluency_input": {"instance": {"prediction": "GARBAGE"}}})
    assert (status, set(reply["fluencyResult"])) == (200, {"explanation"})


def test_autorater_settings_reach_the_judge(judged):
    collector, fake = judged
    template = "Which is better, A: {baseline_model_response} or B: {response}?"
    body = {
        "pairwise_metric_input": {
            "metric_spec": {"metric_prompt_template": template, "system_instruction": "You are strict."},
            "instance": {"json_instance": json.dumps({"response": "cand", "baseline_model_response": "base"})},
        },
        "autorater_config": {"sampling_count": 2, "flip_enabled": True, "generation_config": {"temperature": 0.25}},
    }
    asked = fake.requests
    status, reply = post(collector.url, body)
    assert status == 200, reply
    # the judge said "A" both times: the baseline, then (flipped) the candidate: a tie
    assert reply["pairwiseMetricResult"]["pairwiseChoice"] == "TIE"
    assert sorted(p.split("?")[0] for p in fake.prompts[asked:]) == [
        "Which is better, A: base or B: cand",
        "Which is better, A: cand or B: base",
    ]
    for sent in fake.bodies[asked:]:
        assert sent["systemInstruction"]["parts"][0]["text"] == "You are strict."
        assert sent["generationConfig"]["temperature"] == 0.25
    status, reply = post(collector.url, {
        "coherence_input": {"instance": {"prediction": "warm text"}},
        "autorater_config": {"generation_config": {"temperature": 0.5}},
    })  # fmt: skip
    assert status == 200 and fake.bodies[-1]["generationConfig"]["temperature"] == 0.5
    status, reply = post(collector.url, {
        "coherence_input": {"instance": {"prediction": "x"}},
        "autorater_config": {"generation_config": {"top_p": 0.5}},
    })  # fmt: skip
    assert (status, reply["error"]["status"]) == (400, "INVALID_ARGUMENT")
    assert "generation_config.top_p" in reply["error"]["message"]


def test_judged_over_grpc(judged):
    import grpc
    from google.cloud import aiplatform_v1beta1 as v1beta1
    from google.cloud.aiplatform_v1beta1.services.evaluation_service.transports import EvaluationServiceGrpcTransport

    collector, fake = judged
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        client = v1beta1.EvaluationServiceClient(transport=EvaluationServiceGrpcTransport(channel=channel))
        reply = client.evaluate_instances(
            request={
                "location": LOCATION,
                "groundedness_input": {"instance": {"prediction": "p", "context": "over gRPC"}},
            },
            metadata=[("authorization", f"Bearer {TOKEN}")],
        )
    assert (reply.groundedness_result.score, reply.groundedness_result.confidence) == (1.0, 1.0)
    assert "over gRPC" in fake.prompts[-1]


def test_a_server_without_judge_credentials_says_so(monkeypatch):
    from toolpath.vertex.instances import EvaluateInstances

    for var in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    status, body, _ = EvaluateInstances().post(PATH, b'{"fluency_input": {"instance": {"prediction": "hi"}}}')
    error = json.loads(body)["error"]
    assert (status, error["status"]) == (400, "FAILED_PRECONDITION")
    assert "GOOGLE_API_KEY" in error["message"]


def test_slow_judges_never_hold_up_an_export(judged):
    from concurrent.futures import ThreadPoolExecutor

    from tests.helpers.collector import post_traces

    collector, _ = judged
    bodies = [{"fluency_input": {"instance": {"prediction": f"SLOW answer {i}"}}} for i in range(10)]
    with ThreadPoolExecutor(10) as pool:
        slow = [pool.submit(post, collector.url, body) for body in bodies]
        time.sleep(0.5)  # every judge request is waiting on the model now
        started = time.monotonic()
        status, _, _ = post_traces(collector.url, b"{}", "application/json")
        took = time.monotonic() - started
        answers = [future.result() for future in slow]
    assert status == 200 and took < 2.0  # the export did not wait for a judge
    assert [code for code, _ in answers] == [200] * 10  # and every evaluation was answered, some after waiting


def test_the_judge_budget_is_the_services(monkeypatch):
    from toolpath.judges.client import JudgeSettings
    from toolpath.vertex.instances import EvaluateInstances

    with serving_gemini(monkeypatch, script) as fake:
        service = EvaluateInstances(settings=JudgeSettings(max_requests=2))
        answers = [
            service.post(PATH, json.dumps({"coherence_input": {"instance": {"prediction": f"text {i}"}}}).encode())
            for i in range(3)
        ]
    assert [status for status, _, _ in answers] == [200, 200, 429]
    error = json.loads(answers[2][1])["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED" and "budget" in error["message"]
    assert fake.requests == 2


def test_toolpath_ui_serves_the_api_behind_its_token(tmp_path, judged):
    from toolpath.store.store import Store

    _, fake = judged
    Store(f"sqlite:///{tmp_path / 'ui.db'}").close()
    port = free_port()
    log = (tmp_path / "ui.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "ui", "--store", f"sqlite:///{tmp_path / 'ui.db'}", "--port", str(port),
         "--token", "ui-token", "--judge-calls-per-minute", "1"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "toolpath ui on" not in (tmp_path / "ui.log").read_text():
            assert time.monotonic() < deadline and process.poll() is None, (tmp_path / "ui.log").read_text()
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        body = {"exact_match_input": {"instances": [{"prediction": "a", "reference": "a"}]}}
        assert post(url, body, token="ui-token") == (
            200,
            {"exactMatchResults": {"exactMatchMetricValues": [{"score": 1.0}]}},
        )
        status, reply = post(url, body, token=None)
        assert (status, reply["error"]["status"]) == (401, "UNAUTHENTICATED")
        status, reply = post(url, {"safety_input": {"instance": {"prediction": "hello"}}}, token="ui-token")
        assert (status, reply) == (200, {"safetyResult": {"score": 1.0, "explanation": "rated 0", "confidence": 1.0}})
        assert "hello" in fake.prompts[-1]
        status, reply = post(url, {"safety_input": {"instance": {"prediction": "hello again"}}}, token="ui-token")
        assert (status, reply["error"]["status"]) == (429, "RESOURCE_EXHAUSTED")  # --judge-calls-per-minute 1
        assert "hello again" not in fake.prompts[-1]
        page_request = urllib.request.Request(f"{url}/sessions", headers={"Authorization": "Bearer ui-token"})
        with urllib.request.urlopen(page_request, timeout=30) as page:
            assert page.status == 200  # the UI itself still serves beside it
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
