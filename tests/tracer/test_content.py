"""What content leaves the process: redacted keys at any depth, capture off, long values cut with a marker."""

from __future__ import annotations

import json

import toolpath
from tests.helpers.builders import spans_by_name
from toolpath.tracer import semconv as sc


@toolpath.tool
def get_weather(city: str, unit: str = "C") -> dict:
    """Current weather for a city.

    Longer text that is not part of the description."""
    return {"city": city, "unit": unit, "temp": 21}


class TestContentPolicy:
    def test_redact_keys_at_any_depth(self, store_url, app_spans):
        toolpath.init(store=store_url, redact_keys=["password", "API_KEY"])

        @toolpath.tool
        def login(user: str, password: str, config: dict) -> dict:
            return {"ok": True, "api_key": "sk-live-123"}

        login("ada", "hunter2", {"nested": {"api_key": "sk-abc", "region": "eu"}})
        attrs = spans_by_name(app_spans)["execute_tool login"].attributes
        args = json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
        assert args == {
            "user": "ada",
            "password": "[REDACTED]",
            "config": {"nested": {"api_key": "[REDACTED]", "region": "eu"}},
        }
        assert "sk-live-123" not in attrs[sc.GEN_AI_TOOL_CALL_RESULT]

    def test_capture_off_records_no_content(self, store_url, app_spans):
        toolpath.init(store=store_url, capture_content=False)
        get_weather("Paris")
        attrs = spans_by_name(app_spans)["execute_tool get_weather"].attributes
        assert sc.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs
        assert sc.GEN_AI_TOOL_CALL_RESULT not in attrs
        assert attrs[sc.GEN_AI_TOOL_NAME] == "get_weather"

    def test_long_values_truncated_with_marker(self, store_url, app_spans):
        toolpath.init(store=store_url, max_value_length=100)

        @toolpath.tool
        def echo(text: str) -> str:
            return text

        echo("x" * 500)
        attrs = spans_by_name(app_spans)["execute_tool echo"].attributes
        assert attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS].endswith("…[truncated 411 chars]")
        assert set(attrs[sc.TOOLPATH_TRUNCATED]) == {sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.GEN_AI_TOOL_CALL_RESULT}
