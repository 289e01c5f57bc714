"""Every command prints stored and given text as it is. Session ids, agent and tool names, prompts, arguments,
answers, errors, metric names and reasons, eval-set and case ids, dataset and file names holding rich's markup
(``[red]x[/red]``, ``[bold]``, ``[link=…]``), an emoji code (``:smile:``) or a trailing backslash are shown as
stored: never styled away, turned into a link or an emoji, or cut where a backslash met a closing tag; a value
wider than its column is folded onto more lines, never cut.

Each value carries half of those marks and stays short enough for the column it is shown in (or the terminal is
made wide enough), so that a table never wraps it; the values each command is fed carry all of them (a file
name all but a closing tag, which would need a ``/``). With rich's default console, every test here but the
one of the error line fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import CliResult, run_cli, run_script

WIDE = {"COLUMNS": "400"}
"""A terminal wide enough for the longest cell of a session's turns (a tool call with its arguments) or of an
eval set's cases on one line."""

RED, BOLD, SMILE, LINK = "[red]x[/red]", "[bold]", ":smile:", "[link=https://e.x]l[/link]"


def odd(tag: str, first: bool = True) -> str:
    """``tag`` and half of the marks, ending in a backslash: ``first`` the red tag and the emoji code, else the
    bold tag and the link."""
    return f"{tag}{RED}{SMILE}\\" if first else f"{tag}{BOLD}{LINK}\\"


def file_name(tag: str) -> str:
    """``tag`` and every mark a file name can hold (no ``/``, so no closing tag), ending in a backslash."""
    return f"{tag}[red]x[bold]{SMILE}[link=e]l\\"


SESSION, OTHER_SESSION = odd("s1"), odd("s2", first=False)
AGENT, HELPER = odd("a"), odd("h", first=False)
TOOL, FAILING_TOOL = odd("t", first=False), odd("f")
PROMPT, OTHER_PROMPT = odd("p"), odd("q", first=False)
PLACE, NEW_PLACE = odd("v"), odd("w", first=False)
ANSWER, NEW_ANSWER = odd("r", first=False), odd("n")
ERROR = odd("e", first=False)

AGENTS = f"""
import toolpath

@toolpath.tool(name={TOOL!r})
def look(place: str) -> dict:
    return {{"place": place}}

@toolpath.tool(name={FAILING_TOOL!r})
def fail(level: int) -> str:
    raise ValueError({ERROR!r})

@toolpath.agent(name={HELPER!r})
def helper(place: str) -> str:
    look(place)
    return "helped"

def plan(prompt: str, place: str, answer: str) -> str:
    if prompt == {OTHER_PROMPT!r}:
        helper(place)
        try:
            fail(3)
        except ValueError:
            pass
        return answer
    look(place)
    return answer

@toolpath.agent(name={AGENT!r})
def v1(prompt: str) -> str:
    return plan(prompt, {PLACE!r}, {ANSWER!r})

@toolpath.agent(name={AGENT!r})
def v2(prompt: str) -> str:
    return plan(prompt, {NEW_PLACE!r}, {NEW_ANSWER!r})

def zero(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    from google.adk.evaluation.evaluator import EvalStatus, EvaluationResult

    return EvaluationResult(overall_score=0.0, overall_eval_status=EvalStatus.FAILED)

@toolpath.agent(name={AGENT!r})
def judged(prompt: str) -> str:
    if prompt == {OTHER_PROMPT!r}:
        fail(3)
    return plan(prompt, {NEW_PLACE!r}, {NEW_ANSWER!r})
"""

RECORD = f"""
import sys, toolpath
from odd_agents import v1
tracing = toolpath.init(store=sys.argv[1], online={{"metrics": ["tool_call_count"], "poll_seconds": 0.05}})
v1({PROMPT!r}, session_id={SESSION!r})
v1({OTHER_PROMPT!r}, session_id={OTHER_SESSION!r})
toolpath.flush()
assert tracing.online.drain(20)
toolpath.shutdown()
"""


def shown_as_stored(result: CliResult, *values: str) -> None:
    """Each of ``values`` is in the command's output as it is, and no emoji was made of ``:smile:``."""
    out = result.stdout + result.stderr
    missing = [value for value in values if value not in out]
    assert missing == [], f"not shown as stored: {missing}\n{out}"
    assert "😄" not in out


@pytest.fixture
def recorded(tmp_path) -> Path:
    """``odd_agents.py`` and a store (``s.db``) of two sessions recorded from ``v1``, scored online."""
    (tmp_path / "odd_agents.py").write_text(AGENTS)
    (tmp_path / "record.py").write_text(RECORD)
    run_script(tmp_path, "record.py", "sqlite:///s.db")
    return tmp_path


