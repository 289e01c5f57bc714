"""The evaluations the UI runs in the background, and the job page that follows one: every job ends as done or
failed (also when the agent's code raises SystemExit, which would end its thread silently), and the page opens the
run or shows why it failed whatever the timing: a run that ended before its page loaded, polls the server missed,
a server that no longer knows the job."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from datetime import UTC, datetime

import pytest

from tests.helpers.ui import DEMO_AGENT, EXITING_AGENT, GATE, HELD_AGENT, JOB_ENDED, Watched, browser, serve_ui
from toolpath.cli.agents import load_agent
from toolpath.evaluation.evalsets.files import EvalConfig
from toolpath.evaluation.evalsets.folder import EvalSetFiles
from toolpath.model import Invocation, ToolCall
from toolpath.store.store import Store
from toolpath.ui.jobs import Job, Jobs, JobState

PROMPT = "What temperature is the living room thermostat set to?"
JOB_PAGE = re.compile(r"/jobs/[0-9a-f]+$")
JOB_JSON = re.compile(r"/jobs/[0-9a-f]+\.json$")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The UI over a store of one recorded turn of the demo agent, and an eval set made of it."""
    folder = tmp_path_factory.mktemp("ui-jobs")
    store = Store(f"sqlite:///{folder / 'jobs.db'}")
    store.write(
        [
            Invocation(
                invocation_id="inv1",
                session_id="thermostat",
                agent_name="smart_home_assistant",
                prompt=PROMPT,
                response="The living room thermostat is set to 20.0 °C.",
                tool_calls=[ToolCall(name="get_device_info", args={"device_id": "thermostat-living_room"})],
                started_at=datetime(2026, 5, 1, tzinfo=UTC),
            )
        ]
    )
    files = EvalSetFiles(folder / "evalsets")
    session = store.get_session("thermostat")
    assert session is not None
    files.add_session("cases", session)
    with serve_ui(store, files.folder) as url:
        yield url, store, files
    store.close()


@pytest.fixture(scope="module")
def chromium():
    with browser() as launched:
        yield launched


def ended(jobs: Jobs, job: Job, seconds: float = 60) -> Job:
    deadline = time.monotonic() + seconds
    while job.state == "running" and time.monotonic() < deadline:
        time.sleep(0.02)
    found = jobs.get(job.job_id)
    assert found is not None
    return found


@pytest.mark.parametrize(("agent", "state"), [(DEMO_AGENT, "done"), (EXITING_AGENT, "failed")])
def test_every_job_ends_done_or_failed_with_the_reason(served, agent, state):
    _, store, files = served
    jobs = Jobs(store)
    eval_set = files.load("cases")
    job = ended(jobs, jobs.start("cases", eval_set, load_agent(agent), agent, EvalConfig()))
    assert job.state is JobState(state)
    if state == "done":
        assert job.error is None and job.run_id is not None and store.get_eval_run(job.run_id) is not None
    else:
        assert job.run_id is None and job.error == f"SystemExit: the agent gave up on {PROMPT!r}"


def start_from_page(page, url: str, agent: str) -> None:
    page.goto(f"{url}/evalsets/cases")
    page.fill("#agent", agent)
    page.click("#run-button")
    page.wait_for_url(JOB_PAGE)


def test_a_run_that_ended_before_its_page_loaded_still_opens(served, chromium):
    """A fast run often ends before the browser follows the redirect to its job page (always under load): the page
    is then rendered with the run done, and must open it (it used to wait there for ever)."""
    url, _, _ = served
    watched = Watched(chromium.new_page())
    page = watched.page
    page.goto(f"{url}/evalsets/cases")
    started = page.request.post(
        f"{url}/evalsets/cases/run", form={"agent": DEMO_AGENT}, headers={"origin": url}, max_redirects=0
    )
    assert started.status == 303
    job_url = url + started.headers["location"]
    deadline = time.monotonic() + 30
    while page.request.get(f"{job_url}.json").json()["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    page.goto(job_url)
    page.wait_for_function(JOB_ENDED, timeout=30_000)
    assert "/runs/" in page.url, page.inner_text("main")
    assert watched.errors == []


def test_a_failed_run_shows_its_error(served, chromium):
    url, _, _ = served
    page = Watched(chromium.new_page()).page
    start_from_page(page, url, EXITING_AGENT)
    page.wait_for_function(JOB_ENDED, timeout=30_000)
    assert JOB_PAGE.search(page.url)
    assert page.inner_text("#job-error") == f"SystemExit: the agent gave up on {PROMPT!r}"
    page.reload()  # a failed job's page says why as it loads
    assert "SystemExit" in page.inner_text("#job-error")


def test_a_job_s_state_reaches_its_json_and_its_page_as_the_same_text(served, chromium):
    """``JobState`` members are rendered and serialised as their text, which the page's script compares."""
    assert [s.value for s in JobState] == ["running", "done", "failed"]
    url, _, _ = served
    page = Watched(chromium.new_page()).page
    start_from_page(page, url, EXITING_AGENT)
    page.wait_for_function(JOB_ENDED, timeout=30_000)
    with urllib.request.urlopen(f"{page.url}.json", timeout=30) as reply:
        raw = reply.read()
    assert json.loads(raw)["state"] == "failed" and b'"failed"' in raw
    page.reload()  # rendered by the server's template with the job already failed
    assert page.get_attribute("#job", "data-state") == "failed"


@pytest.fixture
def gate():
    """:data:`~tests.helpers.ui.GATE` closed for the test, open again after it (no run outlives its test)."""
    GATE.clear()
    yield GATE
    GATE.set()


def job_state(page) -> dict:
    """The job of the job page ``page`` shows, as the server has it (not through the page's routes)."""
    with urllib.request.urlopen(f"{page.url}.json", timeout=30) as reply:
        return json.loads(reply.read())


def test_the_page_keeps_asking_through_missed_polls(served, chromium, gate):
    url, _, _ = served
    watched = Watched(chromium.new_page())
    page = watched.page
    refused: list[str] = []

    def fail_twice(route):
        if len(refused) < 2:
            refused.append(route.request.url)
            route.fulfill(status=503, body="busy")
        else:
            route.continue_()

    page.route(JOB_JSON, fail_twice)
    start_from_page(page, url, HELD_AGENT)
    page.wait_for_function("() => document.getElementById('job-contact').textContent.includes('503')")
    while len(refused) < 2:
        page.wait_for_timeout(50)  # route handlers run while Playwright waits
    assert job_state(page)["state"] == "running" and not page.inner_text("#job-error")
    gate.set()
    page.wait_for_function(JOB_ENDED, timeout=30_000)
    assert "/runs/" in page.url, page.inner_text("main")
    assert all("503" in e for e in watched.errors), watched.errors  # the browser logs the refused fetches


def test_a_job_the_server_forgot_is_said_on_the_page(served, chromium, gate):
    """A restarted server has no record of the job: the page says so instead of polling for ever."""
    url, _, _ = served
    page = Watched(chromium.new_page()).page
    page.route(JOB_JSON, lambda route: route.fulfill(status=404, body="no such evaluation job"))
    start_from_page(page, url, HELD_AGENT)
    page.wait_for_function(JOB_ENDED, timeout=30_000)
    assert "no longer knows this evaluation" in page.inner_text("#job-error")
    assert job_state(page)["state"] == "running"  # it was the page's poll that failed, not the run
    gate.set()
    deadline = time.monotonic() + 30
    while job_state(page)["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job_state(page)["state"] == "done"
