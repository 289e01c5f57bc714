"""The session page of a multi-agent turn: a call another agent than the turn's own made names that agent, and
the turn says who answered it."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from tests.helpers.ui import ui_agents
from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store
from toolpath.ui import create_app

TURN = Invocation(
    invocation_id="multi1",
    session_id="orders-7",
    agent_name="coordinator",
    prompt="Refund order 7",
    response="Order 7 is refunded.",
    tool_calls=[
        ToolCall(name="lookup", args={"order": 7}, agent_name="coordinator"),
        ToolCall(name="transfer_to_agent", args={"agent_name": "billing_agent"}, agent_name="coordinator"),
        ToolCall(name="refund", args={"order": 7}, agent_name="billing_agent"),
    ],
    answered_by="billing_agent",
)
SINGLE = Invocation(
    invocation_id="single1", session_id="lights-1", agent_name="bot", prompt="light on", response="done",
    tool_calls=[ToolCall(name="set_light", args={"id": 1})],
)  # fmt: skip


def test_each_call_names_its_agent_when_another_made_it(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'ui.db'}")
    try:
        store.write([TURN, SINGLE])
        app = create_app(store, evalsets=tmp_path / "evalsets", agents=ui_agents())
        client = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
        page = client.get("/session", params={"id": "orders-7"})
        plain = client.get("/session", params={"id": "lights-1"})
    finally:
        store.close()
    assert page.status_code == 200
    calls = re.findall(r'<li class="call" data-tool="(\w+)" data-agent="(\w+)">(.*?)</li>', page.text, re.S)
    assert [(tool, agent) for tool, agent, _ in calls] == [
        ("lookup", "coordinator"),
        ("transfer_to_agent", "coordinator"),
        ("refund", "billing_agent"),
    ]
    tags = [re.findall(r'class="badge call-agent"[^>]*>(\w+)<', body) for _, _, body in calls]
    assert tags == [[], [], ["billing_agent"]]  # the turn's own agent is not repeated on its calls
    assert re.search(r'class="muted answered-by">answered by billing_agent<', page.text)
    assert plain.status_code == 200
    assert "call-agent" not in plain.text and "answered-by" not in plain.text
