"""Evaluation traffic is marked where it is made: an eval-set run whose cases keep their own session ids (ADK's
``session_input.session_id``, ids that look like production's) is hidden by "hide evaluation traffic" in real
headless Chromium, while production sessions traced into the same store stay; and the mark is what hides it, on
SQLite and PostgreSQL, with the id prefixes kept for stores written before it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from sqlalchemy import insert

from tests.helpers.cli import run_process
from tests.helpers.ui import Watched, browser, serve_ui
from toolpath.store import schema as t
from toolpath.store.browse import session_page
from toolpath.store.session_filter import SessionFilter
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc

AGENT = """
import toolpath


@toolpath.agent(name="helpdesk")
def answer(prompt: str, session_id: str | None = None) -> str:
    return "ticket noted: " + prompt
"""

PRODUCTION = """
import sys

import toolpath
from helpdesk_agent import answer

toolpath.init(store=sys.argv[1])
answer("my printer is jammed", session_id="ticket-1001")
answer("and the scanner too", session_id="ticket-1001")
answer("password reset please", session_id="ticket-1002")
toolpath.shutdown()
"""


def _case(eval_id: str, session_id: str, prompt: str) -> dict:
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "invocation_id": f"{eval_id}-1",
                "user_content": {"role": "user", "parts": [{"text": prompt}]},
                "final_response": {"role": "model", "parts": [{"text": f"ticket noted: {prompt}"}]},
                "intermediate_data": {"tool_uses": [], "intermediate_responses": []},
            }
        ],
        "session_input": {"app_name": "helpdesk", "user_id": "qa", "session_id": session_id, "state": {}},
    }


def _filled_store(folder: Path) -> str:
    (folder / "helpdesk_agent.py").write_text(AGENT)
    (folder / "production.py").write_text(PRODUCTION)
    evalset = {"eval_set_id": "helpdesk", "eval_cases": [_case("printer", "ticket-2001", "my printer is jammed"),
                                                          _case("reset", "ticket-2002", "password reset please")]}  # fmt: skip
    (folder / "helpdesk.evalset.json").write_text(json.dumps(evalset))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    url = f"sqlite:///{folder / 'traffic.db'}"
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), str(Path(__file__).resolve().parents[2])]))}
    made = subprocess.run([sys.executable, "production.py", url], cwd=folder, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})  # fmt: skip
    assert made.returncode == 0, made.stderr
    ran = run_process(folder, "eval", "helpdesk.evalset.json", "--agent", "helpdesk_agent:answer", "--store", url,
                      env=env)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    replayed = run_process(folder, "replay", "--store", url, "--agent", "helpdesk_agent:answer", "--agent-name",
                           "helpdesk", "--session", "ticket-1002", "--quiet", env=env)  # fmt: skip
    assert replayed.returncode in (0, 1), replayed.stdout + replayed.stderr
    return url


def test_an_eval_set_run_with_its_own_session_ids_is_hidden_and_production_is_not(tmp_path):
    url = _filled_store(tmp_path)
    store = Store(url)
    try:
        evaluated = store.get_session("ticket-2001")
        assert evaluated is not None and evaluated.invocations[0].attributes.get(sc.TOOLPATH_EVALUATION) is True
        production = store.get_session("ticket-1001")
        assert production is not None and len(production.invocations) == 2
        assert sc.TOOLPATH_EVALUATION not in production.invocations[0].attributes
        [replay] = [s for s in store.list_sessions(limit=None) if s["session_id"].startswith("replay-")]
        replayed = store.get_session(replay["session_id"])
        assert replayed is not None and replayed.invocations[0].attributes.get(sc.TOOLPATH_EVALUATION) is True
        with serve_ui(store, tmp_path / "evalsets") as base, browser() as chromium:
            watched = Watched(chromium.new_page())
            page = watched.page
            page.goto(f"{base}/sessions")

            def listed() -> list[str]:
                return sorted(r.get_attribute("data-session") or "" for r in page.locator("tr.session").all())

            assert listed() == sorted(
                ["ticket-1001", "ticket-1002", "ticket-2001", "ticket-2002", replay["session_id"]]
            )

            def badged(session_id: str) -> bool:
                return page.locator(f"tr.session[data-session='{session_id}'] .badge.eval").count() == 1

            assert badged("ticket-2001") and badged(replay["session_id"])  # evaluation traffic says so
            assert not badged("ticket-1001") and not badged("ticket-1002")
            page.check("#hide-eval")
            page.click("#filters button[type=submit]")
            page.wait_for_url(re.compile(r"hide_eval=1"))
            assert listed() == ["ticket-1001", "ticket-1002"]
            assert page.inner_text("#total") == "2"
            page.click("#sort-turns")  # the toggle stays with an order
            page.wait_for_url(re.compile(r"hide_eval=1.*sort=turns"))
            assert [r.get_attribute("data-session") for r in page.locator("tr.session").all()] == [
                "ticket-1001", "ticket-1002"]  # fmt: skip
            assert watched.errors == []
    finally:
        store.close()


def test_the_mark_hides_and_the_prefixes_still_do(store):
    """Written straight into the tables: a marked session with a production-like id, an older store's unmarked
    ``eval-`` session, and production (one of its turns marked false)."""
    with store.engine.begin() as conn:
        for k, (sid, attributes) in enumerate([("cust-1", {sc.TOOLPATH_EVALUATION: True}), ("eval-old-1", {}),
                                                ("cust-2", {sc.TOOLPATH_EVALUATION: False}), ("cust-3", {})]):  # fmt: skip
            conn.execute(insert(t.sessions).values(session_id=sid, agent_name="a", first_started_at=k,
                                                   last_started_at=k))  # fmt: skip
            conn.execute(insert(t.invocations).values(
                invocation_id=f"i{k}", session_id=sid, trace_id=f"{k:032x}", prompt="p", intermediate_responses=[],
                failure=0, started_at=k, attributes=attributes))  # fmt: skip
    shown = session_page(store, SessionFilter(hide_evaluation=True, evaluation_attribute=sc.TOOLPATH_EVALUATION))
    assert sorted(r["session_id"] for r in shown.rows) == ["cust-2", "cust-3"] and shown.total == 2
    everything = session_page(store, SessionFilter())
    assert len(everything.rows) == 4
