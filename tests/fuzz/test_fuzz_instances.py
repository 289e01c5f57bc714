"""Fuzzing the ``evaluateInstances`` request reader (untrusted input on the collector's ports): random bytes,
random JSON shaped like the API's requests, and the reference's leniencies. Whatever comes, the answer is a
status with a reply in the API's shape (a score reply or ``{"error": {code, message, status}}``), never an
exception; over gRPC, only :class:`InstancesError`. Bounded by example counts so CI time stays fixed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from toolpath.judges.client import JudgeReply, JudgeRequest, JudgeSettings
from toolpath.vertex.instance_inputs import COMPUTED, JUDGED
from toolpath.vertex.instances import ApiVersion, EvaluateInstances, InstancesError, _without_trailing_commas

FUZZ = settings(max_examples=150, deadline=None)
PATH = "/v1beta1/projects/p/locations/l:evaluateInstances"
PATHS = st.sampled_from([PATH, "/v1/projects/p/locations/l:evaluateInstances"])
ANSWERS = {200, 400, 404, 429, 501, 503}


class RatingModel:
    """A judge model that always rates 3 (the judge's path runs whole, without a network)."""

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        return JudgeReply('{"score": 3, "pairwise_choice": "A", "explanation": "fuzz"}')


SERVICE = EvaluateInstances(settings=JudgeSettings(), backend=RatingModel())

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)
FIELDS = ["prediction", "reference", "baseline_prediction", "context", "instruction", "predicted_trajectory",
          "reference_trajectory", "tool_calls", "tool_name", "tool_input", "json_instance", "rouge_type",
          "use_stemmer", "metric_prompt_template", "instance", "instances", "metric_spec", "sampling_count"]  # fmt: skip
keys = st.sampled_from(FIELDS) | st.text(max_size=10)
shaped = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=4),
    max_leaves=30,
)
requests = st.dictionaries(st.sampled_from([*COMPUTED, *JUDGED, "pointwise_metric_input", "comet_input", "location",
                                            "autorater_config", "exactMatchInput", "nope"]), shaped, max_size=2)  # fmt: skip


def check(status: int, body: bytes, headers: dict[str, str]) -> None:
    assert status in ANSWERS, (status, body)
    reply = json.loads(body)
    if status == 200:
        assert len(reply) == 1 and next(iter(reply)).endswith(("Results", "Result"))
    else:
        assert set(reply) == {"error"} and set(reply["error"]) == {"code", "message", "status"}
        assert reply["error"]["code"] == status
    assert ("Retry-After" in headers) == (status == 429)  # only a spent budget says when to come back


@FUZZ
@given(st.binary(max_size=512))
def test_random_bytes(body):
    check(*SERVICE.post(PATH, body))


@FUZZ
@given(PATHS, requests)
def test_random_requests_shaped_like_the_apis(path, request):
    check(*SERVICE.post(path, json.dumps(request).encode()))


@FUZZ
@given(PATHS, st.sampled_from(sorted(COMPUTED)), st.lists(st.dictionaries(st.sampled_from(FIELDS), shaped, max_size=3),
                                                    max_size=3))  # fmt: skip
def test_computed_inputs_with_random_instances(path, field, instances):
    check(*SERVICE.post(path, json.dumps({field: {"instances": instances}}).encode()))


@FUZZ
@given(json_values)
def test_trailing_commas_are_the_only_change(value):
    text = json.dumps(value)
    assert _without_trailing_commas(text) == text  # valid JSON is left as it is, strings and all
    loose = text.replace("]", ",]").replace("}", ",}") if text.startswith(("[", "{")) else text
    if "[,]" not in loose and "{,}" not in loose and '"' not in text:
        assert json.loads(_without_trailing_commas(loose)) == value


@FUZZ
@given(st.sampled_from(ApiVersion), st.binary(max_size=512))
def test_grpc_bodies(version, body):
    try:
        reply = SERVICE.grpc_call(version, body)
    except InstancesError as exc:
        assert exc.status in ANSWERS and exc.code
        return
    assert isinstance(reply, bytes)


