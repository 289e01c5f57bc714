"""MCP tools score like any tool: names as the agent saw them, a server prefix stripped on request, and a result
that says ``isError`` counted as a failed call."""

from __future__ import annotations

import pytest

import toolpath
from toolpath.errors import ConfigError

FORECAST = {"city": "Oslo"}
ERROR_RESULT = {"content": [{"type": "text", "text": "no station in Mars"}], "isError": True}
OK_RESULT = {"content": [{"type": "text", "text": '{"celsius": 4.5}'}], "isError": False}


def rows() -> list[dict[str, object]]:
    return [
        {
            "predicted_trajectory": [
                {"tool_name": "weather_get_forecast", "tool_input": FORECAST},
                {"tool_name": "weather_to_fahrenheit", "tool_input": {"celsius": 4.5}},
            ],
            "reference_trajectory": [
                {"tool_name": "get_forecast", "tool_input": FORECAST},
                {"tool_name": "weather_to_fahrenheit", "tool_input": {"celsius": 4.5}},
            ],
        }
    ]


def test_names_compare_as_the_agent_saw_them_unless_a_prefix_is_stripped() -> None:
    plain = toolpath.evaluate(rows(), ["trajectory_exact_match", "trajectory_recall"])
    assert plain.metrics_table[0]["trajectory_exact_match/score"] == 0.0
    assert plain.metrics_table[0]["trajectory_recall/score"] == 0.5
    stripped = toolpath.evaluate(rows(), ["trajectory_exact_match", "trajectory_recall"], strip_tool_prefix="weather_")
    assert stripped.metrics_table[0]["trajectory_exact_match/score"] == 1.0  # stripped on both sides
    assert stripped.metrics_table[0]["trajectory_recall/score"] == 1.0
    shown = stripped.metrics_table[0]["predicted_trajectory"]
    assert "weather_get_forecast" in str(shown)  # the row keeps the names as recorded
    other = toolpath.evaluate(rows(), ["trajectory_exact_match"], strip_tool_prefix=["search_", "weather_"])
    assert other.metrics_table[0]["trajectory_exact_match/score"] == 1.0


@pytest.mark.parametrize("bad", ["", [""], [3]])
def test_an_empty_prefix_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="strip_tool_prefix"):
        toolpath.evaluate(rows(), ["trajectory_exact_match"], strip_tool_prefix=bad)  # type: ignore[arg-type]


def test_tool_error_rate_sees_an_mcp_is_error_result() -> None:
    row = {
        "predicted_trajectory": [
            {"name": "get_forecast", "args": {"city": "Mars"}, "id": "c1", "result": ERROR_RESULT},
            {"name": "get_forecast", "args": FORECAST, "id": "c2", "result": OK_RESULT},
        ]
    }
    result = toolpath.evaluate([row], ["tool_error_rate", "error_recovery"])
    assert result.metrics_table[0]["tool_error_rate/score"] == 0.5
    assert result.metrics_table[0]["error_recovery/score"] == 1.0
    [call, _] = [toolpath.ToolCall.from_item(item) for item in row["predicted_trajectory"]]  # type: ignore[attr-defined]
    assert call.error == "tool_error: no station in Mars"
