"""The UI at 800 px in real headless Chromium: no page scrolls sideways (wide tables scroll in their own box),
metric headers break between words, never inside one; an eval set can be deleted and the deletion undone; and
docs/ui.md says how to start the UI with the demo agent. Screenshots at 800 px go to the folder printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.ui import (
    BROKEN_WORDS,
    DEMO_AGENT,
    announced_screenshot_folder,
    page_overflow,
    screenshots,
    serve_ui,
    watched_page,
)
from tests.helpers.ui_stores import SUPPORT, debugging_store
from toolpath.evaluation.evalsets.folder import EvalSetFiles
from toolpath.store.store import Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-narrow")
    store = Store(debugging_store(folder))
    files = EvalSetFiles(folder / "evalsets")
    session = store.get_session(SUPPORT)
    assert session is not None
    files.add_session("support_cases", session)
    with serve_ui(store, files.folder) as url:
        yield url, store, files
    store.close()


@pytest.fixture(scope="module")
def page(ui):
    with watched_page(800) as page:
        yield page


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def paths(store: Store) -> list[str]:
    run_ids = [r["run_id"] for r in store.list_eval_runs(limit=None)]
    return [
        "/sessions",
        f"/session?id={SUPPORT}",
        "/runs",
        *(f"/runs/{run_id}" for run_id in run_ids),
        "/online?days=1",
        "/evalsets",
        "/evalsets/support_cases",
        "/prices",
        "/errors",
        "/tools?tool=lookup_order",
        f"/compare?run={run_ids[0]}&run={run_ids[-1]}",
    ]


def test_no_page_scrolls_sideways_at_800_px(ui, page, shots):
    url, store, _ = ui
    wide = {}
    for path in paths(store):
        page.goto(url + path)
        if overflow := page_overflow(page):
            wide[path] = overflow
    assert wide == {}, f"pages wider than 800 px (by px): {wide}"
    for path, name in (("/runs", "runs"), ("/online?days=1", "online"), ("/evalsets/support_cases", "evalset")):
        page.goto(url + path)
        screenshots(page, shots, f"narrow-{name}", (800,))


def test_metric_headers_break_between_words(ui, page):
    url, store, _ = ui
    for run in store.list_eval_runs(limit=None):
        for width in (800, 1280):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{url}/runs/{run['run_id']}")
            assert page.evaluate(BROKEN_WORDS) == [], (run["run_id"], width)
    page.set_viewport_size({"width": 800, "height": 900})


def test_an_eval_set_is_deleted_and_the_deletion_undone(ui, page):
    url, _, files = ui
    path = files.path("support_cases")
    before = path.read_bytes()
    page.goto(f"{url}/evalsets/support_cases")
    page.click("#delete-evalset")
    page.wait_for_url(re.compile(r"/evalsets\?deleted=support_cases"))
    assert not path.exists()
    assert page.locator("#evalsets li[data-evalset=support_cases]").count() == 0
    assert "support_cases" in page.inner_text("#deleted-notice")
    page.click("#undo-delete")
    page.wait_for_url(re.compile(r"/evalsets/support_cases\?restored=1"))
    assert path.read_bytes() == before  # the same file, untouched
    assert page.locator("#restored").is_visible()
    # deleted and restored later, from the list of deleted eval sets
    page.click("#delete-evalset")
    page.wait_for_url(re.compile(r"deleted="))
    page.goto(f"{url}/evalsets")
    page.locator("li[data-deleted=support_cases] button.restore").click()
    page.wait_for_url(re.compile(r"/evalsets/support_cases"))
    assert path.read_bytes() == before


def test_a_restore_never_replaces_an_eval_set_made_since(ui, page):
    url, store, files = ui
    page.goto(f"{url}/evalsets/support_cases")
    page.click("#delete-evalset")
    page.wait_for_url(re.compile(r"deleted="))
    session = store.get_session(SUPPORT)
    assert session is not None
    files.add_session("support_cases", session)  # a new eval set of the same name
    newer = files.path("support_cases").read_bytes()
    reply = page.request.post(f"{url}/evalsets/support_cases/restore", headers={"origin": url})
    assert reply.status == 400 and "exists again" in reply.text()
    assert files.path("support_cases").read_bytes() == newer


def test_docs_say_how_to_start_the_ui_with_the_demo_agent():
    text = (ROOT / "docs" / "ui.md").read_text(encoding="utf-8")
    assert f"--agent {DEMO_AGENT}" in text
    assert "toolpath demo" in text
