"""`toolpath report` of an agent run, in headless Chromium at 1280 px: every score passes or fails by its metric's
threshold and direction (lower is better for latency, failures, counts and error rates), the "only failing"
toggle hides the rows that passed, and the trajectory column is wide enough to read."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers.chromium import chromium_dom
from tests.helpers.cli import run_cli

LONG_CITY = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"
AGENTS = """
import toolpath

@toolpath.tool
def get_weather(city: str, units: str = "celsius") -> dict:
    return {"city": city, "sky": "sunny", "units": units}

@toolpath.agent(name="weather")
def answer(prompt: str) -> str:
    if "crash" in prompt:
        raise RuntimeError("model unavailable")
    city = prompt.split()[-1]
    get_weather(city)
    if "twice" in prompt:
        get_weather(city)
    return f"Sunny in {city}."
"""
METRICS = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_f1",
    "tool_argument_similarity",
    "redundant_tool_calls",
    "tool_call_count",
    "tool_error_rate",
    "tool_loop_detected",
]


def call(city: str, **args: str) -> dict:
    return {"tool_name": "get_weather", "tool_input": {"city": city, **args}}


CASES = [  # (case_id, prompt, reference trajectory, expected row status)
    ("perfect", "weather in Paris", [call("Paris")], "ok"),
    ("extra-call", "twice weather in Oslo", [call("Oslo")], "bad"),
    ("only-redundant", "twice weather in Rome", [call("Rome"), call("Rome")], "bad"),  # exact, but a call repeated
    ("agent-failed", "crash in Lima", [], "bad"),
    ("long-arguments", f"weather in {LONG_CITY}", [call(LONG_CITY, units="fahrenheit")], "bad"),
]
MEASURE = """<script>
document.querySelectorAll('details').forEach(function (d) { d.open = true; });
var width = function (e) { return e.getBoundingClientRect().width; };
var layout = {
  viewport: window.innerWidth,
  page: document.documentElement.scrollWidth,
  trajectories: Array.from(document.querySelectorAll('td.trajectories .traj')).map(width),
  right: Math.max.apply(null, Array.from(document.querySelectorAll('td.trajectories .call')).map(function (e) {
    return e.getBoundingClientRect().right; })),
  calls: Array.from(document.querySelectorAll('td.trajectories .call')).map(width),
  headers: Array.from(document.querySelectorAll('th.metric-name')).map(width)
};
var box = document.getElementById('only-failing');
box.checked = true;
box.dispatchEvent(new Event('change'));
layout.hidden = Array.from(document.querySelectorAll('tr.case.hidden')).map(function (r) { return r.dataset.case; });
document.body.setAttribute('data-layout', JSON.stringify(layout));
</script></body>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """An agent run over CASES, its HTML report, and the report as Chromium laid it out at 1280 px."""
    cwd = tmp_path_factory.mktemp("report")
    (cwd / "agents.py").write_text(AGENTS)
    rows = [{"case_id": c, "prompt": p, "reference_trajectory": ref} for c, p, ref, _ in CASES]
    (cwd / "cases.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    ran = run_cli(cwd, "eval", "cases.jsonl", "--agent", "agents:answer", "--metrics", ",".join(METRICS),
                  "--store", "s.db", "--quiet")  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr  # some means miss their pass marks: what the report shows
    written = run_cli(cwd, "report", "--html", "report.html", "--store", "s.db")
    assert written.returncode == 0, written.stderr
    page = (cwd / "report.html").read_text()
    (cwd / "measured.html").write_text(page.replace("</body>", MEASURE))
    dom = chromium_dom(cwd / "measured.html", cwd / "report.png")
    layout = json.loads(re.search(r'data-layout="([^"]+)"', dom).group(1).replace("&quot;", '"'))
    return dom, layout


def cell_classes(dom: str, case_id: str) -> dict[str, str]:
    row = re.search(rf'<tr class="case[^"]*" data-case="{case_id}".*?</tr>', dom, re.S).group(0)
    return dict((m, c) for c, m in re.findall(r'<td class="num (\w+)" data-metric="(\w+)"', row))


def test_rows_pass_or_fail_by_each_metric_s_threshold_and_direction(report):
    dom, _ = report
    statuses = dict(re.findall(r'<tr class="case[^"]*" data-case="([\w-]+)" data-status="(\w+)"', dom))
    assert statuses == {case_id: status for case_id, _, _, status in CASES}
    perfect = cell_classes(dom, "perfect")
    # latency only measures (no pass mark); no failure, no repeated call and no tool error pass, lower being better
    assert perfect["latency_in_seconds"] == "neutral" and perfect["tool_call_count"] == "neutral"
    assert {perfect[m] for m in ("failure", "redundant_tool_calls", "tool_error_rate", "tool_loop_detected")} == {
        "pass"
    }
    assert perfect["trajectory_exact_match"] == "pass"
    redundant = cell_classes(dom, "only-redundant")
    assert redundant["trajectory_exact_match"] == "pass" and redundant["redundant_tool_calls"] == "fail"
    failed = cell_classes(dom, "agent-failed")
    assert failed["failure"] == "fail" and failed["latency_in_seconds"] == "na"  # no latency when the run raised
    assert re.search(r'data-case="perfect"[^>]*><td>perfect</td><td><span class="badge pass">passed', dom)


def test_only_failing_hides_the_rows_that_passed(report):
    _, layout = report
    assert layout["hidden"] == ["perfect"]


def test_trajectory_columns_are_readable_at_1280_px(report):
    _, layout = report
    assert layout["viewport"] == 1280
    assert layout["page"] <= 1280  # many metric columns scroll inside their section, the page does not widen
    # each case's trajectories get a full-width row under its scores: both sides wide, and on the screen
    assert len(layout["trajectories"]) >= len(CASES) and min(layout["trajectories"]) >= 900
    assert layout["right"] <= 1280
    # a call is a readable line or two, never a one-character-wide column
    assert layout["calls"] and min(layout["calls"]) >= 400
    assert max(layout["headers"]) <= 120  # metric names wrap at their underscores
