"""Two runs compared case by case in real headless Chromium: picked on the Runs list, a dataset run against a
replay of its sessions (matched by the turn each replayed), and two runs of one dataset; status flips, score
changes by each metric's direction, and call diffs; the older run is the baseline whatever the order the runs are
ticked or named in, and a link swaps them. Screenshots at 1280 and 800 px."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tests.helpers.ui import announced_screenshot_folder, screenshots, watched_page
from tests.helpers.ui_stores import served_debugging_store
from toolpath.store.store import Store
from toolpath.ui.compare import direction

BASELINE, NEWER = "v1-baseline", "v2-newer"
"""Two runs of one 20-case dataset a day apart: the baseline passes every case, the newer run fails 19 of them
(exact match 0, and slower)."""
DAY_NS = 86_400 * 10**9
V1_STARTED = 1_700_000_000 * 10**9


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
    mine = ("quietreplay1", BASELINE, NEWER)
    return [r["run_id"] for r in store.list_eval_runs(limit=None) if r["kind"] == kind and r["run_id"] not in mine]


@pytest.fixture(scope="module")
def versions(ui) -> None:
    """:data:`BASELINE` and :data:`NEWER` in the served store."""
    _, store = ui
    rules = {"trajectory_exact_match": {"threshold": 1.0, "lower_is_better": False, "best": None},
             "latency_in_seconds": {"threshold": None, "lower_is_better": True, "best": None}}  # fmt: skip
    for number, (run_id, regressed) in enumerate([(BASELINE, 0), (NEWER, 19)]):
        started = V1_STARTED + number * DAY_NS
        scores = [{"trajectory_exact_match": 0.0 if n < regressed else 1.0,
                   "latency_in_seconds": 0.9 if n < regressed else 0.5} for n in range(20)]  # fmt: skip
        mean = sum(s["trajectory_exact_match"] for s in scores) / 20
        latency = sum(s["latency_in_seconds"] for s in scores) / 20
        store.write_eval_run(
            {"run_id": run_id, "kind": "dataset", "dataset": "cases.jsonl", "agent": "agent:v", "started_at": started,
             "finished_at": started + 10**9, "row_count": 20, "failed_count": regressed,
             "metrics": {"names": list(rules), "rules": rules},
             "summary": {"trajectory_exact_match/mean": mean, "latency_in_seconds/mean": latency}},
            [{"run_id": run_id, "position": n, "case_id": f"case-{n:02d}", "invocation_id": None, "status": None,
              "scores": score, "row": {"prompt": f"request {n}"}} for n, score in enumerate(scores)],
        )  # fmt: skip


def read_comparison(page) -> dict[str, object]:
    """What the compare page says: its A and B, how the baseline was chosen, the flips and the means' changes."""
    return {
        "a": page.inner_text("#run-a"),
        "b": page.inner_text("#run-b"),
        "baseline": page.inner_text("#baseline"),
        "fixed": page.inner_text("#fixed-count"),
        "broken": page.inner_text("#broken-count"),
        "means": {
            row.get_attribute("data-metric"): row.locator("td").nth(3).inner_text()
            for row in page.locator("#means tr[data-metric]").all()
        },
        "flips": {c.get_attribute("data-flip") for c in page.locator("tbody.compared-case").all()},
    }


REGRESSED = {"fixed": "0 fixed", "broken": "19 broken", "means": {"latency_in_seconds": "worse",
             "trajectory_exact_match": "worse"}, "flips": {"broken", ""}}  # fmt: skip
SWAPPED = {"fixed": "19 fixed", "broken": "0 broken", "means": {"latency_in_seconds": "better",
           "trajectory_exact_match": "better"}, "flips": {"fixed", ""}}  # fmt: skip


@pytest.mark.parametrize("ticked", [(BASELINE, NEWER), (NEWER, BASELINE)])
def test_the_older_run_is_the_baseline_whichever_is_ticked_first(ui, versions, page, ticked):
    url, _ = ui
    page.goto(f"{url}/runs")
    for run_id in ticked:
        page.check(f"input.pick[value='{run_id}']")
    page.click("#compare-button")
    page.wait_for_url(re.compile(r"/compare\?run="))
    shown = read_comparison(page)
    assert (shown["a"], shown["b"]) == (BASELINE, NEWER)
    assert "the older run (the older is the baseline" in str(shown["baseline"])
    assert {k: shown[k] for k in REGRESSED} == REGRESSED  # the newer run's 19 regressions, as regressions
    page.click("#swap-link")  # the newer run as the baseline, when asked
    page.wait_for_url(re.compile(r"base=v2-newer"))
    swapped = read_comparison(page)
    assert (swapped["a"], swapped["b"]) == (NEWER, BASELINE) and "the newer run, as you chose" in str(
        swapped["baseline"]
    )
    assert {k: swapped[k] for k in SWAPPED} == SWAPPED
    page.click("#swap-link")
    back = read_comparison(page)
    assert "the older run, as you chose" in str(back["baseline"])
    assert {k: v for k, v in back.items() if k != "baseline"} == {k: v for k, v in shown.items() if k != "baseline"}


@pytest.mark.parametrize("order", [(BASELINE, NEWER), (NEWER, BASELINE)])
def test_the_order_of_the_address_does_not_choose_the_baseline(ui, versions, page, order):
    url, _ = ui
    page.goto(f"{url}/compare?run={order[0]}&run={order[1]}")
    shown = read_comparison(page)
    assert (shown["a"], shown["b"]) == (BASELINE, NEWER)
    assert {k: shown[k] for k in REGRESSED} == REGRESSED


def test_a_baseline_that_is_neither_run_is_a_400(ui, versions, page):
    url, _ = ui
    reply = page.request.get(f"{url}/compare?run={BASELINE}&run={NEWER}&base=v3")
    said = html.unescape(reply.text())
    assert reply.status == 400 and "base='v3'" in said and "one of the two runs" in said


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
    assert "18 only in A" in page.inner_text("#compare-counts")  # the older run (the dataset's) is the baseline
    assert page.inner_text("#run-a") == dataset
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
