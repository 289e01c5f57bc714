"""Test data built the same way in every module that needs it."""

from __future__ import annotations

import json


def otlp_json(trace: str, tool_calls: int, big: str = "") -> bytes:
    """An OTLP/JSON export of one GenAI agent run (trace id ``trace``) with ``tool_calls`` tool spans whose
    arguments carry ``big``."""

    def attr(key: str, value: str) -> dict:
        return {"key": key, "value": {"stringValue": value}}

    agent = {
        "traceId": trace, "spanId": "a" + trace[-15:], "name": "invoke_agent bot", "kind": 1,
        "startTimeUnixNano": "1000", "endTimeUnixNano": "9000000",
        "attributes": [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "bot"),
                       attr("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"do {trace}"}]}])),
                       attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]))],
    }  # fmt: skip
    tools = [
        {
            "traceId": trace,
            "spanId": f"f{i + 1:015x}",
            "parentSpanId": "a" + trace[-15:],
            "name": "execute_tool t",
            "kind": 1,
            "startTimeUnixNano": str(2000 + i),
            "endTimeUnixNano": str(3000 + i),
            "attributes": [
                attr("gen_ai.operation.name", "execute_tool"),
                attr("gen_ai.tool.name", "t"),
                attr("gen_ai.tool.call.arguments", json.dumps({"i": i, "blob": big})),
            ],
        }
        for i in range(tool_calls)
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [agent, *tools]}]}]}).encode()
