"""Vertex AI's ``evaluateInstances`` served by a running ``toolpath collect``: request bodies (also as hand-written
``curl`` bodies) over real HTTP, the real ``google-cloud-aiplatform`` client over REST and gRPC, scores checked
against toolpath's metrics, and malformed requests answered in the API's error shape."""

from __future__ import annotations

import json
import socket
import urllib.request
from typing import Any

import pytest

from tests.helpers.collector import TOKEN, Collector
from toolpath.metrics import text, tool_calls, trajectory_match
from toolpath.trajectory import parse_trajectory
from toolpath.vertex.instance_judges import RpcCode
from toolpath.vertex.instances import error_body

LOCATION = "projects/my-project/locations/us-central1"
PATH = f"/v1beta1/{LOCATION}:evaluateInstances"

ROUGE_JSON = {  # rougeLsum over summaries of more than one sentence, where split_summaries counts
    "rouge_input": {
        "metric_spec": {"rouge_type": "rougeLsum", "use_stemmer": True, "split_summaries": True},
        "instances": [
            {
                "prediction": "The hall light is off. The front door is locked.",
                "reference": "The front door is locked. The hall light is off.",
            },
            {
                "prediction": "Heating in the office is set to 21 degrees.",
                "reference": "The office is now heated to 21 degrees.",
            },
            {
                "prediction": "It will rain in Porto tomorrow. Take an umbrella.",
                "reference": "Tomorrow brings rain to Porto.",
            },
        ],
    }
}
ROUGE_CURL = """{
    "rouge_input": {
      "instances": {
        "prediction": "The hall light is off. The front door is locked.",
        "reference": "The front door is locked. The hall light is off.",
      },
      "instances": {
        "prediction": "Heating in the office is set to 21 degrees.",
        "reference": "The office is now heated to 21 degrees.",
      },
      "instances": {
        "prediction": "It will rain in Porto tomorrow. Take an umbrella.",
        "reference": "Tomorrow brings rain to Porto.",
      },
      "metric_spec": {
        "rouge_type": "rougeLsum",
        "use_stemmer": true,
        "split_summaries": true
      }
    }
  }"""
"""The same request as a hand-written ``curl -d`` body in the style of the API reference's: trailing commas, and
the list ``instances`` written as one key per instance."""


@pytest.fixture(scope="module")
def collector(tmp_path_factory) -> Any:
    served = Collector(tmp_path_factory.mktemp("instances"), None, "--max-body-bytes", "1000000").start()
    yield served
    served.stop()


def post(url: str, body: bytes | str | dict, *, path: str = PATH, token: str | None = TOKEN, **headers: str) -> Any:
    """``POST`` the body: (status, the JSON reply, the reply's headers)."""
    data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
    request = urllib.request.Request(url + path, data=data, method="POST")
    request.add_header("Content-Type", headers.pop("content_type", "application/json"))
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for key, value in headers.items():
        request.add_header(key.replace("_", "-"), value)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read()), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


def scores(reply: dict, results: str) -> list[float]:
    (values,) = reply[results].values()
    return [value["score"] for value in values]


def test_a_rouge_request_as_json_and_as_a_lenient_curl_body(collector):
    status, reply, _ = post(collector.url, ROUGE_JSON)
    assert post(collector.url, ROUGE_CURL)[:2] == (status, reply)  # the curl form reads as the same request
    assert status == 200, reply  # split_summaries: NLTK's sentence model comes with the install
    expected = [
        text.rouge(i["prediction"], i["reference"], rouge_type="rougeLsum", use_stemmer=True, split_summaries=True)
        for i in ROUGE_JSON["rouge_input"]["instances"]
    ]
    assert scores(reply, "rougeResults") == pytest.approx([r.score for r in expected], abs=1e-6)


