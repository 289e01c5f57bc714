"""`toolpath metrics`: every registered metric with what it reads, its range, direction and pass mark."""

from __future__ import annotations

import json

import toolpath
from tests.helpers.cli import run_cli


def test_metrics_lists_the_registry_with_its_metadata(tmp_path):
    listed = run_cli(tmp_path, "metrics", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["metric"]: row for row in json.loads(listed.stdout)}
    assert sorted(rows) == toolpath.metric_names()
    assert rows["latency_in_seconds"] == {
        "metric": "latency_in_seconds",
        "inputs": ["latency_in_seconds"],
        "range": "≥ 0",
        "direction": "lower",
        "threshold": None,
        "pass_mark": "—",
        "judge": False,
    }
    assert (rows["redundant_tool_calls"]["direction"], rows["redundant_tool_calls"]["pass_mark"]) == ("lower", "≤ 0")
    assert rows["trajectory_exact_match"]["inputs"] == ["predicted_trajectory", "reference_trajectory"]
    assert (rows["fluency"]["range"], rows["fluency"]["judge"]) == ("1 to 5", True)
    assert rows["verbosity"]["direction"] == "0 best"
    # whose judge scores a judge metric: ADK's own for the criteria ADK judges with Gemini (google-adk installed)
    assert rows["hallucinations_v1"]["judged_by"] == "adk" and rows["safety_v1"]["judged_by"] == "toolpath"
    assert rows["multi_turn_task_success_v1"]["judged_by"] == "toolpath" and rows["fluency"]["judged_by"] == "toolpath"
    assert rows["rubric_based_multi_turn_trajectory_quality_v1"]["judged_by"] == "adk"
    assert rows["per_turn_user_simulator_quality_v1"]["judged_by"] == "adk"

    table = run_cli(tmp_path, "metrics")
    assert table.returncode == 0 and table.stdout.startswith(f"{len(rows)} metrics")
    line = next(line for line in table.stdout.splitlines() if "tool_error_rate" in line)
    assert "predicted_trajectory" in line and "0 to 1" in line and "lower" in line and "≤ 0" in line


def test_the_light_table_it_lists_from_is_the_catalogs_info_name_for_name():
    """`toolpath metrics` reads :data:`BUILTIN_INFO` (no metric, judge or pydantic imported); the catalog builds
    each built-in (a judge template's info from its template): the two must agree."""
    from toolpath.evaluation.catalog import metric_info, metric_names
    from toolpath.evaluation.metric_table import BUILTIN_INFO

    assert sorted(BUILTIN_INFO) == metric_names()
    assert {name: metric_info(name) for name in metric_names()} == BUILTIN_INFO
