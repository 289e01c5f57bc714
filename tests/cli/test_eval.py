"""`toolpath eval` of datasets (JSONL, CSV) and of recorded traffic: results, errors as one line and exit 2."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.helpers.cli import run_cli


def test_eval_writes_results(tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text(
        json.dumps(
            {
                "prompt": "a",
                "predicted_trajectory": [{"tool_name": "x", "tool_input": {}}],
                "reference_trajectory": [{"tool_name": "x", "tool_input": {}}],
            }
        )
        + "\n"
        + json.dumps({"prompt": "b", "predicted_trajectory": "[]", "reference_trajectory": [{"tool_name": "x"}]})
        + "\n"
    )
    result = run_cli(
        tmp_path,
        "eval",
        str(data),
        "--metrics",
        "trajectory_exact_match,trajectory_single_tool_use(tool_name=x)",
        "--output",
        "out.json",
    )
    assert result.returncode == 1, result.stderr  # the means miss the metrics' own pass marks: CI is told
    assert "FAILED trajectory_exact_match: mean 0.500, needed ≥ 1 (its pass mark)" in result.stdout.splitlines()
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["summary_metrics"]["row_count"] == 2
    assert out["summary_metrics"]["trajectory_exact_match/mean"] == 0.5
    assert [r["trajectory_single_tool_use/score"] for r in out["metrics_table"]] == [1.0, 0.0]


def test_eval_with_agent(tmp_path):
    (tmp_path / "my_agent.py").write_text(
        "import toolpath\n"
        "@toolpath.tool\n"
        "def add(a: int, b: int) -> int:\n    return a + b\n"
        "def answer(prompt):\n    return str(add(2, 3))\n"
    )
    data = tmp_path / "cases.jsonl"
    data.write_text(
        json.dumps({"prompt": "2+3?", "reference_trajectory": [{"tool_name": "add", "tool_input": {"a": 2, "b": 3}}]})
        + "\n"
    )
    result = run_cli(
        tmp_path,
        "eval",
        "cases.jsonl",
        "--metrics",
        "trajectory_exact_match",
        "--agent",
        "my_agent:answer",
        "--output",
        "o.json",
        "--store",
        "sqlite:///s.db",
    )
    assert result.returncode == 0, result.stderr
    row = json.loads((tmp_path / "o.json").read_text())["metrics_table"][0]
    assert row["response"] == "5" and row["trajectory_exact_match/score"] == 1.0
    assert sqlite3.connect(tmp_path / "s.db").execute("select count(*) from tool_calls").fetchone()[0] == 1


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["eval", "missing.jsonl", "--metrics", "trajectory_exact_match"], None, "error: missing.jsonl: no such file"),
        (
            ["eval", "bad.jsonl", "--metrics", "trajectory_exact_match"],
            '{"a": 1}\n{oops\n',
            "error: bad.jsonl:2: not valid JSON",
        ),
        (
            ["eval", "bad.jsonl", "--metrics", "trajectory_exact_matsch"],
            '{"a": 1}\n',
            "error: unknown metric 'trajectory_exact_matsch'",
        ),
        (
            ["eval", "bad.jsonl", "--metrics", "trajectory_recall", "--agent", "nomodule:fn"],
            '{"a": 1}\n',
            "error: --agent 'nomodule:fn': cannot import",
        ),
        (["sessions", "list"], None, "error: store toolpath.db does not exist"),
        (["sessions", "show", "nope", "--store", "sqlite:///empty.db"], "", "error: no session 'nope' in the store"),
    ],
)
def test_errors_are_one_clear_line_and_exit_2(tmp_path, args, content, message):
    if content is not None:
        (tmp_path / ("empty.db" if "empty.db" in " ".join(args) else "bad.jsonl")).write_text(content)
    result = run_cli(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith(message), result.stderr
    assert "Traceback" not in result.stderr


def test_csv_dataset_with_json_cells_and_runs_show(tmp_path):
    (tmp_path / "cases.csv").write_text(
        "prompt,response,reference,predicted_trajectory,reference_trajectory\n"
        'a,the cat sat,the cat sat,"[{""tool_name"": ""x"", ""tool_input"": {""k"": 1}}]","[{""tool_name"": ""x"", ""tool_input"": {""k"": 1.0}}]"\n'
        'b,hello,goodbye,[],"[{""tool_name"": ""x""}]"\n'
        "c,,,,\n"
    )
    result = run_cli(
        tmp_path,
        "eval",
        "cases.csv",
        "--metrics",
        "trajectory_exact_match,rouge_1,exact_match",
        "--output",
        "o.json",
        "--store",
        "sqlite:///s.db",
    )
    assert result.returncode == 1, result.stderr
    assert "FAILED exact_match: mean 0.500, needed ≥ 1 (its pass mark)" in result.stdout.splitlines()
    table = json.loads((tmp_path / "o.json").read_text())["metrics_table"]
    assert [r["trajectory_exact_match/score"] for r in table] == [1.0, 0.0, None]
    assert [r["rouge_1/score"] for r in table] == [1.0, 0.0, None]
    assert table[2]["exact_match/explanation"] == "row has no 'response'"
    run_id = result.stdout.split("run ")[1].split(":")[0].strip()
    shown = json.loads(run_cli(tmp_path, "runs", "show", run_id, "--json", "--store", "sqlite:///s.db").stdout)
    assert shown["kind"] == "dataset" and [r["scores"]["rouge_1"] for r in shown["results"]] == [1.0, 0.0, None]


def test_eval_from_store_scores_recorded_traffic(demo_dir):
    result = run_cli(
        demo_dir,
        "eval",
        "--from-store",
        "--metrics",
        "tool_call_count,redundant_tool_calls,tool_error_rate,error_recovery",
        "--agent-name",
        "smart_home_assistant",
        "--output",
        "recorded.json",
    )
    assert result.returncode == 1, result.stderr  # the failing calls miss the pass marks of the error metrics
    assert "FAILED error_recovery: mean 0.000, needed ≥ 1 (its pass mark)" in result.stdout.splitlines()
    out = json.loads((demo_dir / "recorded.json").read_text())
    summary = out["summary_metrics"]
    assert summary["row_count"] == 24
    assert summary["tool_call_count/mean"] == pytest.approx(32 / 24)
    assert summary["redundant_tool_calls/mean"] == pytest.approx(1 / 24)  # the weather checked twice
    # two failing calls (70 °C out of range, the garage without thermostat) among 23 runs that called tools
    assert summary["tool_error_rate/mean"] == pytest.approx(2 / 23)
    assert summary["error_recovery/mean"] == 0.0
    failing = [r for r in out["metrics_table"] if r["tool_error_rate/score"]]
    assert {r["predicted_trajectory"][0]["error"] for r in failing} == {
        "toolpath.demo.smart_home.DeviceError: 70.0 °C is outside the safe range 5-30 °C",
        "toolpath.demo.smart_home.DeviceError: garage has no thermostat",
    }


def test_eval_from_store_errors(demo_dir, tmp_path):
    result = run_cli(demo_dir, "eval", "--from-store", "--metrics", "tool_call_count", "--agent-name", "nobody")
    assert result.returncode == 2 and "no recorded invocations" in result.stderr
    result = run_cli(demo_dir, "eval", "x.jsonl", "--from-store", "--metrics", "tool_call_count")
    assert result.returncode == 2 and "give no DATASET" in result.stderr


def test_a_printed_run_id_can_be_shown_and_no_store_says_so(tmp_path):
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"predicted_trajectory": [], "reference_trajectory": []}) + "\n" + json.dumps({"prompt": "x"}) + "\n"
    )
    unstored = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match")
    assert unstored.returncode == 0, unstored.stderr
    assert unstored.stdout.splitlines()[-1] == "not stored (give --store to keep this run)"
    assert "run " not in unstored.stdout and not (tmp_path / "toolpath.db").exists()
    stored = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store", "s.db")
    run_id = stored.stdout.splitlines()[-1].removeprefix("run ")
    shown = run_cli(tmp_path, "runs", "show", run_id, "--store", "s.db")
    assert shown.returncode == 0 and shown.stdout.startswith(f"run {run_id} (dataset)")
    assert "1/2" in shown.stdout  # the row without trajectories was not scored, and the summary says so


def test_unscored_rows_are_counted_with_their_reasons(tmp_path):
    rows = [
        {"predicted_trajectory": [], "reference_trajectory": [], "response": "a", "reference": "a"},
        {"predicted_trajectory": [], "response": "b"},
        {"predicted_trajectory": [], "reference_trajectory": []},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match,exact_match")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("│ trajectory_exact_match") and line.rstrip("│ ").endswith("2/3") for line in lines)
    assert any(line.startswith("│ exact_match") and line.rstrip("│ ").endswith("1/3") for line in lines)
    assert "trajectory_exact_match: 1 of 3 row(s) not scored: row has no 'reference_trajectory' (1)" in lines
    assert "exact_match: 2 of 3 row(s) not scored: row has no 'reference' (1); row has no 'response' (1)" in lines
    nothing = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match,tool_name_match(name=t)",
                      "--quiet")  # fmt: skip
    assert nothing.returncode == 1  # a metric that scored no row: nothing was checked, nothing is green
    assert nothing.stdout.splitlines()[0] == "cases.jsonl (3 rows): trajectory_exact_match 1.000 (2/3), t — (0/3)"
    assert nothing.stdout.splitlines()[1].startswith("not scored t: 3 of 3 row(s) not scored: ")
    assert nothing.stdout.splitlines()[-1] == "FAILED nothing scored by: t"