def test_the_calling_examples_in_the_docs_run(collector, capsys):
    """docs/vertex.md's ``curl`` and ``AuthorizedSession`` examples, run as written but for the collector's address
    and token, print the replies the page shows."""
    import ast
    import os
    import re
    import shutil
    import subprocess
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "vertex.md").read_text(encoding="utf-8")
    section = page.split("### Calling it", 1)[1]
    shell = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    python = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert shell is not None and python is not None
    address = "http://127.0.0.1:4318"
    assert address in shell.group(1) and address in python.group(1)
    if shutil.which("curl"):
        run = subprocess.run(
            ["bash", "-c", shell.group(1).replace(address, collector.url)],
            env={**os.environ, "TOOLPATH_TOKEN": TOKEN}, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        shown = json.loads(shell.group(1).rsplit("# ", 1)[1])
        got = json.loads(run.stdout)
        assert got["rougeResults"]["rougeMetricValues"][0]["score"] == pytest.approx(
            shown["rougeResults"]["rougeMetricValues"][0]["score"], abs=1e-6
        )
    code = python.group(1).replace(address, collector.url).replace("my-toolpath-token", TOKEN)
    exec(compile(code, "docs/vertex.md", "exec"), {})
    assert ast.literal_eval(capsys.readouterr().out) == ast.literal_eval(python.group(1).rsplit("# ", 1)[1])


def test_the_client_example_in_the_docs_runs_against_a_collector_with_a_token(collector, capsys, monkeypatch):
    """docs/vertex.md's ``google-cloud-aiplatform`` example (REST and gRPC) against a collector with ``--token``,
    run as written but for the addresses; and the google-auth errors the page says a missing or wrong token gives."""
    import re
    from pathlib import Path

    from google.auth.credentials import AnonymousCredentials
    from google.auth.exceptions import InvalidOperation, RefreshError
    from google.cloud import aiplatform_v1beta1 as v1beta1
    from google.oauth2.credentials import Credentials

    page = (Path(__file__).resolve().parents[2] / "docs" / "vertex.md").read_text(encoding="utf-8")
    section = page.split("### Calling it", 1)[1].split("### From", 1)[0]
    example = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[1]
    code = example.replace("http://127.0.0.1:4318", collector.url).replace(
        "127.0.0.1:4317", f"127.0.0.1:{collector.grpc_port}"
    )
    monkeypatch.setenv("TOOLPATH_TOKEN", TOKEN)
    exec(compile(code, "docs/vertex.md", "exec"), {})
    printed = capsys.readouterr().out
    rest, over_grpc = printed[: len(printed) // 2], printed[len(printed) // 2 :]
    assert rest == over_grpc and "trajectory_precision_results" in rest and "score: 1" in rest
    request = {"location": LOCATION, "exact_match_input": {"instances": [{"prediction": "a", "reference": "a"}]}}
    for credentials, error, said in (
        (AnonymousCredentials(), InvalidOperation, "Anonymous credentials cannot be refreshed"),
        (Credentials(token="wrong"), RefreshError, "do not contain the necessary fields need to refresh"),
    ):
        client = v1beta1.EvaluationServiceClient(
            transport="rest", credentials=credentials, client_options={"api_endpoint": collector.url}
        )
        with pytest.raises(error, match=said):
            client.evaluate_instances(request=request)


def test_rouge_scores_are_toolpaths_rouge(collector):
    instances = ROUGE_JSON["rouge_input"]["instances"]
    for rouge_type, stemmer in (("rougeLsum", True), ("rouge1", False), ("rouge2", True), ("rougeL", False)):
        body = {"rougeInput": {"metricSpec": {"rougeType": rouge_type, "useStemmer": stemmer}, "instances": instances}}
        status, reply, _ = post(collector.url, body)
        assert status == 200, reply
        expected = [text.rouge(i["prediction"], i["reference"], rouge_type=rouge_type, use_stemmer=stemmer).score
                    for i in instances]  # fmt: skip
        assert scores(reply, "rougeResults") == pytest.approx(expected, abs=1e-6)
        assert len(set(expected)) > 1  # the instances score apart: the order of the values is checked too


def test_exact_match_and_bleu(collector):
    instances = [
        {"prediction": "The cat sat on the mat.", "reference": "The cat sat on the mat."},
        {"prediction": "A cat sat on a mat today.", "reference": "The cat sat on the mat."},
    ]
    status, reply, _ = post(collector.url, {"exact_match_input": {"metric_spec": {}, "instances": instances}})
    assert (status, reply) == (200, {"exactMatchResults": {"exactMatchMetricValues": [{"score": 1.0}, {"score": 0.0}]}})
    for effective in (True, False):
        body = {"bleu_input": {"metric_spec": {"use_effective_order": effective}, "instances": instances}}
        status, reply, _ = post(collector.url, body)
        assert status == 200, reply
        expected = [text.bleu(i["prediction"], i["reference"], use_effective_order=effective).score for i in instances]
        assert scores(reply, "bleuResults") == pytest.approx(expected, abs=1e-6)


def calls(*named: tuple[str, dict]) -> str:
    return json.dumps({"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in named]})


BOOK = {"restaurant": "Casa Azul", "party_size": "4", "time": "19:30"}
TOOL_INSTANCES = [
    {"prediction": calls(("reserve_table", BOOK)), "reference": calls(("reserve_table", BOOK))},
    {"prediction": calls(("reserve_table", {**BOOK, "party_size": " 4 ", "note": "x"})), "reference": calls(("reserve_table", BOOK))},
    {"prediction": calls(("find_restaurant", {"cuisine": "thai"})), "reference": calls(("reserve_table", BOOK), ("pay", {}))},
    {"prediction": json.dumps({"content": "no call", "tool_calls": []}), "reference": calls(("reserve_table", BOOK))},
]  # fmt: skip


@pytest.mark.parametrize(
    ("field", "spec", "expected"),
    [
        ("tool_call_valid_input", {}, lambda i: tool_calls.tool_call_valid(i["prediction"])),
        ("tool_name_match_input", {}, lambda i: tool_calls.tool_name_match(i["prediction"], i["reference"])),
        ("tool_parameter_key_match_input", {},
         lambda i: tool_calls.tool_parameter_key_match(i["prediction"], i["reference"])),
        ("tool_parameter_kv_match_input", {},
         lambda i: tool_calls.tool_parameter_kv_match(i["prediction"], i["reference"])),
        ("tool_parameter_kv_match_input", {"use_strict_string_match": True},
         lambda i: tool_calls.tool_parameter_kv_match(i["prediction"], i["reference"], use_strict_string_match=True)),
    ],
)  # fmt: skip
def test_tool_call_inputs(collector, field, spec, expected):
    status, reply, _ = post(collector.url, {field: {"metric_spec": spec, "instances": TOOL_INSTANCES}})
    assert status == 200, reply
    results = field.removesuffix("_input")
    camel = "".join(w.capitalize() if n else w for n, w in enumerate(results.split("_"))) + "Results"
    assert scores(reply, camel) == pytest.approx([expected(i).score for i in TOOL_INSTANCES], abs=1e-6)


def trajectory(*named: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"tool_name": n, "tool_input": json.dumps(a)} for n, a in named]}


TRAJECTORIES = [
    (trajectory(("search", {"q": "x"}), ("book", {"id": 1})), trajectory(("search", {"q": "x"}), ("book", {"id": 1}))),
    (trajectory(("book", {"id": 1}), ("search", {"q": "x"})), trajectory(("search", {"q": "x"}), ("book", {"id": 1}))),
    (trajectory(("search", {"q": "x"}), ("log", {}), ("book", {"id": 1})), trajectory(("search", {"q": "x"}), ("book", {"id": 1}))),
    (trajectory(("search", {"q": "y"})), trajectory(("search", {"q": "x"}), ("book", {"id": 1}))),
    (trajectory(), trajectory(("search", {"q": "x"}))),
]  # fmt: skip


def as_calls(message: dict) -> Any:
    return parse_trajectory([{"tool_name": c["tool_name"], "tool_input": json.loads(c["tool_input"])}
                             for c in message["tool_calls"]])  # fmt: skip


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("trajectory_exact_match", trajectory_match.exact_match),
        ("trajectory_in_order_match", trajectory_match.in_order_match),
        ("trajectory_any_order_match", trajectory_match.any_order_match),
        ("trajectory_precision", trajectory_match.precision),
        ("trajectory_recall", trajectory_match.recall),
    ],
)
def test_trajectory_inputs(collector, name, fn):
    instances = [{"predicted_trajectory": p, "reference_trajectory": r} for p, r in TRAJECTORIES]
    status, reply, _ = post(collector.url, {f"{name}_input": {"metric_spec": {}, "instances": instances}})
    assert status == 200, reply
    camel = "".join(w.capitalize() if n else w for n, w in enumerate(name.split("_"))) + "Results"
    expected = [fn(as_calls(p), as_calls(r)).score for p, r in TRAJECTORIES]
    assert scores(reply, camel) == pytest.approx(expected, abs=1e-6)
    assert len(set(expected)) > 1


