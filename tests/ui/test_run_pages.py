"""Run pages as a debugging tool, in real headless Chromium over a varied store (the demo's runs, a replay against
a drifting agent, a replay where nothing changed): "show only failing" keeps a replay's changed turns and says
when nothing is left; every case links to the turn it came from, for dataset runs, replays and eval-set runs
started from the UI (recorded in the store); an agent that raised is shown as a crash, never as "actual: none"
with passing scores; a turn opened from a case shows what the case expected of it and links back to the case;
and "failed" means the same on the Runs list as on each run's page. Screenshots at 1280 and 800 px go to the
folder printed in the output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import crashing
from tests.helpers.ui import (
    CRASHING_AGENT,
    DEMO_AGENT,
    JOB_ENDED,
    Watched,
    browser,
    screenshot_folder,
    screenshots,
    serve_ui,
)
from tests.helpers.ui_stores import debugging_store, quiet_replay
from toolpath.evaluation.evalsets.folder import EvalSetFiles
from toolpath.store import schema as t
from toolpath.store.store import Store

PIZZA = "Order a pizza for dinner."
WIDTHS = (1280, 800)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-runs")
    store = Store(debugging_store(folder))
    files = EvalSetFiles(folder / "evalsets")
    thermostat = next(r for r in store.list_sessions(limit=None) if r["session_id"].endswith("-0"))
    session = store.get_session(thermostat["session_id"])
    assert session is not None
    files.add_session("thermostat", session)
    crashing.crash_evalset(files.folder)
    with serve_ui(store, files.folder) as url:
        yield url, store
    store.close()


@pytest.fixture(scope="module")
def chromium():
    with browser() as launched:
        yield launched


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = screenshot_folder(tmp_path_factory.getbasetemp())
    print(f"\nUI screenshots: {folder}")
    return folder


def runs_of(store: Store, kind: str) -> list[dict]:
    return [r for r in store.list_eval_runs(limit=None) if r["kind"] == kind]


def visible_cases(page) -> list[str]:
    return [c.get_attribute("data-case") for c in page.locator("tbody.case").all() if c.is_visible()]


def test_only_failing_keeps_a_replays_changed_turns_and_says_when_none_is_left(ui, chromium, shots):
    url, store = ui
    watched = Watched(chromium.new_page())
    page = watched.page
    (replay,) = [r for r in runs_of(store, "replay") if r["run_id"] != "quietreplay1"]
    page.goto(f"{url}/runs/{replay['run_id']}")
    changed = page.locator("tbody.case[data-status=changed]").count()
    assert changed == 3 and page.locator("tbody.case").count() == 6  # the three bedroom requests
    page.check("#only-failing")
    shown = visible_cases(page)
    assert len(shown) >= changed
    assert all(page.locator(f"tbody.case[data-case='{c}']").first.get_attribute("data-status") == "changed"
               or page.locator(f"tbody.case[data-case='{c}']").first.get_attribute("data-failed") == "1"
               for c in shown)  # fmt: skip
    assert page.locator("#no-failing").is_hidden()
    screenshots(page, shots, "replay-only-failing", WIDTHS)

    page.goto(f"{url}/runs/quietreplay1")
    page.check("#only-failing")
    assert visible_cases(page) == []
    assert page.locator("#no-failing").is_visible()
    assert "nothing to show" in page.inner_text("#no-failing")
    page.uncheck("#only-failing")
    assert len(visible_cases(page)) == 1 and page.locator("#no-failing").is_hidden()
    assert watched.errors == []


def test_every_case_of_a_dataset_run_links_to_its_turn_and_a_crash_is_shown(ui, chromium, shots):
    url, store = ui
    watched = Watched(chromium.new_page())
    page = watched.page
    run = runs_of(store, "dataset")[-1]  # the demo's first run: the plain-function agent
    page.goto(f"{url}/runs/{run['run_id']}")
    cases = page.locator("tbody.case")
    assert cases.count() == 24
    assert page.locator("tbody.case a.trace-link").count() == 24  # every row, one trace each

    crashed = page.locator("tbody.case[data-case=home-24]")
    assert crashed.locator(".badge.status").inner_text() == "crashed"
    assert crashed.get_attribute("data-status") == "fail"
    assert "NotImplementedError" in crashed.locator(".case-error").inner_text()
    assert "the agent raised: NotImplementedError" in crashed.locator(".actual .turn-error").inner_text()
    assert crashed.locator(".actual i.muted").count() == 0  # no "none" as if it had answered without a call
    scores = dict(zip(page.locator("#cases thead th.metric-name").all_inner_texts(),
                      crashed.locator("tr").first.locator("td.num").all_inner_texts(), strict=True))  # fmt: skip
    assert scores["trajectory_exact_match"] == "—" and scores["trajectory_precision"] == "—"  # not 1.000
    assert scores["failure"] == "1.000"  # the measurement of the crash itself stays, and fails
    assert "1 raised" in page.inner_text("#run-counts")
    screenshots(page, shots, "run-crash", WIDTHS)

    # two clicks from the failing case to the span that says why: its trace link, then its error span
    crashed.locator("a.trace-link").click()
    page.wait_for_url(re.compile(r"/session\?id=.*#turn-1$"))
    turn = page.locator("section.turn").first
    assert PIZZA in turn.locator("pre.prompt").inner_text()
    assert "NotImplementedError" in turn.locator("p.error").inner_text()
    turn.locator(".wf-row.error button.span-open").first.click()  # the second click: the span that raised
    page.locator("#span-panel").wait_for(state="visible")
    assert "NotImplementedError" in page.inner_text("#span-status")
    assert watched.errors == []


def test_a_replays_cases_link_to_the_replayed_and_the_recorded_turn(ui, chromium):
    url, store = ui
    page = Watched(chromium.new_page()).page
    (replay,) = [r for r in runs_of(store, "replay") if r["run_id"] != "quietreplay1"]
    page.goto(f"{url}/runs/{replay['run_id']}")
    first = page.locator("tbody.case").first
    labels = first.locator("a.trace-link").all_inner_texts()
    assert labels == ["replayed turn", "recorded turn"]
    first.locator("a.trace-link", has_text="replayed turn").click()
    page.wait_for_url(re.compile(r"/session\?id=replay-"))
    page.go_back()
    page.locator("tbody.case").first.locator("a.trace-link", has_text="recorded turn").click()
    page.wait_for_url(re.compile(r"/session\?id=eval-"))


@pytest.mark.parametrize(("kind", "link"), [("dataset", "trace"), ("replay", "recorded turn")])
def test_a_turn_opened_from_a_case_shows_what_the_case_expected_and_links_back(ui, chromium, kind, link):
    url, store = ui
    watched = Watched(chromium.new_page())
    page = watched.page
    run = [r for r in runs_of(store, kind) if r["run_id"] != "quietreplay1"][-1]
    page.goto(f"{url}/runs/{run['run_id']}")
    case = page.locator("tbody.case").nth(1)  # the demo's second request (the bedroom), or its replay
    case_id, position = case.get_attribute("data-case"), case.get_attribute("id")
    expected = case.locator(".expected .call").evaluate_all("calls => calls.map(c => c.textContent)")
    assert expected  # it expects calls
    case.locator("a.trace-link", has_text=link).click()
    page.wait_for_url(re.compile(r"/session\?id=.*&run=.*&case=\d+#turn-\d+$"))
    said = page.inner_text("#from-case")
    assert case_id in said and run["run_id"] in said
    shown = page.locator(".case-expected")
    assert shown.count() == 1  # on the turn the case ran (or replayed), not on the session's others
    assert shown.locator(".call").evaluate_all("calls => calls.map(c => c.textContent)") == expected
    page.click("#back-to-case")
    page.wait_for_url(re.compile(rf"/runs/{run['run_id']}#{position}$"))
    assert page.evaluate("() => document.querySelector('tbody.case:target').dataset.case") == case_id
    assert watched.errors == []


def test_a_case_the_store_does_not_hold_is_a_404_and_half_a_case_a_400(ui, chromium):
    url, store = ui
    page = Watched(chromium.new_page()).page
    run = runs_of(store, "dataset")[-1]["run_id"]
    session = store.list_sessions(limit=1)[0]["session_id"]
    missing = page.request.get(f"{url}/session?id={session}&run={run}&case=999")
    assert missing.status == 404 and "no case at that position" in missing.text()
    assert page.request.get(f"{url}/session?id={session}&run=nope&case=0").status == 404
    half = page.request.get(f"{url}/session?id={session}&run={run}")
    assert half.status == 400 and "run and case" in half.text()


def run_from_page(page, url: str, evalset: str, agent: str) -> str:
    page.goto(f"{url}/evalsets/{evalset}")
    page.fill("#agent", agent)
    page.click("#run-button")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f]+$"))
    page.wait_for_function(JOB_ENDED, timeout=60_000)
    assert "/runs/" in page.url, page.inner_text("main")
    return page.inner_text("#run-id")


def test_an_eval_set_run_started_in_the_ui_is_recorded_and_linked(ui, chromium):
    url, store = ui
    watched = Watched(chromium.new_page())
    page = watched.page
    run_id = run_from_page(page, url, "thermostat", DEMO_AGENT)
    with store.engine.connect() as conn:
        linked = conn.execute(t.eval_results.select().where(t.eval_results.c.run_id == run_id)).all()
    assert linked and all(r.invocation_id for r in linked)
    assert store.get_invocation(linked[0].invocation_id) is not None  # the run's turn is in the store
    link = page.locator("tbody.case a.trace-link").first
    link.click()
    page.wait_for_url(re.compile(r"/session\?id=eval-"))
    assert page.locator("section.turn div.waterfall .wf-row[data-span]").count() >= 2  # its spans were stored too
    assert watched.errors == []


def test_a_multi_turn_crash_shows_the_error_of_the_turn_that_raised(ui, chromium):
    url, _ = ui
    page = Watched(chromium.new_page()).page
    run_from_page(page, url, "crash", CRASHING_AGENT)
    case = page.locator("tbody.case").first
    assert case.locator(".badge.status").inner_text() == "crashed"
    assert crashing.ERROR in case.locator(".turn-error").first.inner_text()
    assert case.locator("a.trace-link").count() >= 1


def test_failed_means_the_same_on_the_runs_list_as_on_each_run_page(ui, chromium, shots):
    url, store = ui
    page = Watched(chromium.new_page()).page
    page.goto(f"{url}/runs")
    listed = {
        row.get_attribute("data-run"): (row.locator("td.failed").inner_text(), row.locator("td.changed-count").inner_text())
        for row in page.locator("#runs tr[data-run]").all()
    }  # fmt: skip
    assert len(listed) == len(store.list_eval_runs(limit=None))
    for run_id, (failed, changed) in listed.items():
        page.goto(f"{url}/runs/{run_id}")
        counts = page.inner_text("#run-counts")
        assert counts.startswith(f"{failed} of "), (run_id, failed, counts)
        assert int(failed) == page.locator("tbody.case[data-failed='1']").count()
        kind = store.get_eval_run(run_id)["kind"]
        if kind == "replay":
            assert f"{changed} changed" in counts
        else:
            assert changed == "–"
    dataset = runs_of(store, "dataset")[-1]["run_id"]
    assert listed[dataset][0] != "0"  # dataset runs were blank though their pages showed failing cases
    page.goto(f"{url}/runs")
    screenshots(page, shots, "runs", WIDTHS)


def test_the_quiet_replay_has_nothing_failed(tmp_path):
    """The store helper's passing replay is a run with nothing failed: what the empty state needs."""
    store = Store(f"sqlite:///{tmp_path / 'q.db'}")
    try:
        run = store.get_eval_run(quiet_replay(store))
        assert run is not None and run["results"][0]["status"] == "same"
    finally:
        store.close()
