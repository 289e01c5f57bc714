"""Traffic shown by the UI stays text: a session whose prompt, response, tool arguments, results and errors hold
script and event-handler payloads is shown literally in Chromium (sessions list, session, eval set, run), and no
dialog fires."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.helpers.ui import Watched, browser, serve_ui
from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store

SCRIPT = "<script>alert('prompt')</script>"
IMG = "<img src=x onerror=\"alert('args')\">"
SVG = "\"><svg onload=alert('response')>"


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-xss")
    store = Store(f"sqlite:///{folder / 'xss.db'}")
    store.write(
        [
            Invocation(
                invocation_id="xss1",
                session_id=f"s{SCRIPT}",
                agent_name=f"agent{IMG}",
                prompt=f"hello {SCRIPT} and {IMG}",
                response=f"answer {SVG}",
                tool_calls=[
                    ToolCall(name="search", args={"q": IMG, SCRIPT: 1}, result={"html": SVG}, error=f"E: {SCRIPT}")
                ],
                started_at=datetime(2026, 5, 1, tzinfo=UTC),
                failure=1,
                error=f"ValueError: {IMG}",
            )
        ]
    )
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


def test_payloads_in_traffic_are_shown_as_text(ui):
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        page.goto(f"{ui}/sessions?q=hello")
        assert SCRIPT in page.inner_text("#sessions")
        page.locator("tr.session a").first.click()
        page.wait_for_url("**/session?id=*")
        assert page.inner_text("#turn-1 pre.prompt") == f"hello {SCRIPT} and {IMG}"
        assert page.inner_text("#turn-1 pre.response") == f"answer {SVG}"
        assert page.locator("#turn-1 img, #turn-1 script, main svg[onload]").count() == 0
        page.locator("#turn-1 ol.trajectory summary").first.click()
        assert json.dumps(IMG) in page.inner_text("#turn-1 pre.args")
        page.fill("#new-evalset", "xss")
        page.click("#add-button")
        page.wait_for_url("**/evalsets/xss*")
        assert f"hello {SCRIPT} and {IMG}" in page.inner_text("span.prompt")
        assert json.dumps(IMG) in page.input_value("textarea.tool-args")
        assert page.locator("main img").count() == 0
        assert watched.dialogs == []
        assert watched.errors == []