def test_single_tool_use_and_camel_case_keys(collector):
    body = {"trajectorySingleToolUseInput": {"metricSpec": {"toolName": "book"}, "instances": [
        {"predictedTrajectory": {"toolCalls": [{"toolName": "search", "toolInput": "{}"}, {"toolName": "book"}]}},
        {"predictedTrajectory": {"toolCalls": [{"toolName": "search", "toolInput": "{\"q\": 1}"}]}},
    ]}}  # fmt: skip
    status, reply, _ = post(collector.url, body)
    assert (status, scores(reply, "trajectorySingleToolUseResults")) == (200, [1.0, 0.0])
    status, reply, _ = post(collector.url, {**body}, path=f"/v1/{LOCATION}:evaluateInstances")
    assert status == 400  # v1's message has no trajectory inputs: an unknown field there, as the service says
    assert "trajectorySingleToolUseInput" in reply["error"]["message"]


def test_the_real_client_over_rest_and_grpc_gets_the_http_replies(collector):
    import grpc
    from google.cloud import aiplatform_v1beta1 as v1beta1
    from google.cloud.aiplatform_v1beta1.services.evaluation_service.transports import EvaluationServiceGrpcTransport
    from google.oauth2.credentials import Credentials
    from google.protobuf import json_format

    rest = v1beta1.EvaluationServiceClient(
        transport="rest",
        credentials=Credentials(token=TOKEN),  # sent as 'Authorization: Bearer <token>', the collector's token
        client_options={"api_endpoint": f"http://127.0.0.1:{collector.http_port}"},  # http: loopback, no TLS
    )
    channel = grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}")
    over_grpc = v1beta1.EvaluationServiceClient(transport=EvaluationServiceGrpcTransport(channel=channel))
    auth = [("authorization", f"Bearer {TOKEN}")]
    bodies = [
        {"exact_match_input": {"instances": [{"prediction": "a", "reference": "a"}, {"prediction": "a", "reference": "b"}]}},
        {"rouge_input": {"metric_spec": {"rouge_type": "rouge1"}, "instances": ROUGE_JSON["rouge_input"]["instances"]}},
        {"tool_parameter_kv_match_input": {"instances": TOOL_INSTANCES}},
        {"trajectory_recall_input": {"instances": [{"predicted_trajectory": p, "reference_trajectory": r} for p, r in TRAJECTORIES]}},
    ]  # fmt: skip
    try:
        for body in bodies:
            status, over_http, _ = post(collector.url, body)
            assert status == 200, over_http
            request = v1beta1.EvaluateInstancesRequest(location=LOCATION, **body)
            for reply in (rest.evaluate_instances(request=request),
                          over_grpc.evaluate_instances(request=request, metadata=auth)):  # fmt: skip
                assert json_format.MessageToDict(reply._pb) == over_http
        from google.api_core import exceptions

        bad = v1beta1.EvaluateInstancesRequest(location=LOCATION, rouge_input={"instances": [{"prediction": "a"}]})
        with pytest.raises(exceptions.InvalidArgument, match="rouge_type is required"):
            over_grpc.evaluate_instances(request=bad, metadata=auth)
        with pytest.raises(exceptions.BadRequest, match="rouge_type is required"):
            rest.evaluate_instances(request=bad)
        with pytest.raises(exceptions.Unauthenticated):
            over_grpc.evaluate_instances(request=request)  # no token
    finally:
        channel.close()


