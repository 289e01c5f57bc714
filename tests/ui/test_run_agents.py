"""The UI runs only the agents its operator named at start-up: a request can pick one of them by name, and can
never make the UI import a module, a file or call any other callable (a request's fields are data, not code)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient

from tests.helpers.cli import run_cli
from tests.helpers.ui import DEMO_AGENT, ui_agents
from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store
from toolpath.ui import create_app

BASE = "http://127.0.0.1:8765"
FAKED = {"origin": BASE}  # what a non-browser client on this machine sends to pass the Origin check


@pytest.fixture
def eval_set_client(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'ui.db'}")
    store.write(
        [
            Invocation(
                invocation_id="inv1",
                session_id="sess-1",
                agent_name="bot",
                prompt="turn the light on",
                response="done",
                tool_calls=[ToolCall(name="set_light", args={"id": 1}, result={"ok": True})],
                started_at=datetime(2026, 5, 1, 10, 0, tzinfo=UTC),
            )
        ]
    )

    def make(agents):
        app = create_app(store, evalsets=tmp_path / "evalsets", agents=agents)
        c = TestClient(app, base_url=BASE, follow_redirects=False)
        added = c.post("/evalsets/add", data={"session_id": "sess-1", "new_evalset": "cases"}, headers=FAKED)
        assert added.status_code == 303, added.text
        return c

    yield make
    store.close()


def test_a_request_cannot_choose_the_code_that_runs(eval_set_client, tmp_path):
    planted = tmp_path / "planted_agent.py"
    marker = tmp_path / "imported"
    planted.write_text(f"open({str(marker)!r}, 'w').close()\ndef agent(prompt):\n    return prompt\n")
    c = eval_set_client(ui_agents())
    for named in (
        str(planted),  # a file path: its top-level code would run on import
        f"{planted}:agent",
        str(tmp_path),  # an agent folder
        "os:system",
        "subprocess:getoutput",
        "builtins:exec",
        "pty:spawn",
        "tests.helpers.ui:exiting_agent_not_started",  # importable, but not named at start-up
        "",
    ):
        reply = c.post("/evalsets/cases/run", data={"agent": named}, headers=FAKED)
        assert reply.status_code == 400, (named, reply.status_code)
        assert "not an agent this UI was started with" in reply.text
    assert not marker.exists()
    assert "planted_agent" not in sys.modules


def test_an_agent_named_at_start_up_runs(eval_set_client):
    c = eval_set_client(ui_agents())
    page = c.get("/evalsets/cases")
    assert f'<option value="{DEMO_AGENT}">' in page.text
    reply = c.post("/evalsets/cases/run", data={"agent": DEMO_AGENT}, headers=FAKED)
    assert reply.status_code == 303 and reply.headers["location"].startswith("/jobs/")


def test_a_ui_started_with_no_agent_runs_none(eval_set_client):
    c = eval_set_client({})
    assert 'id="no-agents"' in c.get("/evalsets/cases").text
    reply = c.post("/evalsets/cases/run", data={"agent": DEMO_AGENT}, headers=FAKED)
    assert reply.status_code == 400 and "it runs: none" in reply.text


def test_an_agent_that_cannot_load_stops_the_ui_before_it_serves(tmp_path):
    Store(f"sqlite:///{tmp_path / 't.db'}").close()
    result = run_cli(tmp_path, "ui", "--store", f"sqlite:///{tmp_path / 't.db'}", "--agent", "no_such_module:agent")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: --agent 'no_such_module:agent': cannot import 'no_such_module' (No module named 'no_such_module')"
    ]
