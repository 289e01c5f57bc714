"""The UI's guards and bad input, through Starlette's TestClient over a small real store: the token (header, or
the cookie a ``?token=`` link sets), same-origin checks on changes (CSRF), the Host check on loopback, 404s, and
bad parameters as one 400 message, never a 500."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient

from tests.helpers.ui import DEMO_AGENT, ui_agents
from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store
from toolpath.ui import create_app

BASE = "http://127.0.0.1:8765"
SAME_ORIGIN = {"origin": BASE}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    the_store = Store(f"sqlite:///{tmp_path_factory.mktemp('ui-app') / 'ui.db'}")
    the_store.write(
        [
            Invocation(
                invocation_id=f"inv{i}",
                session_id=f"sess-{i}",
                agent_name="bot",
                prompt=f"turn the light {i} on",
                response="done",
                tool_calls=[ToolCall(name="set_light", args={"id": i}, result={"ok": True})],
                started_at=datetime(2026, 5, 1, 10, i, tzinfo=UTC),
                failure=int(i == 2),
                error="ValueError: broken" if i == 2 else None,
            )
            for i in range(5)
        ]
    )
    yield the_store
    the_store.close()


def client(store, tmp_path, *, token=None, base=BASE) -> TestClient:
    app = create_app(store, evalsets=tmp_path / "evalsets", agents=ui_agents(), token=token)
    return TestClient(app, base_url=base, follow_redirects=False)


def test_pages_answer_with_a_strict_content_security_policy(store, tmp_path):
    c = client(store, tmp_path)
    for path in ("/sessions", "/session?id=sess-1", "/runs", "/evalsets", "/online"):
        reply = c.get(path)
        assert reply.status_code == 200, (path, reply.text)
        assert "script-src 'self'" in reply.headers["content-security-policy"]
        assert reply.headers["x-content-type-options"] == "nosniff"
    assert c.get("/").headers["location"] == "/sessions"


def test_sessions_filter_and_page_on_the_server(store, tmp_path):
    c = client(store, tmp_path)
    page = c.get("/sessions", params={"limit": 2})
    assert page.text.count('class="session') == 2 and "sess-4" in page.text and "sess-3" in page.text
    assert 'id="next-page"' in page.text
    cursor = page.text.split('id="next-page"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    second = c.get(cursor)
    assert "sess-2" in second.text and "sess-1" in second.text and "sess-4" not in second.text
    failed = c.get("/sessions", params={"failures": "1"})
    assert failed.text.count('class="session') == 1 and "sess-2" in failed.text
    text = c.get("/sessions", params={"q": "LIGHT 3"})
    assert text.text.count('class="session') == 1 and "sess-3" in text.text
    late = c.get("/sessions", params={"since": "2026-05-01T10:03"})
    assert late.text.count('class="session') == 2
    assert c.get("/sessions", params={"agent": "nobody"}).text.count('class="session') == 0


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"since": "yesterday"}, "since=&#39;yesterday&#39;: not a date"),
        ({"below": "low"}, "below=&#39;low&#39;: not a number"),
        ({"below": "0.5"}, "below: give the metric"),
        ({"below": "nan", "metric": "m"}, "must be a finite number"),
        ({"limit": "0"}, "limit=&#39;0&#39;: must be from 1 to 500"),
        ({"failures": "maybe"}, "failures=&#39;maybe&#39;: expected 1 or 0"),
        ({"after": "garbage"}, "not a page cursor"),
        ({"since": "2026-05-02", "until": "2026-05-01"}, "since is after until"),
    ],
)
def test_a_bad_filter_is_a_400_that_says_why(store, tmp_path, query, message):
    reply = client(store, tmp_path).get("/sessions", params=query)
    assert reply.status_code == 400
    assert message in reply.text


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_nul_character_in_a_parameter_is_a_400_on_either_store(store, tmp_path, request, dialect):
    """No stored text holds a NUL (the collector cleans them out; PostgreSQL refuses them, which the page would
    have shown as the store being unavailable): a parameter with one is refused by name, on either store."""
    served = store if dialect == "sqlite" else Store(request.getfixturevalue("postgres_url"))
    try:
        c = client(served, tmp_path)
        for path, name in (("/sessions", "q"), ("/sessions", "agent"), ("/sessions", "tool"), ("/session", "id")):
            reply = c.get(path, params={name: "light\x00"})
            assert reply.status_code == 400 and f"{name}: holds a NUL character" in reply.text, (path, name)
    finally:
        if served is not store:
            served.close()


def test_unknown_things_are_404(store, tmp_path):
    c = client(store, tmp_path)
    assert c.get("/session", params={"id": "nope"}).status_code == 404
    assert c.get("/runs/nope").status_code == 404
    assert c.get("/traces/ffff").status_code == 404
    assert c.get("/evalsets/nope").status_code == 404
    assert c.get("/jobs/nope").status_code == 404
    assert c.get("/jobs/nope.json").status_code == 404
    assert c.get("/no/such/page").status_code == 404
    assert c.get("/session").status_code == 400
    assert c.get("/online", params={"bucket": "week"}).status_code == 400


def test_a_token_is_needed_by_header_or_by_the_cookie_a_link_sets(store, tmp_path):
    c = client(store, tmp_path, token="s3cret")
    assert c.get("/sessions").status_code == 401
    assert c.get("/sessions", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/sessions", headers={"authorization": "Bearer s3cret"}).status_code == 200
    link = c.get("/sessions", params={"token": "s3cret", "q": "light"})
    assert link.status_code == 303 and link.headers["location"] == "/sessions?q=light"  # the token leaves the URL
    cookie = link.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert cookie.startswith("toolpath_ui_session_8765=")  # a name of this port's UI
    assert "s3cret" not in cookie  # a session value, never the token: other ports of this host see cookies
    assert c.get("/sessions").status_code == 200  # the client keeps the cookie
    stranger = client(store, tmp_path, token="s3cret")
    stranger.cookies.set("toolpath_ui_session_8765", "s3cret")  # the raw token is no session
    assert stranger.get("/sessions").status_code == 401
    assert client(store, tmp_path, token="s3cret").get("/static/ui.css").status_code == 401


def test_changes_need_the_same_origin_or_the_bearer_token(store, tmp_path):
    c = client(store, tmp_path)
    form = {"session_id": "sess-1", "new_evalset": "mine"}
    assert c.post("/evalsets/add", data=form).status_code == 403
    assert c.post("/evalsets/add", data=form, headers={"origin": "http://evil.example"}).status_code == 403
    assert c.post("/evalsets/add", data=form, headers={"referer": "http://evil.example/x"}).status_code == 403
    assert not (tmp_path / "evalsets").exists()
    ok = c.post("/evalsets/add", data=form, headers={"referer": f"{BASE}/session?id=sess-1"})
    assert ok.status_code == 303 and (tmp_path / "evalsets" / "mine.evalset.json").is_file()
    with_token = client(store, tmp_path, token="t")
    reply = with_token.post("/evalsets/add", data=form, headers={"authorization": "Bearer t"})
    assert reply.status_code == 303


def test_another_host_name_is_refused_on_loopback(store, tmp_path):
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends Host: evil.example. A Host naming another
    port is refused too (421), and one that is no Host at all (400)."""
    assert client(store, tmp_path, base="http://evil.example").get("/sessions").status_code == 421
    assert client(store, tmp_path, base="http://localhost:8765").get("/sessions").status_code == 200
    c = client(store, tmp_path)
    assert c.get("/sessions", headers={"host": "127.0.0.1:9999"}).status_code == 421
    assert c.get("/sessions", headers={"host": "127.0.0.1:8765@evil.test"}).status_code == 400