def test_anonymous_credentials_on_a_collector_without_a_token(tmp_path):
    """The client as a Vertex user makes it for an endpoint of their own: anonymous, the endpoint changed."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform_v1beta1 as v1beta1

    from tests.helpers.collector import free_port, serving
    from toolpath.cli.vertex_api import evaluate_instances_api
    from toolpath.store.store import Store

    store = Store(f"sqlite:///{tmp_path / 'open.db'}")
    routes, methods = evaluate_instances_api(store)
    with serving(store, routes=routes, grpc_methods=methods, grpc_port=free_port()) as service:
        port = service.options.http_port
        for transport, endpoint in (("rest", f"http://127.0.0.1:{port}"), ("grpc", None)):
            if transport == "rest":
                client = v1beta1.EvaluationServiceClient(
                    transport="rest", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint}
                )
            else:
                import grpc
                from google.cloud.aiplatform_v1beta1.services.evaluation_service.transports import (
                    EvaluationServiceGrpcTransport,
                )

                channel = grpc.insecure_channel(f"127.0.0.1:{service.options.grpc_port}")
                client = v1beta1.EvaluationServiceClient(transport=EvaluationServiceGrpcTransport(channel=channel))
            reply = client.evaluate_instances(
                request={
                    "location": LOCATION,
                    "exact_match_input": {"instances": [{"prediction": "x", "reference": "x"}]},
                }
            )
            assert [v.score for v in reply.exact_match_results.exact_match_metric_values] == [1.0]
    store.close()


def test_the_vertex_sdk_reads_the_replies(collector):
    """``vertexai.evaluation`` builds its requests and reads the service's replies with its own code: both hold."""
    from google.cloud import aiplatform_v1beta1 as v1beta1
    from google.oauth2.credentials import Credentials
    from vertexai.evaluation.metrics import _instance_evaluation

    client = v1beta1.EvaluationServiceClient(
        transport="rest",
        credentials=Credentials(token=TOKEN),
        client_options={"api_endpoint": f"http://127.0.0.1:{collector.http_port}"},
    )
    for kind, expected in (("exact_match_input", 0.0), ("tool_name_match_input", 0.0)):
        item = {"prediction": calls(("a", {})), "reference": calls(("b", {}))}
        reply = client.evaluate_instances(request={"location": LOCATION, kind: {"instances": [item]}})
        assert _instance_evaluation.handle_response(reply) == {"score": expected}


