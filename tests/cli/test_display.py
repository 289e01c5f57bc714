"""What the commands print: ids never cut, differing values shown where they differ, readable rates."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from rich.console import Console

from tests.helpers.cli import run_cli
from toolpath.cli import output
from toolpath.cli.display import contrast, why
from toolpath.cli.output import format_rate


@pytest.mark.parametrize(
    ("expected", "got", "shown"),
    [
        ("light-hallway-2", "light-hallway-1", '"…hallway-2" → "…hallway-1"'),
        ("door-back", "door-front", '"door-back" → "door-front"'),
        (21.1, 70.0, "21.1 → 70.0"),
    ],
)
def test_values_that_differ_show_where_they_differ(expected, got, shown):
    assert contrast(expected, got) == shown


def test_why_names_the_differing_argument_values():
    row = {
        "predicted_trajectory": [{"tool_name": "set_device_info", "tool_input": {"device_id": "light-kitchen-2"}}],
        "reference_trajectory": [
            {"tool_name": "set_device_info", "tool_input": {"device_id": "light-kitchen-1", "on": False}},
            {"tool_name": "send_notification", "tool_input": {}},
        ],
    }
    assert (
        why(row, []) == 'set_device_info: device_id "…kitchen-1" → "…kitchen-2", -on; - send_notification (was call 2)'
    )
    assert why({**row, "error": "RuntimeError: boom"}, []) == "RuntimeError: boom"


def test_the_progress_bar_starts_again_for_the_scoring_phase(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=out, force_terminal=True, width=120))
    with output.progress(3, "running the agent", quiet=False) as bar:
        for _ in range(3):
            bar.advance()
        bar.phase("scoring rows", 3)
        bar.phase("scoring rows", 3)  # the phase already shown: no reset
        bar.advance()
    final = out.getvalue().rsplit("running the agent", 1)[-1]
    assert "scoring rows" in final and "1/3" in final and "4/3" not in out.getvalue()


def test_rates_are_readable():
    assert format_rate(4898.283370361881) == "4898.3/s"
    assert (format_rate(12.34), format_rate(0.25), format_rate(None)) == ("12.3/s", "0.25/s", "")


def test_ids_are_never_cut_in_a_narrow_terminal(tmp_path, demo_dir):
    shutil.copy(demo_dir / "toolpath.db", tmp_path / "toolpath.db")
    sessions = json.loads(run_cli(tmp_path, "sessions", "list", "--json").stdout)
    runs = json.loads(run_cli(tmp_path, "runs", "list", "--json").stdout)
    narrow = {"COLUMNS": "70"}
    listed = run_cli(tmp_path, "sessions", "list", env=narrow).stdout
    assert all(s["session_id"] in listed for s in sessions)
    listed = run_cli(tmp_path, "runs", "list", env=narrow).stdout
    assert all(r["run_id"] in listed for r in runs)