@FUZZ
@given(
    PATHS,
    st.sampled_from(sorted([*JUDGED, "pointwise_metric_input", "pairwise_metric_input"])),
    st.dictionaries(st.sampled_from(["prediction", "baseline_prediction", "context", "instruction", "reference"]),
                    st.text(max_size=30)),
    st.dictionaries(st.sampled_from(["use_reference", "metric_prompt_template", "system_instruction"]),
                    st.booleans() | st.text(max_size=30)),
    st.dictionaries(st.text(max_size=8), st.text(max_size=10), max_size=3),
)  # fmt: skip
def test_judged_inputs_with_random_text(path, field, instance, spec, values):
    templated = field in ("pointwise_metric_input", "pairwise_metric_input")
    body = {field: {"metric_spec": spec, "instance": {"json_instance": json.dumps(values)} if templated else instance}}
    check(*SERVICE.post(path, json.dumps(body).encode()))


SPECS = ["exact_match_spec", "bleu_spec", "rouge_spec", "computation_based_metric_spec", "llm_based_metric_spec",
         "pointwise_metric_spec", "pairwise_metric_spec", "predefined_metric_spec", "custom_code_execution_spec"]  # fmt: skip
SPEC_FIELDS = ["rouge_type", "use_stemmer", "use_effective_order", "type", "parameters", "metric_prompt_template",
               "system_instruction", "judge_autorater_config", "sampling_count", "rubric_group_key",
               "metric_spec_name", "evaluation_function"]  # fmt: skip
instance_data = st.builds(lambda t: {"text": t}, st.text(max_size=20)) | st.builds(
    lambda ts: {"contents": {"contents": [{"parts": [{"text": t} for t in ts]}]}}, st.lists(st.text(max_size=10), max_size=3)
) | shaped  # fmt: skip


WELL_FORMED = [{"exact_match_spec": {}}, {"bleu_spec": {}}, {"rouge_spec": {"rouge_type": "rougeL"}},
               {"computation_based_metric_spec": {"type": "ROUGE", "parameters": {"rouge_type": "rouge1"}}},
               {"pointwise_metric_spec": {"metric_prompt_template": "{response}"}},
               {"llm_based_metric_spec": {"metric_prompt_template": "{prompt} {response} {extra}"}},
               {"predefined_metric_spec": {"metric_spec_name": "safety_v1"}}]  # fmt: skip
metric_specs = st.sampled_from(WELL_FORMED) | st.dictionaries(
    st.sampled_from(SPECS), st.dictionaries(st.sampled_from(SPEC_FIELDS), shaped, max_size=3) | shaped, max_size=2
)

text_data = st.builds(lambda t: {"text": t}, st.text(max_size=20))
instances = st.fixed_dictionaries(
    {"response": text_data, "reference": text_data},
    optional={"prompt": text_data, "other_data": st.builds(lambda t: {"map_instance": {"extra": {"text": t}}},
                                                           st.text(max_size=10))},
) | st.dictionaries(st.sampled_from(["prompt", "response", "reference", "other_data", "agent_eval_data"]),
                    instance_data, max_size=5)  # fmt: skip


@FUZZ
@given(
    st.lists(metric_specs, max_size=3),
    instances,
    st.booleans(),
)  # fmt: skip
def test_the_metrics_form_with_random_specs_and_instances(metrics, instance, as_sources):
    """Random ``metrics`` (or ``metric_sources``) with a random instance: a reply or a Google API error, and each
    ``MetricResult`` a score, an explanation or an error."""
    body: dict = {"instance": instance}
    body["metric_sources" if as_sources else "metrics"] = [{"metric": m} for m in metrics] if as_sources else metrics
    status, reply, headers = SERVICE.post(PATH, json.dumps(body).encode())
    check(status, reply, headers)
    if status == 200:
        results = json.loads(reply)["metricResults"]
        assert len(results) == len(metrics) and all(set(r) & {"score", "explanation", "error"} for r in results)
