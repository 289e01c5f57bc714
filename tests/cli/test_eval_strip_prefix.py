"""``toolpath eval --strip-tool-prefix``: an MCP server's prefix left out of tool names when a dataset is scored,
refused where it would do nothing (eval sets)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli

ROW = {
    "predicted_trajectory": [{"tool_name": "weather_get_forecast", "tool_input": {"city": "Oslo"}}],
    "reference_trajectory": [{"tool_name": "get_forecast", "tool_input": {"city": "Oslo"}}],
}


def test_a_prefix_stripped_on_both_sides(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    run_cli(tmp_path, "eval", "rows.jsonl", "--metrics", "trajectory_exact_match", "--output", "plain.json")  # exit 1
    stripped = run_cli(tmp_path, "eval", "rows.jsonl", "--metrics", "trajectory_exact_match",
                       "--strip-tool-prefix", "weather_", "--output", "stripped.json")  # fmt: skip
    assert stripped.returncode == 0, stripped.stderr
    plain_rows = json.loads((tmp_path / "plain.json").read_text())["metrics_table"]
    stripped_rows = json.loads((tmp_path / "stripped.json").read_text())["metrics_table"]
    assert plain_rows[0]["trajectory_exact_match/score"] == 0.0
    assert stripped_rows[0]["trajectory_exact_match/score"] == 1.0


def test_refused_where_it_would_do_nothing(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    (tmp_path / "w.evalset.json").write_text(json.dumps({"eval_set_id": "w", "eval_cases": []}), encoding="utf-8")
    on_evalset = run_cli(tmp_path, "eval", "w.evalset.json", "--agent", "x:y", "--strip-tool-prefix", "weather_")
    assert on_evalset.returncode == 2 and on_evalset.stderr.startswith("error: --strip-tool-prefix applies to")
    empty = run_cli(tmp_path, "eval", "rows.jsonl", "--metrics", "trajectory_exact_match", "--strip-tool-prefix", "")
    assert empty.returncode == 2 and "--strip-tool-prefix: a prefix must not be empty" in empty.stderr
