"""No request runs code (SECURITY.md): every request surface — each MCP tool, each UI route (every form field and
query parameter), Vertex AI's ``evaluateInstances`` over JSON and gRPC — is walked with specs that would import or
run code (``exec:PATH``, ``module:function``, a file path) in every string it takes, over a store whose traffic holds
the same specs as data. A planted module records being imported, a planted executable being run; neither may be.

The walk is generated from the surfaces themselves (the MCP server's tool schemas, the UI app's routes), so a new
tool or route is walked without a change here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store

CANARY_MODULE = "tp_canary_planted"


@pytest.fixture
def planted(tmp_path, monkeypatch) -> dict[str, Any]:
    """A module whose import, and an executable whose run, leave a file behind; both reachable by the process."""
    imported, called, executed = tmp_path / "imported", tmp_path / "called", tmp_path / "executed"
    (tmp_path / f"{CANARY_MODULE}.py").write_text(
        f"open({str(imported)!r}, 'w').close()\n"
        f"def score(row):\n    open({str(called)!r}, 'w').close()\n    return 1.0\n"
    )
    script = tmp_path / "planted_metric.sh"
    script.write_text(f"#!/bin/sh\ntouch {executed}\necho 1\n")
    script.chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    specs = [
        f"exec:{script}",
        f"exec:{script}(name=x)",
        "exec:./planted_metric.sh",
        f"{CANARY_MODULE}:score",
        f"{CANARY_MODULE}:score(name=x)",
        f"trajectory_exact_match,{CANARY_MODULE}:score",
        "os:system",
        "builtins:exec",
        CANARY_MODULE,
        str(tmp_path / f"{CANARY_MODULE}.py"),
        f"{tmp_path / f'{CANARY_MODULE}.py'}:score",
        "$(touch pwned)",
    ]
    yield {"specs": specs, "marks": (imported, called, executed)}
    sys.modules.pop(CANARY_MODULE, None)


def assert_nothing_ran(planted: dict[str, Any]) -> None:
    assert [mark.name for mark in planted["marks"] if mark.exists()] == []
    assert CANARY_MODULE not in sys.modules
    assert not Path("pwned").exists()


@pytest.fixture
def hostile_store(tmp_path, planted) -> Store:
    """A store whose traffic names the same specs as data: prompts, tool names, arguments, results, answers."""
    store = Store(f"sqlite:///{tmp_path / 'hostile.db'}")
    specs = planted["specs"]
    store.write(
        [
            Invocation(
                invocation_id=f"inv{i}",
                session_id="sess-1",
                agent_name="bot",
                prompt=spec,
                response=spec,
                tool_calls=[ToolCall(name=spec[:60], args={"metric": spec, "metrics": [spec]}, result={"spec": spec})],
                started_at=datetime(2026, 5, 1, 10, i, tzinfo=UTC),
            )
            for i, spec in enumerate(specs)
        ]
    )
    yield store
    store.close()


def values_for(schema: dict[str, Any], hostile: str) -> Any:
    kind = schema.get("type") or next((s.get("type") for s in schema.get("anyOf", []) if s.get("type") != "null"), None)
    return {"string": hostile, "array": [hostile], "integer": 5, "boolean": True}.get(kind, hostile)


def test_no_mcp_tool_runs_code(tmp_path, planted, hostile_store):
    from toolpath.mcp_server.serving import build_server
    from toolpath.mcp_server.store_tools import StoreTools

    (tmp_path / "evalsets").mkdir()
    tools = StoreTools(hostile_store, tmp_path / "evalsets", allow_write=True, agents={"echo": lambda prompt: prompt})
    server = build_server(tools)

    async def walk() -> int:
        calls = 0
        for tool in await server.list_tools():
            properties = tool.inputSchema.get("properties", {})
            for field in [*properties, None]:  # each parameter hostile in turn (None: the valid call)
                for spec in planted["specs"] if field else ["-"]:
                    arguments = {"session_id": "sess-1", "evalset": "cases"}
                    arguments = {k: v for k, v in arguments.items() if k in properties}
                    if field is not None:
                        arguments[field] = values_for(properties[field], spec)
                    with contextlib.suppress(Exception):  # refused: what matters is that nothing ran
                        await server.call_tool(tool.name, arguments)
                    calls += 1
        return calls

    calls = asyncio.run(walk())
    assert calls > 100  # every tool, every parameter, every spec
    assert_nothing_ran(planted)
    refused = tools.score_session
    with pytest.raises(Exception, match="a request may name only toolpath's metrics"):
        refused("sess-1", [f"{CANARY_MODULE}:score"])
    assert refused("sess-1", ["tool_call_count"])["summary"]["row_count"] == len(planted["specs"])


def test_no_ui_route_runs_code(tmp_path, planted, hostile_store):
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from tests.helpers.ui import ui_agents
    from toolpath.ui import create_app

    app = create_app(hostile_store, evalsets=tmp_path / "evalsets", agents=ui_agents())
    base = "http://127.0.0.1:8765"
    client = TestClient(app, base_url=base, follow_redirects=False)
    headers = {"origin": base}
    added = client.post("/evalsets/add", data={"session_id": "sess-1", "new_evalset": "cases"}, headers=headers)
    assert added.status_code == 303, added.text
    fields = ("agent", "metric", "metrics", "name", "evalset", "new_evalset", "session_id", "q", "text", "tool",
              "model", "threshold-trajectory_exact_match", "label", "note", "a", "b", "run", "span", "bucket")  # fmt: skip
    inner = app
    while not hasattr(inner, "routes"):  # the app behind its guards
        inner = inner.app
    routes = [r for r in inner.routes if isinstance(r, Route)]
    statuses: list[int] = []
    for route in routes:
        for spec in planted["specs"]:
            path = re.sub(r"\{[^}]+\}", lambda m: "cases" if m.group(0) == "{name}" else "x", route.path)
            form = {field: spec for field in fields}
            for method in route.methods or {"GET"}:
                if method == "HEAD":
                    continue
                if method == "POST":
                    statuses.append(client.post(path, data=form, headers=headers).status_code)
                else:
                    statuses.append(client.get(path, params=form, headers=headers).status_code)
    assert len(statuses) > 100 and len(routes) >= 15
    assert not {401, 403} & set(statuses)  # every request reached its handler
    assert_nothing_ran(planted)


def test_evaluate_instances_runs_no_code(planted):
    from toolpath.vertex.instances import ApiVersion, EvaluateInstances, InstancesError, message_types

    service = EvaluateInstances()
    path = "/v1beta1/projects/p/locations/l:evaluateInstances"
    bodies: list[dict[str, Any]] = []
    for spec in planted["specs"]:
        bodies += [
            {"exact_match_input": {"metric_spec": {}, "instances": [{"prediction": spec, "reference": spec}]}},
            {"metrics": [{"computation_based_metric_spec": {"type": spec}}], "instance": {"prompt": {"text": spec}}},
            {"metrics": [{"custom_code_execution_spec": {"evaluation_function": spec}}], "instance": {}},
            {
                "metrics": [{"pointwise_metric_spec": {"metric_prompt_template": "{response.__class__}" + spec}}],
                "instance": {"response": {"text": spec}},
            },
            {
                "pointwise_metric_input": {
                    "metric_spec": {"metric_prompt_template": spec + "{x}"},
                    "instance": {"json_instance": json.dumps({"x": spec})},
                }
            },
            {"metric_sources": [{"metric_resource_name": spec}], "instance": {}},
        ]
    answers = [service.post(path, json.dumps(body).encode())[0] for body in bodies]
    assert all(
        status != 200 or "exact_match_input" in json.dumps(body) for status, body in zip(answers, bodies, strict=True)
    )
    types = message_types(ApiVersion.V1BETA1)
    for spec in planted["specs"]:
        request = types.EvaluateInstancesRequest.pb()(location="projects/p/locations/l")
        request.exact_match_input.instances.add(prediction=spec, reference=spec)
        service.grpc_call(ApiVersion.V1BETA1, request.SerializeToString())
        with contextlib.suppress(InstancesError):
            service.grpc_call(ApiVersion.V1BETA1, spec.encode())
    assert_nothing_ran(planted)


def test_the_operator_still_names_code(tmp_path, planted, hostile_store):
    """The same specs from the operator's Python run: the rule is about who names code, not about the code."""
    from toolpath.evaluation.catalog import SpecOrigin, resolve_metric

    metric = resolve_metric(f"{CANARY_MODULE}:score")
    assert metric.score({"prompt": "x"}).score == 1.0
    imported, called, _ = planted["marks"]
    assert imported.exists() and called.exists()
    with pytest.raises(Exception, match="a request may name only toolpath's metrics"):
        resolve_metric(f"exec:{tmp_path / 'planted_metric.sh'}", origin=SpecOrigin.REQUEST)
