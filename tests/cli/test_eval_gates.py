"""`toolpath eval DATASET --threshold metric=value` fails a CI job (exit 1) when a metric's mean misses its
threshold, else the metric's own pass mark, and the summary names each miss."""

from __future__ import annotations

import json

from tests.helpers.cli import run_cli

ROWS = [
    {"predicted_trajectory": [{"tool_name": "a"}], "reference_trajectory": [{"tool_name": "a"}]},
    {"predicted_trajectory": [{"tool_name": "a"}, {"tool_name": "b"}], "reference_trajectory": [{"tool_name": "a"}]},
    {"predicted_trajectory": [{"tool_name": "b"}], "reference_trajectory": [{"tool_name": "a"}]},
    {"predicted_trajectory": [{"tool_name": "a"}, {"tool_name": "a"}], "reference_trajectory": [{"tool_name": "a"}]},
]
"""trajectory_recall: 1, 1, 0, 1 (mean 0.75); trajectory_precision: 1, 0.5, 0, 0.5 (mean 0.5); redundant calls:
0, 0, 0, 1 (mean 0.25)."""


def _dataset(tmp_path):
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))


def test_a_missed_threshold_exits_1_and_names_the_metric(tmp_path):
    _dataset(tmp_path)
    missed = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_recall,trajectory_precision",
                     "--threshold", "trajectory_recall=0.7", "--threshold", "trajectory_precision=0.7")  # fmt: skip
    assert missed.returncode == 1, missed.stdout + missed.stderr
    failed = [line for line in missed.stdout.splitlines() if line.startswith("FAILED")]
    assert failed == ["FAILED trajectory_precision: mean 0.500, needed ≥ 0.7 (--threshold)"]


def test_met_thresholds_exit_0_even_below_the_metrics_own_pass_marks(tmp_path):
    _dataset(tmp_path)
    met = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_recall,redundant_tool_calls",
                  "--threshold", "trajectory_recall=0.75", "--threshold", "redundant_tool_calls=0.25")  # fmt: skip
    assert met.returncode == 0, met.stdout + met.stderr
    assert "FAILED" not in met.stdout


def test_without_thresholds_the_metrics_own_pass_marks_gate(tmp_path):
    _dataset(tmp_path)
    own = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_recall,redundant_tool_calls,tool_call_count",
                  "--quiet")  # fmt: skip
    assert own.returncode == 1, own.stdout + own.stderr
    failed = [line for line in own.stdout.splitlines() if line.startswith("FAILED")]
    assert failed == [  # lower is better for redundant calls; tool_call_count only measures: no pass mark
        "FAILED trajectory_recall: mean 0.750, needed ≥ 1 (its pass mark)",
        "FAILED redundant_tool_calls: mean 0.250, needed ≤ 0 (its pass mark)",
    ]


def test_a_threshold_for_a_metric_that_scored_nothing_fails(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"predicted_trajectory": []}) + "\n")
    nothing = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "tool_call_count,trajectory_recall",
                      "--threshold", "trajectory_recall=0.5")  # fmt: skip
    assert nothing.returncode == 1
    assert "FAILED trajectory_recall: no score, needed ≥ 0.5 (--threshold)" in nothing.stdout.splitlines()


def test_bad_thresholds_are_one_error_before_any_work(tmp_path):
    _dataset(tmp_path)
    cases = [
        (("--metrics", "trajectory_recall", "--threshold", "trajectory_recall"), "--threshold 'trajectory_recall'"),
        (("--metrics", "trajectory_recall", "--threshold", "recall=x"), "--threshold 'recall=x'"),
        (("--metrics", "trajectory_recall", "--threshold", "fluency=1"), "--threshold fluency: not among the metrics"),
    ]
    for args, message in cases:
        result = run_cli(tmp_path, "eval", "cases.jsonl", *args, "--output", "out.json")
        assert result.returncode == 2 and result.stderr.startswith(f"error: {message}"), result.stderr
        assert "Traceback" not in result.stderr and not (tmp_path / "out.json").exists()
    (tmp_path / "a.evalset.json").write_text("{}")
    on_evalset = run_cli(tmp_path, "eval", "a.evalset.json", "--agent", "x:y", "--threshold", "a=1")
    assert on_evalset.returncode == 2 and "--threshold gates a dataset's metrics" in on_evalset.stderr
