"""Small OTLP/JSON exports written by hand (spans with chosen ids and parents) and posted to a collector's
OTLP/HTTP port on 127.0.0.1: what the tests of spans that can or cannot become runs send."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

TRACE = "7" * 32
AGENT = "a" * 16


def span(span_id: str, parent: str | None, name: str, operation: str | None = None, trace: str = TRACE) -> dict:
    attributes = [{"key": "gen_ai.operation.name", "value": {"stringValue": operation}}] if operation else []
    if operation == "execute_tool":
        attributes.append({"key": "gen_ai.tool.name", "value": {"stringValue": name}})
    out = {"traceId": trace, "spanId": span_id, "name": name, "kind": 1, "startTimeUnixNano": "1000",
           "endTimeUnixNano": "2000", "attributes": attributes}  # fmt: skip
    if parent is not None:
        out["parentSpanId"] = parent
    return out


def good_run() -> list[dict]:
    """An agent run with two tool calls: what every export below also holds."""
    return [span(AGENT, None, "bot", "invoke_agent"), span("b" * 16, AGENT, "t1", "execute_tool"),
            span("c" * 16, AGENT, "t2", "execute_tool")]  # fmt: skip


def body(spans: list[Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def post(port: int, data: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=data, method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