def test_bad_eval_set_input_is_a_400_and_leaves_the_file_as_it_was(store, tmp_path):
    c = client(store, tmp_path)
    assert (
        c.post(
            "/evalsets/add", data={"session_id": "sess-1", "new_evalset": "../escape"}, headers=SAME_ORIGIN
        ).status_code
        == 400
    )
    assert c.post("/evalsets/add", data={"session_id": "sess-1"}, headers=SAME_ORIGIN).status_code == 400
    assert (
        c.post("/evalsets/add", data={"session_id": "nope", "new_evalset": "x"}, headers=SAME_ORIGIN).status_code == 404
    )
    added = c.post("/evalsets/add", data={"session_id": "sess-1", "new_evalset": "cases"}, headers=SAME_ORIGIN)
    eval_id = added.headers["location"].split("saved=")[1].split("#")[0]
    path = tmp_path / "evalsets" / "cases.evalset.json"
    before = path.read_text()
    edit = {"turns": "1", "t0-calls": "1", "t0-c0-name": "set_light", "t0-c0-args": "{not json", "t0-response": "ok"}
    reply = c.post(f"/evalsets/cases/cases/{eval_id}", data=edit, headers=SAME_ORIGIN)
    assert reply.status_code == 400 and "turn 1, call 1 (set_light): arguments are not valid JSON" in reply.text
    reply = c.post(f"/evalsets/cases/cases/{eval_id}", data={**edit, "t0-c0-args": "[1]"}, headers=SAME_ORIGIN)
    assert reply.status_code == 400 and "must be a JSON object" in reply.text
    assert path.read_text() == before
    run = c.post("/evalsets/cases/run", data={"agent": "no_such_module:agent"}, headers=SAME_ORIGIN)
    assert run.status_code == 400 and "not an agent this UI was started with" in run.text
    run = c.post(
        "/evalsets/cases/run", data={"agent": DEMO_AGENT, "threshold-response_match_score": "high"}, headers=SAME_ORIGIN
    )
    assert run.status_code == 400 and "not a number" in run.text
    assert c.post("/evalsets/cases/run", data={}, headers=SAME_ORIGIN).status_code == 400


