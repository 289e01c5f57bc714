"""Every page of the debugging store in real headless Chromium, checked by axe-core (no finding of moderate impact
or worse: nested interactive controls, contrast, heading order...) and at a 390 px wide phone (nothing wider than
the screen); the keys: a skip link first, ``/`` to the search box, j and k from row to row; and the run and compare
pages' toggles kept in the address, so that a reload or a link shows them as they were."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.helpers.axe import axe_findings
from tests.helpers.ui import Watched, browser
from tests.helpers.ui_stores import SUPPORT, TOOL_ERROR_SESSION, served_debugging_store
from toolpath.store.store import Store

EVALSET = "phone_cases"
"""An eval set the module adds from the support session, so that its page is checked too."""


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    with served_debugging_store(tmp_path_factory.mktemp("ui-a11y")) as served:
        url, _ = served
        with browser() as chromium:
            page = chromium.new_page()
            page.goto(f"{url}/session?id={SUPPORT}")
            page.fill("#new-evalset", EVALSET)
            page.click("#add-button")
            page.wait_for_url(re.compile(f"/evalsets/{EVALSET}"))
        yield served


@pytest.fixture(scope="module")
def chromium():
    with browser() as launched:
        yield launched


def open_page(chromium, width: int):
    watched = Watched(chromium.new_page(viewport={"width": width, "height": 900}))
    return watched


def runs(store: Store, kind: str) -> list[str]:
    return [
        r["run_id"] for r in store.list_eval_runs(limit=None) if r["kind"] == kind and r["run_id"] != "quietreplay1"
    ]


def pages(store: Store) -> list[str]:
    (dataset, *_), (replay,) = runs(store, "dataset"), runs(store, "replay")
    trace = store.get_session(SUPPORT).invocations[1].trace_id
    return [
        "/sessions", "/sessions?failures=1&last=7d", f"/session?id={SUPPORT}", f"/session?id={TOOL_ERROR_SESSION}",
        "/runs", f"/runs/{dataset}", f"/runs/{replay}", f"/compare?run={dataset}&run={replay}", "/errors", "/tools",
        "/evalsets", f"/evalsets/{EVALSET}", "/online", "/prices", f"/traces/{trace}",
    ]  # fmt: skip


def test_axe_finds_nothing_on_any_page(ui, chromium):
    url, store = ui
    watched = open_page(chromium, 1280)
    page = watched.page
    found = {}
    for path in pages(store):
        page.goto(f"{url}{path}")
        page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        found[path] = axe_findings(page)
    page.goto(f"{url}/session?id={SUPPORT}&find=support&errors=1")  # the waterfall filtered, a span's panel open
    page.locator("#turn-2 .wf-row.agent button.span-open").click()
    page.locator("#span-panel").wait_for(state="visible")
    found["the span panel"] = axe_findings(page)
    assert {path: f for path, f in found.items() if f} == {}
    assert watched.errors == []
    page.close()


def test_no_page_is_wider_than_a_390_px_phone(ui, chromium):
    url, store = ui
    watched = open_page(chromium, 390)
    page = watched.page
    wider = {}
    for path in pages(store):
        page.goto(f"{url}{path}")
        page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        if width > 390:
            wider[path] = width
    assert wider == {}
    assert watched.errors == []
    page.close()


def focused(page) -> str:
    return page.evaluate(
        "() => { const e = document.activeElement; const row = e.closest('tr');"
        " return e.tagName + (e.id ? '#' + e.id : '') + (row && row.dataset.session ? ' ' + row.dataset.session : ''); }"
    )


def test_a_skip_link_slash_to_search_and_j_k_from_row_to_row(ui, chromium):
    url, _ = ui
    watched = open_page(chromium, 1280)
    page = watched.page
    page.goto(f"{url}/sessions")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "skip"
    assert page.locator("a.skip").first.is_visible()  # shown when it has the focus
    page.keyboard.press("Enter")
    assert focused(page) == "MAIN#main"
    page.reload()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # the second link: to the list itself, past the filters
    assert page.inner_text(":focus") == "Skip to the sessions"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    first = page.eval_on_selector("#sessions tr.session", "row => row.dataset.session")
    assert focused(page) == f"A {first}"  # four key presses to the first session (46 before)
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.name") == "q"
    page.keyboard.type("j")  # in the search box, j is a letter
    assert page.input_value("input[name=q]") == "j"
    page.locator("h1").click()
    sessions = page.eval_on_selector_all("#sessions tr.session", "rows => rows.map((r) => r.dataset.session)")
    assert len(sessions) >= 3
    page.keyboard.press("j")
    assert focused(page) == f"A {sessions[0]}"
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert focused(page) == f"A {sessions[2]}"
    page.keyboard.press("k")
    assert focused(page) == f"A {sessions[1]}"
    assert page.locator("#sessions tr.current").get_attribute("data-session") == sessions[1]
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/session\?id="))
    assert parse_qs(urlparse(page.url).query)["id"] == [sessions[1]]
    assert watched.errors == []
    page.close()


def test_the_run_and_compare_toggles_are_kept_in_the_address(ui, chromium):
    url, store = ui
    watched = open_page(chromium, 1280)
    page = watched.page
    (replay,) = runs(store, "replay")
    page.goto(f"{url}/runs/{replay}")
    shown = "() => Array.from(document.querySelectorAll(%r)).filter((e) => e.offsetParent !== null).length"
    every = page.evaluate(shown % "tbody.case")
    page.check("#only-failing")
    failing = page.evaluate(shown % "tbody.case")
    assert 0 < failing < every and parse_qs(urlparse(page.url).query)["failing"] == ["1"]
    page.reload()
    page.wait_for_function(f"() => ({shown % 'tbody.case'})() === {failing}")
    assert page.is_checked("#only-failing")
    page.uncheck("#only-failing")
    assert "failing" not in parse_qs(urlparse(page.url).query)

    dataset = runs(store, "dataset")[-1]  # the demo's first run, whose sessions the replay replayed
    page.goto(f"{url}/compare?run={dataset}&run={replay}&changed=1")  # a link with the toggle on
    page.locator("tbody.compared-case[data-case=home-01]").wait_for(state="hidden")
    assert page.is_checked("#only-changed")
    visible = [c.get_attribute("data-case") for c in page.locator("tbody.compared-case").all() if c.is_visible()]
    assert "home-02" in visible and "home-01" not in visible
    assert watched.errors == []
    page.close()
