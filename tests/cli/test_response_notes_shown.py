"""A turn whose agent answered without text has a null response and a reason (``response_note``); every view that
shows the response shows that reason in its place: ``sessions show``, ``runs show``, ``toolpath report``, the rows
of ``eval --from-store`` and a simulated conversation's printout."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from rich.console import Console

from tests.helpers.cli import run_cli
from toolpath.cli.display import no_response, response_notes
from toolpath.cli.evalset_display import _print_conversation

REASON = "the agent returned 15 bytes, not text"
SHOWN = f"(no response: {REASON})"
STORE = "sqlite:///s.db"


def _evaluated(tmp_path) -> str:
    """An agent answering bytes, evaluated (and traced) into the store; its run id."""
    (tmp_path / "bytes_agent.py").write_text("def answer(prompt):\n    return b'hello, bytes!!!'\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"prompt": "say hello", "reference": "hello"}) + "\n")
    result = run_cli(tmp_path, "eval", "cases.jsonl", "--agent", "bytes_agent:answer", "--metrics", "exact_match",
                     "--allow-empty", "--store", STORE)  # fmt: skip
    found = re.search(r"run ([0-9a-f]+)", result.stdout)
    assert found is not None, result.stdout + result.stderr
    return found.group(1)


def test_every_view_of_a_turn_without_text_says_why(tmp_path):
    run_id = _evaluated(tmp_path)

    [session] = json.loads(run_cli(tmp_path, "sessions", "list", "--json", "--store", STORE).stdout)
    shown = run_cli(tmp_path, "sessions", "show", session["session_id"], "--store", STORE)
    assert shown.returncode == 0, shown.stderr
    assert SHOWN in " ".join(shown.stdout.split())  # (the table may fold it)

    runs = run_cli(tmp_path, "runs", "show", run_id, "--store", STORE)
    assert runs.returncode == 0, runs.stderr
    assert f"case 0: {SHOWN}" in runs.stdout  # (a dataset row's case id: its position)

    report = run_cli(tmp_path, "report", "--run", run_id, "--html", "r.html", "--store", STORE)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text()
    assert f"response: <span class='na response-note'>{SHOWN}</span>" in page

    rescored = run_cli(tmp_path, "eval", "--from-store", "--metrics", "exact_match", "--output", "o.json",
                       "--allow-empty", "--store", STORE)  # fmt: skip
    [row] = json.loads((tmp_path / "o.json").read_text())["metrics_table"]
    assert (row["response"], row["response_note"]) == (None, REASON), rescored.stderr
    assert row["exact_match/explanation"] == f"row has no 'response': {REASON}"


def test_a_text_answer_is_shown_as_it_is_and_no_note_is_made_up():
    assert no_response(None) is None and no_response("") is None
    results = [
        {"case_id": None, "row": {"response": "hi", "response_note": REASON}},  # a response: the note is not shown
        {"case_id": None, "row": {"response": None}},  # null with no reason: nothing to say
        {"case_id": "c1", "row": {"turns": [[{"response": "ok"}, {"response": None, "response_note": REASON}]]}},
    ]
    assert response_notes(results) == [f"case c1, turn 2: {SHOWN}"]


def test_a_simulated_conversation_says_why_the_agent_said_nothing():
    console = Console(width=200, record=True)
    turns = [[{"prompt": "hi", "response": None, "response_note": REASON}, {"prompt": "and?", "response": "ok"}]]
    _print_conversation(console, SimpleNamespace(eval_set_id="set", eval_id="case", turns=turns))
    lines = [line.strip() for line in console.export_text().splitlines()]
    assert lines[1:] == ["1. simulated user: hi", f"agent: {SHOWN}", "2. simulated user: and?", "agent: ok"]


def test_online_scoring_gives_the_reason_too(tmp_path):
    """A stored turn without text, scored online: the response metric's result says why, as offline."""
    from toolpath.evaluation.online import OnlineEvaluator
    from toolpath.model import Invocation
    from toolpath.store.online_reads import latest_scored
    from toolpath.store.store import Store

    (tmp_path / "golden.jsonl").write_text(json.dumps({"prompt": "say hello", "reference": "hello"}) + "\n")
    store = Store(f"sqlite:///{tmp_path / 'o.db'}")
    config = {"metrics": ["exact_match"], "reference_dataset": str(tmp_path / "golden.jsonl"), "poll_seconds": 0.02}
    online = OnlineEvaluator(store, config).start()
    try:
        store.write([Invocation(invocation_id="00000000000000b7", session_id="s", trace_id="b7" * 16,
                                prompt="say hello", response=None,
                                attributes={"toolpath.agent.response_not_text": REASON})])  # fmt: skip
        assert online.drain(30)
    finally:
        online.stop()
    [scored] = latest_scored(store)
    store.close()
    result = scored["scores"]["exact_match"]
    assert (result["score"], result["label"]) == (None, "error")
    assert result["explanation"] == f"row has no 'response': {REASON}"
