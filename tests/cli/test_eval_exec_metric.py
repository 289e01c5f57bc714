"""`--metrics exec:./my_metric` — a metric in any language: the executable gets each row as JSON on stdin and
writes `{"score", "explanation"}`; a row it cannot score (non-zero exit, timeout, bad output) gets null with a
clear reason and the others go on; it is run directly, never through a shell."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.helpers.cli import run_cli

METRIC = f"""#!{sys.executable}
import json, sys, time
row = json.load(sys.stdin)
if row["prompt"] == "crash":
    print("the grader broke", file=sys.stderr)
    sys.exit(3)
if row["prompt"] == "slow":
    time.sleep(5)
if row["prompt"] == "chatty":
    print("hello")
    sys.exit(0)
if row["prompt"] == "unknown":
    print(json.dumps({{"score": None, "explanation": "cannot tell"}}))
    sys.exit(0)
predicted = [c["tool_name"] for c in row["predicted_trajectory"]]
expected = [c["tool_name"] for c in row["reference_trajectory"]]
print(json.dumps({{"score": float(predicted == expected), "explanation": f"{{predicted}} vs {{expected}}"}}))
"""

ROWS = [
    ("same", [{"tool_name": "a", "tool_input": {"x": 1}}], [{"tool_name": "a"}]),
    ("other", [{"tool_name": "b"}], [{"tool_name": "a"}]),
    ("crash", [], []),
    ("slow", [], []),
    ("chatty", [], []),
    ("unknown", [], []),
]


def _write(cwd: Path, name: str = "grade.py", text: str = METRIC) -> Path:
    path = cwd / name
    path.write_text(text)
    path.chmod(0o755)
    (cwd / "cases.jsonl").write_text(
        "".join(
            json.dumps({"prompt": p, "predicted_trajectory": pr, "reference_trajectory": r}) + "\n" for p, pr, r in ROWS
        )
    )
    return path


def test_an_executable_scores_each_row_and_says_why_it_could_not(tmp_path):
    _write(tmp_path)
    result = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "exec:./grade.py(timeout=1)", "--output", "o.json")
    table = json.loads((tmp_path / "o.json").read_text())["metrics_table"]
    got = {r["prompt"]: (r["grade/score"], r["grade/explanation"]) for r in table}
    assert got["same"] == (1.0, "['a'] vs ['a']") and got["other"] == (0.0, "['b'] vs ['a']")
    assert got["crash"] == (None, "grade failed: MetricError: grade.py exited with 3: the grader broke")
    assert got["slow"] == (None, "grade failed: MetricError: grade.py timed out after 1s")
    assert got["chatty"] == (None, "grade failed: MetricError: grade.py wrote 'hello', not a JSON object with a score")
    assert got["unknown"] == (None, "cannot tell")
    assert result.returncode == 0, result.stdout + result.stderr  # an exec metric has no pass mark of its own
    assert "grade: 4 of 6 row(s) not scored" in result.stdout


def test_a_threshold_gates_it_and_name_renames_it(tmp_path):
    _write(tmp_path)
    result = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "exec:./grade.py(name=names_equal, timeout=1)",
                     "--threshold", "names_equal=0.75")  # fmt: skip
    assert result.returncode == 1
    assert "FAILED names_equal: mean 0.500, needed ≥ 0.75 (--threshold)" in result.stdout.splitlines()


def test_it_is_run_directly_never_through_a_shell(tmp_path):
    odd = _write(tmp_path, "grade;touch pwned.py")
    result = run_cli(
        tmp_path, "eval", "cases.jsonl", "--metrics", f"exec:{odd}(name=g, timeout=1)", "--output", "o.json"
    )
    table = json.loads((tmp_path / "o.json").read_text())["metrics_table"]
    assert table[0]["g/score"] == 1.0, result.stdout
    assert not (tmp_path / "pwned.py").exists() and not (tmp_path / "pwned").exists()


def test_a_missing_or_not_executable_file_is_one_error_before_anything(tmp_path):
    path = _write(tmp_path)
    os.chmod(path, 0o644)
    for spec, message in (
        ("exec:./grade.py", "exec:./grade.py: not executable"),
        ("exec:./nothing.sh", "exec:./nothing.sh: no such file"),
        ("exec:./grade.py(timeout=0)", "exec:./grade.py: timeout must be"),
        ("exec:./grade.py(shell=true)", "exec:./grade.py(shell=true): takes name= and timeout="),
    ):
        result = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", spec, "--output", "o.json")
        assert result.returncode == 2 and result.stderr.startswith(f"error: {message}"), result.stderr
        assert not (tmp_path / "o.json").exists()
