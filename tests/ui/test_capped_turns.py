"""A turn the collector's cap cut says so where people look, in real headless Chromium: a turn of 2,000 tool calls
sent to a collector with the default ``--max-tool-calls`` (1,000) is stored with 1,000, and the turn's heading,
its trajectory, the session's totals and its row in the sessions list give both counts; an uncut session says
nothing of a cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.builders import otlp_json
from tests.helpers.ui import serve_ui, watched_page
from toolpath.collector.ingestor import Ingestor
from toolpath.store.store import Store

CAPPED, WHOLE = "capped-session", "whole-session"
SENT = 2000
KEPT = 1000
"""The collector's default ``--max-tool-calls``."""


def post(ingestor: Ingestor, body: bytes) -> None:
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    assert ingestor.handle_http("/v1/traces", headers, lambda n: body[:n]).status == 200


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder: Path = tmp_path_factory.mktemp("ui-capped")
    store = Store(f"sqlite:///{folder / 'capped.db'}")
    ingestor = Ingestor(store)  # the collector's default limits
    post(ingestor, otlp_json("c" * 32, tool_calls=SENT, session=CAPPED))
    post(ingestor, otlp_json("d" * 32, tool_calls=3, session=WHOLE))
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture(scope="module")
def page(ui):
    with watched_page() as page:
        yield page


def test_the_capped_turn_and_its_session_give_what_was_sent_and_what_was_kept(ui, page):
    page.goto(f"{ui}/session?id={CAPPED}")
    heading = page.inner_text("#turn-1 h2 .calls")
    assert heading == f"{KEPT} of {SENT} tool calls kept: {SENT - KEPT} left out by the collector's cap", heading
    assert page.inner_text("#session-totals .calls") == heading
    assert page.inner_text("#turn-1 p.calls-cut").startswith(f"and {SENT - KEPT} more tool call(s) the collector's")
    title = page.get_attribute("#turn-1 h2 .calls .cut", "title")
    assert title is not None and "--max-tool-calls" in title


def test_the_sessions_list_row_gives_both_counts(ui, page):
    page.goto(f"{ui}/sessions")
    capped = page.locator(f"tr.session[data-session='{CAPPED}'] td.calls")
    assert capped.inner_text() == f"{KEPT} of {SENT}"
    assert capped.get_attribute("data-value") == str(KEPT)  # sorted by the calls stored
    assert f"left {SENT - KEPT} out" in (capped.locator(".badge.cut").get_attribute("title") or "")
    whole = page.locator(f"tr.session[data-session='{WHOLE}'] td.calls")
    assert whole.inner_text() == "3" and whole.locator(".cut").count() == 0


def test_an_uncut_session_says_nothing_of_a_cap(ui, page):
    page.goto(f"{ui}/session?id={WHOLE}")
    assert page.inner_text("#turn-1 h2 .calls") == "3 tool call(s)"
    assert page.inner_text("#session-totals .calls") == "3 tool call(s)"
    assert page.locator(".cut, .calls-cut").count() == 0
