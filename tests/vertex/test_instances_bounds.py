"""What one ``evaluateInstances`` request may cost a running ``toolpath collect``: a template that would expand into
a huge prompt is refused before it is built (400 naming the limit); the collector's judge budget answers 429 with
``Retry-After`` once a minute's calls are spent, across parallel requests; beyond loopback without a token, the API
is off."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.helpers.collector import TOKEN, Collector, free_port
from tests.helpers.fake_gemini import Reply, json_reply, serving_gemini

LOCATION = "projects/my-project/locations/us-central1"
PATH = f"/v1beta1/{LOCATION}:evaluateInstances"
CALLS_PER_MINUTE = 5


def script(prompt: str, seen: int) -> Reply:
    return json_reply(score=1, explanation="fine")


@pytest.fixture(scope="module")
def bounded(tmp_path_factory) -> Any:
    with pytest.MonkeyPatch.context() as env, serving_gemini(env, script) as fake:
        extra = ("--judge-calls-per-minute", str(CALLS_PER_MINUTE), "--workers", "1")  # one process: its whole budget
        collector = Collector(tmp_path_factory.mktemp("bounded"), None, *extra).start()
        try:
            yield collector, fake
        finally:
            collector.stop()


def post(url: str, body: dict[str, Any] | bytes, *, token: str | None = TOKEN) -> tuple[int, dict, dict[str, str]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + PATH, data=data, method="POST", headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read()), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


def wait_until_healthy(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"collector did not start: {process.communicate()[1]}")


def expanding(repeats: int, samples: int = 1) -> dict[str, Any]:
    """A template naming one 3,000-character field ``repeats`` times: a small body, a prompt of 3,000 × repeats."""
    return {
        "pointwise_metric_input": {
            "metric_spec": {"metric_prompt_template": "{x}" * repeats},
            "instance": {"json_instance": json.dumps({"x": "y" * 3000})},
        },
        "autorater_config": {"sampling_count": samples},
    }


def test_a_template_that_would_expand_past_the_limit_is_refused_unbuilt(bounded):
    collector, fake = bounded
    before = fake.requests
    body = expanding(333_333, samples=8)  # about 1 MB; its prompt would be 999,999,000 characters, eight times
    status, reply, _ = post(collector.url, body)
    assert status == 400 and reply["error"]["status"] == "INVALID_ARGUMENT", reply
    message = reply["error"]["message"]
    assert "999999000 characters" in message and "limit of 1000000" in message and "max_prompt_chars" in message
    assert fake.requests == before  # the judge was never asked
    assert post(collector.url, expanding(300))[0] == 200  # 900,000 characters: under the limit, asked


def test_the_minutes_judge_calls_are_the_collectors_and_a_429_says_when(bounded):
    collector, fake = bounded
    bodies = [
        {"coherence_input": {"instance": {"prediction": f"answer number {i}"}}} for i in range(3 * CALLS_PER_MINUTE)
    ]
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda body: post(collector.url, body), bodies))
    statuses = [status for status, _, _ in answers]
    # the other test of this module spent one call of the minute already (its 900,000-character prompt)
    assert statuses.count(200) == CALLS_PER_MINUTE - 1 and statuses.count(429) == len(bodies) - statuses.count(200)
    assert fake.requests == CALLS_PER_MINUTE  # never above the budget, whatever the parallel requests
    for status, reply, headers in answers:
        if status == 429:
            assert reply["error"]["status"] == "RESOURCE_EXHAUSTED"
            assert "judge budget spent" in reply["error"]["message"]
            assert 1 <= int(headers["Retry-After"]) <= 60


def test_computed_inputs_spend_no_judge_budget(bounded):
    collector, _ = bounded
    body = {"exact_match_input": {"metric_spec": {}, "instances": [{"prediction": "a", "reference": "a"}]}}
    assert post(collector.url, body)[0] == 200  # even with the minute's judge calls spent


def test_beyond_loopback_without_a_token_the_api_is_off(tmp_path):
    port = free_port()
    db = tmp_path / "open.db"
    command = [sys.executable, "-m", "toolpath.cli", "collect", "--store", f"sqlite:///{db}", "--host", "0.0.0.0",
               "--http-port", str(port), "--grpc-port", "0"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(url, process)
        status, reply, _ = post(url, {"exact_match_input": {"instances": []}}, token=None)
        assert status == 403 and reply["error"]["status"] == "PERMISSION_DENIED"
        assert "--token" in reply["error"]["message"] and "--evaluate-instances on" in reply["error"]["message"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_system_instruction_counts_toward_the_prompt_limit(bounded):
    collector, fake = bounded
    before = fake.requests
    body = {
        "pointwise_metric_input": {
            "metric_spec": {"metric_prompt_template": "Rate {response}", "system_instruction": "S" * 1_500_000},
            "instance": {"json_instance": json.dumps({"response": "fine"})},
        },
        "autorater_config": {"sampling_count": 8},
    }
    status, reply, _ = post(collector.url, body)
    assert status == 400 and "with its system instruction" in reply["error"]["message"]
    assert fake.requests == before


def test_a_request_the_budget_refuses_part_way_is_refused_whole(monkeypatch):
    """When other requests take the minute's last calls between this request's check and its calls, the samples
    that went through never make a result of their own: the request is a 429."""
    from tests.helpers.fake_gemini import serving_gemini
    from toolpath.judges import client
    from toolpath.judges.process_budget import BudgetLimits, ProcessBudget
    from toolpath.vertex import instance_judges
    from toolpath.vertex.instances import EvaluateInstances

    budget = ProcessBudget(BudgetLimits(calls_per_minute=2))
    monkeypatch.setattr(client, "process_budget", lambda: budget)
    monkeypatch.setattr(instance_judges, "room_for", lambda calls: None)  # as if the check had raced another request
    body = {
        "pointwise_metric_input": {
            "metric_spec": {"metric_prompt_template": "Rate {response}"},
            "instance": {"json_instance": json.dumps({"response": "fine"})},
        },
        "autorater_config": {"sampling_count": 4},
    }
    with serving_gemini(monkeypatch, script) as fake:
        status, reply, headers = EvaluateInstances().post(PATH, json.dumps(body).encode())
    assert fake.requests == 2 and status == 429, reply
    assert json.loads(reply)["error"]["status"] == "RESOURCE_EXHAUSTED" and int(headers["Retry-After"]) >= 1