def test_sessions_list_and_show(recorded):
    listed = run_cli(recorded, "sessions", "list", "--store", "sqlite:///s.db")
    assert listed.returncode == 0, listed.stderr
    shown_as_stored(listed, SESSION, OTHER_SESSION, AGENT)
    first = run_cli(recorded, "sessions", "show", SESSION, "--store", "sqlite:///s.db", env=WIDE)
    assert first.returncode == 0, first.stderr
    shown_as_stored(first, f"Session {SESSION}", PROMPT, f"{TOOL}(place={PLACE!r})", ANSWER)
    other = run_cli(recorded, "sessions", "show", OTHER_SESSION, "--store", "sqlite:///s.db", env=WIDE)
    assert other.returncode == 0, other.stderr
    shown_as_stored(
        other,
        OTHER_PROMPT,
        f"[{HELPER}] {TOOL}(place={PLACE!r})",  # a sub-agent's call, named by its agent
        f"{FAILING_TOOL}(level=3) ✗ ValueError: {ERROR}",
        ANSWER,
    )
    assert "tool_call_count 2.000" in " ".join(other.stdout.split())  # the online score, whose cell is plain too


def column(table: str, index: int) -> str:
    """The text of the ``index``-th column of a rich table's rows, its lines joined (a folded word whole again)."""
    return "".join(line.split("│")[index].strip() for line in table.splitlines() if line.startswith("│"))


def test_long_values_are_folded_never_cut(recorded):
    """In a terminal narrower than a turn's tool call, or a run's dataset name, the cell goes on over more lines:
    nothing is cut off with an ellipsis."""
    narrow = {"COLUMNS": "100"}
    shown = run_cli(recorded, "sessions", "show", SESSION, "--store", "sqlite:///s.db", env=narrow)
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    assert column(shown.stdout, 3) == f"{TOOL}(place={PLACE!r})"
    dataset = recorded / f"{file_name('a-long-dataset-name')}.jsonl"
    dataset.write_text(json.dumps({"prompt": PROMPT, "reference_trajectory": [{"tool_name": TOOL}]}) + "\n")
    ran = run_cli(recorded, "eval", dataset.name, "--agent", "odd_agents:v1", "--metrics", "trajectory_exact_match",
                  "--store", "sqlite:///s.db")  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    listed = run_cli(recorded, "runs", "list", "--store", "sqlite:///s.db", env=narrow)
    assert column(listed.stdout, 3) == dataset.name


def test_watch(recorded):
    result = run_cli(recorded, "watch", "--once", "--store", "sqlite:///s.db")
    assert result.returncode == 0, result.stderr
    shown_as_stored(result, AGENT, PROMPT, OTHER_PROMPT)


def test_an_error_line_names_the_value_as_given(recorded):
    result = run_cli(recorded, "sessions", "show", odd("missing"), "--store", "sqlite:///s.db")
    assert result.returncode == 2
    assert result.stderr == f"error: no session {odd('missing')!r} in the store\n"


def test_replay_runs_report_and_export(recorded):
    store = ("--store", "sqlite:///s.db")
    replay = run_cli(recorded, "replay", "--agent", "odd_agents:v2", *store, "--threshold", "trajectory_exact_match=1")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    table = replay.stdout.split("Replayed against recorded")[0]
    shown_as_stored(
        replay, SESSION, OTHER_SESSION, PROMPT, OTHER_PROMPT, f"~ {TOOL} arguments: changed place", f"{ANSWER!r}"
    )
    assert f"response: {ANSWER!r} → {NEW_ANSWER!r}" in table
    assert "FAILED trajectory_exact_match: mean 0.000, needed at least 1" in replay.stdout

    dataset = recorded / f"{file_name('d')}.jsonl"
    rows = [{"case_id": odd("c"), "prompt": PROMPT, "reference_trajectory": [{"tool_name": TOOL}]}]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    ran = run_cli(recorded, "eval", dataset.name, "--agent", "odd_agents:v1", "--metrics", "trajectory_exact_match",
                  *store)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    listed = run_cli(recorded, "runs", "list", *store)
    shown_as_stored(listed, dataset.name)
    [run] = json.loads(run_cli(recorded, "runs", "list", "--json", "--limit", "1", *store).stdout)
    shown = run_cli(recorded, "runs", "show", run["run_id"], *store)
    assert f"of {dataset.name}, agent odd_agents:v1" in shown.stdout, shown.stdout

    html = file_name("o")
    reported = run_cli(recorded, "report", "--html", html, *store)
    assert reported.returncode == 0, reported.stderr
    assert f"wrote {html} (dataset {run['run_id']}, 1 row(s))" in reported.stdout
    output = file_name("x")
    exported = run_cli(recorded, "export", "--format", "jsonl", "--session", SESSION, "--output", output, *store)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"wrote 1 session(s), 1 turn(s) to {output}\n"
    assert json.loads((recorded / output).read_text())["prompt"] == PROMPT