def test_a_session_becomes_an_adk_case_with_the_turns_picked(store, tmp_path):
    from google.adk.evaluation.eval_set import EvalSet

    c = client(store, tmp_path)
    for _ in range(2):  # the second add gets its own case id
        c.post(
            "/evalsets/add", data={"session_id": "sess-3", "new_evalset": "picked", "turn": "inv3"}, headers=SAME_ORIGIN
        )
    parsed = EvalSet.model_validate_json((tmp_path / "evalsets" / "picked.evalset.json").read_text())
    assert [case.eval_id for case in parsed.eval_cases] == ["sess-3", "sess-3-2"]
    turn = parsed.eval_cases[0].conversation[0]
    assert turn.user_content.parts[0].text == "turn the light 3 on"
    assert [(u.name, u.args) for u in turn.intermediate_data.tool_uses] == [("set_light", {"id": 3})]
    edit = {"turns": "1", "t0-calls": "1", "t0-c0-name": "set_light", "t0-c0-args": '{"id": 4}',
            "t0-new-name": "notify", "t0-new-args": '{"msg": "hi"}', "t0-response": "all set"}  # fmt: skip
    assert c.post("/evalsets/picked/cases/sess-3", data=edit, headers=SAME_ORIGIN).status_code == 303
    turn = (
        EvalSet.model_validate_json((tmp_path / "evalsets" / "picked.evalset.json").read_text())
        .eval_cases[0]
        .conversation[0]
    )
    assert [(u.name, u.args) for u in turn.intermediate_data.tool_uses] == [
        ("set_light", {"id": 4}),
        ("notify", {"msg": "hi"}),
    ]
    assert turn.final_response.parts[0].text == "all set"
    page = c.get("/evalsets/picked")
    assert json.dumps({"id": 4}).replace('"', "&#34;") in page.text


def test_online_pass_rates_and_failures_link_to_sessions(store, tmp_path):
    import time

    from toolpath.store import schema as t

    now = time.time_ns()
    with store.engine.begin() as conn:
        conn.execute(
            t.online_results.insert(),
            [
                {"invocation_id": f"inv{i}", "evaluator": "default", "evaluator_version": "1",
                 "metric": "trajectory_recall", "score": score, "label": label,
                 "explanation": f"why {i}", "worker": "w", "created_at": now - i * 1000}
                for i, score, label in ((0, 1.0, "pass"), (1, 0.25, "fail"), (3, 1.0, "pass"), (4, 0.5, "fail"))
            ],
        )  # fmt: skip
    c = client(store, tmp_path)
    page = c.get("/online", params={"days": "1", "bucket": "day", "until": "2026-05-02"}).text
    row = page.split('data-metric="trajectory_recall"')[1].split("</tr>")[0]
    assert "50%" in row and "0.688" in row  # 2 of 4 passed; mean (1 + 0.25 + 1 + 0.5) / 4
    failures = page.split('id="failures"')[1]
    assert "/session?id=sess-1" in failures and "/session?id=sess-4" in failures and "sess-3" not in failures
    below = c.get("/sessions", params={"metric": "trajectory_recall", "below": "0.6"}).text
    assert below.count('class="session') == 2 and "sess-1" in below and "sess-4" in below
    session = c.get("/session", params={"id": "sess-1"}).text
    assert "trajectory_recall" in session and "why 1" in session


def test_an_eval_set_name_with_a_newline_is_refused_and_a_save_keeps_the_files_mode(store, tmp_path):
    import os

    c = client(store, tmp_path)
    refused = c.post("/evalsets/add", data={"session_id": "sess-1", "new_evalset": "cases\nx"}, headers=SAME_ORIGIN)
    assert refused.status_code == 400
    sneaky = {"session_id": "sess-1", "new_evalset": "bad\n.evalset.json"}  # "$" matched before that newline
    assert c.post("/evalsets/add", data=sneaky, headers=SAME_ORIGIN).status_code == 400
    assert not (tmp_path / "evalsets").exists() or not list((tmp_path / "evalsets").iterdir())
    added = c.post("/evalsets/add", data={"session_id": "sess-1", "new_evalset": "cases"}, headers=SAME_ORIGIN)
    path = tmp_path / "evalsets" / "cases.evalset.json"
    assert added.status_code == 303 and path.stat().st_mode & 0o777 == 0o600  # a new one is private
    os.chmod(path, 0o640)
    again = c.post("/evalsets/add", data={"session_id": "sess-2", "evalset": "cases"}, headers=SAME_ORIGIN)
    assert again.status_code == 303
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_store_that_is_down_is_a_503_page_not_a_bare_500(store, tmp_path, monkeypatch):
    from sqlalchemy.exc import OperationalError

    def down(*args, **kwargs):
        raise OperationalError("SELECT 1", {}, Exception("connection to server at db.internal (10.0.0.5) failed"))

    monkeypatch.setattr(store, "get_session", down)
    reply = client(store, tmp_path).get("/session", params={"id": "sess-1"})
    assert reply.status_code == 503 and reply.headers["retry-after"] == "5"
    assert "the store is unavailable" in reply.text and "10.0.0.5" not in reply.text