@pytest.mark.parametrize(
    ("body", "status", "code", "said"),
    [
        (b"{not json", 400, "INVALID_ARGUMENT", "Invalid JSON payload"),
        (b"[1, 2]", 400, "INVALID_ARGUMENT", "must be a JSON object"),
        (b"\xff\xfe", 400, "INVALID_ARGUMENT", "Not UTF-8"),
        (b'{"exact_match_inputt": {}}', 400, "INVALID_ARGUMENT", "exact_match_inputt"),
        (b'{"exact_match_input": {}, "bleu_input": {}}', 400, "INVALID_ARGUMENT", "multiple"),
        (b'{"exact_match_input": {"instances": [{"prediction": 3, "reference": "a"}]}}', 400, "INVALID_ARGUMENT", "prediction"),
        (b'{"exact_match_input": {"instances": {"prediction": "a"}}}', 400, "INVALID_ARGUMENT", "instances"),
        (b'{"exact_match_input": {"instances": [{"prediction": "a"}]}}', 400, "INVALID_ARGUMENT", "instances[0].reference is required"),
        (b'{"exact_match_input": {"instances": []}}', 400, "INVALID_ARGUMENT", "empty"),
        (b'{"exact_match_input": {"metric_spec": {}, "metric_spec": {}}}', 400, "INVALID_ARGUMENT", "given 2 times"),
        (b'{"rouge_input": {"metric_spec": {"rouge_type": "rouge0"}, "instances": [{"prediction": "a", "reference": "a"}]}}', 400, "INVALID_ARGUMENT", "rouge0"),
        (b'{"tool_name_match_input": {"instances": [{"prediction": "{", "reference": "{}"}]}}', 400, "INVALID_ARGUMENT", "not valid JSON"),
        (b'{"trajectory_exact_match_input": {"instances": [{"predicted_trajectory": {"tool_calls": [{"tool_name": "a", "tool_input": "[1]"}]}, "reference_trajectory": {}}]}}', 400, "INVALID_ARGUMENT", "tool_input must be a JSON object"),
        (b"{}", 400, "INVALID_ARGUMENT", "no metric input"),
        (b'{"comet_input": {}}', 501, "UNIMPLEMENTED", "COMET"),
    ],
)  # fmt: skip
def test_malformed_requests_get_the_apis_error_shape(collector, body, status, code, said):
    got, reply, headers = post(collector.url, body)
    assert got == status
    assert headers["Content-Type"] == "application/json"
    assert set(reply) == {"error"} and set(reply["error"]) == {"code", "message", "status"}
    assert (reply["error"]["code"], reply["error"]["status"]) == (status, code)
    assert said in reply["error"]["message"]
    assert "Traceback" not in reply["error"]["message"]


