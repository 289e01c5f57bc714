"""Two runs compared case by case in real headless Chromium: picked on the Runs list, a dataset run against a
replay of its sessions (matched by the turn each replayed), and two runs of one dataset; status flips, score
changes by each metric's direction, and call diffs. Screenshots at 1280 and 800 px."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.ui import announced_screenshot_folder, screenshots, watched_page
from tests.helpers.ui_stores import served_debugging_store
from toolpath.store.store import Store
from toolpath.ui.compare import direction


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    with served_debugging_store(tmp_path_factory.mktemp("ui-compare")) as served:
        yield served


@pytest.fixture
def page(ui):
    with watched_page() as page:
        yield page


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def runs(store: Store, kind: str) -> list[str]:
    return [
        r["run_id"] for r in store.list_eval_runs(limit=None) if r["kind"] == kind and r["run_id"] != "quietreplay1"
    ]


def test_a_run_and_a_replay_of_its_sessions_compared_case_by_case(ui, page, shots):
    url, store = ui
    dataset = runs(store, "dataset")[-1]  # the demo's first run, whose sessions the replay replayed
    (replay,) = runs(store, "replay")
    page.goto(f"{url}/runs")
    page.check(f"input.pick[value='{dataset}']")
    page.check(f"input.pick[value='{replay}']")
    page.click("#compare-button")
    page.wait_for_url(re.compile(r"/compare\?run="))
    cases = page.locator("tbody.compared-case")
    assert cases.count() == 24
    matched = [
        c.get_attribute("data-case")
        for c in cases.all()
        if c.locator(".status-a").count() and c.locator(".status-b").count()
    ]
    assert matched == [f"home-0{n}" for n in range(1, 7)]  # the six replayed turns, under their case ids
    bedroom = page.locator("tbody.compared-case[data-case=home-02]")
    assert "get_device_info" in bedroom.locator("ul.calls-diff").inner_text()  # the call the drifting agent dropped
    assert page.locator("tbody.compared-case[data-case=home-01] ul.calls-diff").count() == 0
    assert "18 only in" in page.inner_text("#compare-counts")  # the list gives the newer run (the replay) first
    page.check("#only-changed")
    shown = [c.get_attribute("data-case") for c in cases.all() if c.is_visible()]
    assert "home-02" in shown and "home-01" not in shown
    screenshots(page, shots, "compare", (1280, 800))


def test_two_runs_of_one_dataset_agree_on_every_case(ui, page):
    url, store = ui
    first, second = runs(store, "dataset")[:2]
    page.goto(f"{url}/compare?run={first}&run={second}")
    assert page.locator("tbody.compared-case").count() == 24
    counts = page.inner_text("#compare-counts")
    assert "0 fixed" in counts and "0 broken" in counts and "0 case(s) differ" in counts
    moved = [c.get_attribute("data-metric") for c in page.locator("td.delta.worse, td.delta.better").all()]
    assert set(moved) <= {"latency_in_seconds"}  # only the measured time varies from run to run


def test_picking_other_than_two_runs_is_a_400(ui, page):
    url, store = ui
    reply = page.request.get(f"{url}/compare?run={runs(store, 'dataset')[0]}")
    assert reply.status == 400 and "pick two runs" in reply.text()
    assert page.request.get(f"{url}/compare?run=nope&run=nada").status == 404


@pytest.mark.parametrize(
    ("before", "after", "lower", "expected"),
    [(0.5, 0.75, False, "better"), (0.5, 0.75, True, "worse"), (1.0, 1.0, False, "same"), (None, 1.0, False, "")],
)
def test_a_change_reads_the_metrics_direction(before, after, lower, expected):
    assert direction(before, after, lower) == expected
