"""An eval set run from the UI against an agent whose turn raises: the job lists the crashed case, and the run's
page shows the case FAILED with no scores, the error, and the failing call with its arguments and error."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from tests.helpers import crashing
from tests.helpers.ui import CRASHING_AGENT, JOB_ENDED, Watched, browser, serve_ui
from toolpath.evaluation.evalsets.folder import EvalSetFiles
from toolpath.model import Invocation
from toolpath.store.store import Store

JOB_PAGE = re.compile(r"/jobs/[0-9a-f]+$")
CRASHED = f"turn 1: the agent failed: {crashing.ERROR}"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The UI over a store of one recorded turn asking for the crash, and an eval set made of it."""
    folder = tmp_path_factory.mktemp("ui-crash")
    store = Store(f"sqlite:///{folder / 'crash.db'}")
    turn = Invocation(
        invocation_id="inv1",
        session_id="crash",
        agent_name="crasher",
        prompt=crashing.CRASH,
        response="Checked.",
        started_at=datetime(2026, 5, 1, tzinfo=UTC),
    )
    store.write([turn])
    files = EvalSetFiles(folder / "evalsets")
    session = store.get_session("crash")
    assert session is not None
    files.add_session("crash", session)
    with serve_ui(store, files.folder) as url:
        yield url
    store.close()


def test_the_job_and_the_run_page_show_the_crash(served):
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        visited: list[str] = []
        page.on("framenavigated", lambda frame: visited.append(frame.url))
        page.goto(f"{served}/evalsets/crash")
        page.fill("#agent", CRASHING_AGENT)
        page.click("#run-button")
        page.wait_for_function(JOB_ENDED, timeout=30_000)
        [job_url] = [url for url in visited if JOB_PAGE.search(url)]
        assert "/runs/" in page.url, page.inner_text("main")
        job = page.request.get(f"{job_url}.json").json()
        assert (job["failed"], job["crashes"]) == (1, [f"crash: {CRASHED}"])
        case = page.locator("tbody.case")
        assert case.get_attribute("data-status") == "fail"
        assert case.locator(".case-error").inner_text() == f"error: {CRASHED}"
        assert case.locator("td.num").all_inner_texts() == ["—"] * case.locator("td.num").count()
        call = case.locator(".actual .call")
        assert call.inner_text() == f"crash_tool(level=3) error: {crashing.ERROR}"
        assert watched.errors == []
