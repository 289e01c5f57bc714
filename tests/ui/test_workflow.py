"""The UI's main workflow in a real headless Chromium over the demo's store: filter sessions, open one, add it to an
eval set, edit an expected argument, run the evaluation with the demo agent, see the case fail on that argument and
pass once it is reverted; the file stays valid ADK throughout (ADK's own ``EvalSet`` loads it), and no page logs a
console error. Screenshots at 1280 and 1920 px go to the folder printed in the output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.ui import (
    DEMO_AGENT,
    JOB_ENDED,
    Watched,
    browser,
    demo_store,
    screenshot_folder,
    screenshots,
    serve_ui,
)
from toolpath.store.store import Store

PROMPT = "What temperature is the living room thermostat set to?"


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-demo")
    store = Store(demo_store(folder))
    evalsets = folder / "evalsets"
    with serve_ui(store, evalsets) as url:
        yield url, evalsets
    store.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = screenshot_folder(tmp_path_factory.getbasetemp())
    print(f"\nUI screenshots: {folder}")
    return folder


def adk_eval_set(path: Path):
    from google.adk.evaluation.eval_set import EvalSet

    return EvalSet.model_validate_json(path.read_text(encoding="utf-8"))


def expected_args(path: Path) -> dict:
    from google.adk.evaluation.eval_case import get_all_tool_calls

    case = adk_eval_set(path).eval_cases[0]
    return get_all_tool_calls(case.conversation[0].intermediate_data)[0].args


def run_and_land(page, agent: str = DEMO_AGENT) -> str:
    """Start the run from the eval set's page; the job page follows its progress and opens the run's page (a
    failed job says why on its page, and the test says it too)."""
    page.fill("#agent", agent)
    page.click("#run-button")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f]+$"))
    # a run of one case takes well under a second; 60 s is for a machine under heavy load
    page.wait_for_function(JOB_ENDED, timeout=60_000)
    assert "/runs/" in page.url, page.inner_text("#job")
    return page.inner_text("#run-id")


def test_from_session_to_eval_case_to_failing_and_passing_run(ui, shots):
    url, evalsets = ui
    with browser() as chromium:
        watched = Watched(chromium.new_page(viewport={"width": 1280, "height": 900}))
        page = watched.page

        page.goto(f"{url}/sessions")
        assert page.locator("tr.session").count() > 20
        screenshots(page, shots, "sessions")

        # filter by text in the prompt and by failures
        page.fill("input[name=q]", "living room thermostat")
        page.click("#filters button[type=submit]")
        page.wait_for_url(re.compile(r"q=living"))
        prompts = page.locator("tr.session td.prompt").all_inner_texts()
        assert prompts and all("living room thermostat" in p.lower() for p in prompts), prompts
        page.goto(f"{url}/sessions?failures=1")
        failing = page.locator("tr.session").count()
        assert failing >= 1 and page.locator("tr.session.failed").count() == failing

        # open a session: its prompt, response, ordered trajectory and timeline
        page.goto(f"{url}/sessions?q=living+room+thermostat")
        page.locator("tr.session", has_text=PROMPT).first.locator("a").click()
        page.wait_for_url(re.compile(r"/session\?id="))
        assert page.inner_text("#turn-1 pre.prompt") == PROMPT
        assert "20.0" in page.inner_text("#turn-1 pre.response")
        assert page.locator("#turn-1 ol.trajectory li").first.get_attribute("data-tool") == "get_device_info"
        assert page.locator("#turn-1 div.waterfall .wf-row[data-span]").count() >= 2  # the agent span and its tool span
        screenshots(page, shots, "session")

        # add it to a new eval set
        page.fill("#new-evalset", "from_traffic")
        page.click("#add-button")
        page.wait_for_url(re.compile(r"/evalsets/from_traffic"))
        assert "Saved case" in page.inner_text("#saved")
        file = evalsets / "from_traffic.evalset.json"
        assert expected_args(file) == {"device_id": "thermostat-living_room"}

        # edit the expected argument: ADK still loads the file, with the new value
        args = page.locator("textarea.tool-args").first
        args.fill(json.dumps({"device_id": "thermostat-bedroom"}))
        page.locator("button.save-case").first.click()
        page.wait_for_url(re.compile(r"saved="))
        assert expected_args(file) == {"device_id": "thermostat-bedroom"}
        screenshots(page, shots, "evalset")

        # run: the case fails on that argument, and the failure shows expected vs actual
        run_and_land(page)
        case = page.locator("tbody.case").first
        assert case.locator(".badge.status").inner_text() == "failed"
        cell = case.locator("td[data-metric=tool_trajectory_avg_score]")
        assert "fail" in (cell.get_attribute("class") or "")
        hover = cell.get_attribute("title") or ""
        assert "thermostat-bedroom" in hover and "thermostat-living_room" in hover
        cell.hover()
        changed = case.locator(".actual .arg.changed")
        assert changed.count() == 1 and "thermostat-living_room" in changed.inner_text()
        assert "device_id" in case.locator("ul.changes").inner_text()
        screenshots(page, shots, "run-failed")

        # revert the argument, run again: the case passes
        page.goto(f"{url}/evalsets/from_traffic")
        page.locator("textarea.tool-args").first.fill(json.dumps({"device_id": "thermostat-living_room"}))
        page.locator("button.save-case").first.click()
        page.wait_for_url(re.compile(r"saved="))
        assert expected_args(file) == {"device_id": "thermostat-living_room"}
        run_and_land(page)
        assert page.locator("tbody.case .badge.status").first.inner_text() == "passed"
        assert page.locator("#summary tr[data-metric=tool_trajectory_avg_score] td.num").first.inner_text() == "1.000"

        # both runs are listed; the online page opens
        page.goto(f"{url}/runs")
        assert page.locator("#runs tr[data-run]").count() >= 3  # the demo's runs and the two above
        page.goto(f"{url}/online")
        assert page.locator("#series").count() == 1

        assert watched.errors == []


def test_thresholds_are_editable_before_the_run(ui):
    """The sliders set each criterion's threshold: with the trajectory threshold at 0, an edited argument no longer
    fails the case."""
    url, evalsets = ui
    store_case = evalsets / "thresholds.evalset.json"
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        page.goto(f"{url}/sessions?q=living+room+thermostat")
        page.locator("tr.session", has_text=PROMPT).first.locator("a").click()
        page.fill("#new-evalset", "thresholds")
        page.click("#add-button")
        page.wait_for_url(re.compile(r"/evalsets/thresholds"))
        page.locator("textarea.tool-args").first.fill('{"device_id": "thermostat-office"}')
        page.locator("button.save-case").first.click()
        page.wait_for_url(re.compile(r"saved="))
        slider = page.locator("input[type=range][data-mirror='threshold-tool_trajectory_avg_score']")
        slider.fill("0")
        assert page.input_value("#threshold-tool_trajectory_avg_score") == "0"
        run_and_land(page)
        assert page.locator("tbody.case .badge.status").first.inner_text() == "passed"
        assert watched.errors == []
    assert adk_eval_set(store_case).eval_cases[0].eval_id