def test_eval_set_report(tmp_path):
    """An eval set's ids, its cases' prompts, expected and actual calls and answers, and an agent's error, in the
    cases table and the lines under it."""
    (tmp_path / "odd_agents.py").write_text(AGENTS)
    set_id, wrong, crashed = odd("set"), odd("c1", first=False), odd("c2")

    def turn(prompt: str) -> dict:
        return {
            "user_content": {"role": "user", "parts": [{"text": prompt}]},
            "final_response": {"role": "model", "parts": [{"text": ANSWER}]},
            "intermediate_data": {"tool_uses": [{"name": TOOL, "args": {"place": PLACE}}], "tool_responses": []},
        }

    cases = [
        {"eval_id": wrong, "conversation": [turn(PROMPT)]},
        {"eval_id": crashed, "conversation": [turn(OTHER_PROMPT)]},
    ]
    (tmp_path / "odd.evalset.json").write_text(json.dumps({"eval_set_id": set_id, "eval_cases": cases}))
    metric = odd("m", first=False)  # an ADK custom metric's name, given by the config
    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.9, metric: 0.5}
    config = {"criteria": criteria, "custom_metrics": {metric: {"code_config": {"name": "odd_agents.zero"}}}}
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    result = run_cli(tmp_path, "eval", "odd.evalset.json", "--agent", "odd_agents:judged", env=WIDE)
    assert result.returncode == 1, result.stdout + result.stderr
    error = f"turn 1: the agent failed: ValueError: {ERROR}"
    shown_as_stored(result, set_id, wrong, crashed, ERROR, f"┃ {metric} ┃")
    lines = result.stdout.split("\n")
    assert f"FAILED {set_id} / {wrong}" in lines and f"FAILED {set_id} / {crashed}" in lines
    assert f"  error: {error}" in lines
    assert f"    turn 1: {PROMPT!r}" in lines and f"    turn 1: {OTHER_PROMPT!r}" in lines
    assert f"      expected tools: {TOOL}(place={PLACE!r})" in lines
    assert f"      actual tools:   {TOOL}(place={NEW_PLACE!r})" in lines
    assert f"      actual tools: {FAILING_TOOL}(level=3) ✗ ValueError: {ERROR}" in lines
    assert f"      expected: {ANSWER!r}" in lines and f"      actual:   {NEW_ANSWER!r}" in lines
    assert f"  {metric}: 0.000 < threshold 0.5" in lines


def test_ingest_names_its_files_as_given(tmp_path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from tests.helpers import SPANS
    from tests.helpers.trace_files import write_json_lines

    request = ExportTraceServiceRequest.FromString((SPANS / "adk-v2.shared.otlp.pb").read_bytes())
    path = write_json_lines(tmp_path / f"{file_name('t')}.jsonl", request)
    result = run_cli(tmp_path, "ingest", path.name, "--store", "sqlite:///s.db")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"read {path.name} (otlp-json-lines): ")
    assert "😄" not in result.stdout


def test_the_demos_tables_show_rows_as_stored():
    """The worst-cases and partial-credit tables `toolpath demo` prints, over rows whose ids, prompts, tool names
    and arguments hold the marks (the demo's own rows hold none), printed through the commands' console."""
    from toolpath.cli.display import partial_credit_table, worst_cases_table
    from toolpath.cli.output import make_console

    reference = [{"tool_name": TOOL, "tool_input": {"place": PLACE}}, {"tool_name": FAILING_TOOL, "tool_input": {}}]
    row = {
        "case_id": odd("c"),
        "prompt": OTHER_PROMPT,
        "reference_trajectory": reference,
        "predicted_trajectory": [{"tool_name": TOOL, "tool_input": {"place": NEW_PLACE}}],
        "trajectory_exact_match/score": 0.0,
        "trajectory_f1/score": 0.5,
        "tool_argument_similarity/score": 0.25,
    }
    console = make_console()
    console.width = 300
    with console.capture() as captured:
        console.print(worst_cases_table([row], ["trajectory_exact_match"], 1))
        console.print(partial_credit_table([row]))
    out = captured.get()
    assert "😄" not in out
    # what differs: the argument's two values as JSON, and the call left out
    for value in (odd("c"), OTHER_PROMPT, json.dumps(PLACE), json.dumps(NEW_PLACE), f"{FAILING_TOOL} (was call 2)"):
        assert out.count(value) == 2, (value, out)


GRADER = f"""#!{sys.executable}
import json
print(json.dumps({{"score": None, "explanation": {odd("why") + odd("why", first=False)!r}}}))
"""


def test_eval_summary_gives_a_metrics_reasons_as_given(tmp_path):
    """The reason an executable metric gave for not scoring a row is printed under the summary, with and without
    --quiet."""
    grader = tmp_path / "grade.py"
    grader.write_text(GRADER)
    grader.chmod(0o755)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"prompt": PROMPT, "reference_trajectory": []}) + "\n")
    for quiet in ((), ("--quiet",)):
        result = run_cli(tmp_path, "eval", "cases.jsonl", "--metrics", "exec:./grade.py", *quiet)
        assert result.returncode == 1, result.stdout + result.stderr  # the metric scored nothing
        reason = odd("why") + odd("why", first=False)
        shown_as_stored(result, f"grade: 1 of 1 row(s) not scored: {reason} (1)")