def read_reply(conn: socket.socket) -> tuple[bytes, bytes]:
    """A whole HTTP reply read from ``conn``: its head and its body (``Content-Length`` bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head, body


def test_the_ports_rules_hold_for_the_route(collector):
    body = {"exact_match_input": {"instances": [{"prediction": "a", "reference": "a"}]}}
    for token, status in ((None, 401), ("wrong", 401)):
        got, reply, headers = post(collector.url, body, token=token)
        assert (got, reply["error"]["status"], headers.get("WWW-Authenticate")) == (status, "UNAUTHENTICATED", "Bearer")
    got, reply, _ = post(collector.url, body, content_type="text/plain")  # a browser's "simple" request: refused
    assert (got, reply["error"]["code"]) == (415, 415)
    with socket.create_connection(("127.0.0.1", collector.http_port), timeout=10) as conn:  # refused from its head
        conn.sendall(f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n".encode())  # fmt: skip
        head, rest = read_reply(conn)
    assert head.split(b" ")[1] == b"413"
    assert json.loads(rest)["error"] == {
        "code": 413, "message": "body of 2000000 bytes is over the 1000000-byte limit", "status": "INVALID_ARGUMENT"
    }  # fmt: skip
    got, reply, _ = post(collector.url, body, path="/v1beta1/projects/p:evaluateInstances")
    assert got == 404  # not a location path: not this route (OTLP's 404)
    request = urllib.request.Request(collector.url + PATH, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        urllib.request.urlopen(request, timeout=30)
    except urllib.error.HTTPError as error:
        assert (error.code, json.loads(error.read())["error"]["status"]) == (405, "UNIMPLEMENTED")
    for head in (b"Host: evil.example\r\n", b"Host: 127.0.0.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n"):
        with socket.create_connection(("127.0.0.1", collector.http_port), timeout=10) as conn:
            conn.sendall(b"POST " + PATH.encode() + b" HTTP/1.1\r\n" + head + b"Content-Length: 2\r\n\r\n{}")
            status_line = conn.recv(1024).split(b"\r\n", 1)[0]
        assert status_line.split(b" ")[1] in (b"403", b"431", b"400"), status_line
    assert post(collector.url, body)[0] == 200  # and it still serves


def test_without_google_cloud_aiplatform_the_api_says_what_to_install(monkeypatch):
    import sys

    from toolpath.vertex.instances import EvaluateInstances

    monkeypatch.setitem(sys.modules, "google.cloud.aiplatform_v1beta1.types.evaluation_service", None)  # not installed
    status, body, _ = EvaluateInstances().post(PATH, b'{"exact_match_input": {}}')
    assert (status, json.loads(body)["error"]["status"]) == (501, "UNIMPLEMENTED")
    assert "pip install 'toolpath[vertex]'" in json.loads(body)["error"]["message"]


def test_collect_with_the_ui_serves_both(tmp_path):
    """``toolpath collect --ui``: the API answers beside OTLP and the UI's pages, the collector's token in front."""
    from tests.helpers.collector import serving
    from toolpath.cli.ui_command import build_ui
    from toolpath.cli.vertex_api import evaluate_instances_api
    from toolpath.store.store import Store

    store = Store(f"sqlite:///{tmp_path / 'both.db'}")
    routes, _ = evaluate_instances_api(store)
    ui = build_ui(store, evalsets=tmp_path / "evalsets", token=TOKEN, loopback_only=True)
    with serving(store, routes=routes, other_app=ui, token=TOKEN) as service:
        url = f"http://127.0.0.1:{service.options.http_port}"
        body = {"exact_match_input": {"instances": [{"prediction": "a", "reference": "b"}]}}
        assert post(url, body)[:2] == (200, {"exactMatchResults": {"exactMatchMetricValues": [{"score": 0.0}]}})
        assert post(url, body, token=None)[0] == 401
        page = urllib.request.Request(f"{url}/sessions", headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(page, timeout=30) as reply:
            assert reply.status == 200 and b"<html" in reply.read().lower()
    store.close()


def test_error_statuses_are_google_rpc_codes_spelt_as_before():
    """``RpcCode``: ``google.rpc.Code``'s names (installed), the gRPC front end's status codes by the same names, and
    the error body's bytes as before."""
    import grpc
    from google.rpc import code_pb2

    assert [c.value for c in RpcCode] == list(code_pb2.Code.keys())
    assert all(getattr(grpc.StatusCode, c).name == c for c in RpcCode)
    assert error_body(429, "over budget") == (
        b'{"error": {"code": 429, "message": "over budget", "status": "RESOURCE_EXHAUSTED"}}'
    )
    assert json.loads(error_body(400, "m", RpcCode.FAILED_PRECONDITION))["error"]["status"] == "FAILED_PRECONDITION"
    assert json.loads(error_body(418, "m"))["error"]["status"] == "UNKNOWN"
