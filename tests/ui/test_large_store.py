"""The UI over 100,000 invocations (20,000 sessions) in SQLite, bulk-inserted: the first page of sessions, and
filtered pages, measured in Chromium and printed (not asserted: machines differ)."""

from __future__ import annotations

import time

import pytest

from tests.helpers.ui import Watched, browser, bulk_store, serve_ui

INVOCATIONS = 100_000


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-large")
    began = time.perf_counter()
    store = bulk_store(f"sqlite:///{folder / 'large.db'}", INVOCATIONS)
    print(f"\n{INVOCATIONS} invocations inserted in {time.perf_counter() - began:.1f} s")
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture(scope="module")
def chromium():
    with browser() as launched:
        yield launched


@pytest.mark.parametrize(
    "query",
    ["", "?failures=1", "?q=garage", "?agent=agent-1", "?metric=trajectory_precision&below=0.3", "?since=2026-05-29"],
)
def test_pages_of_a_large_store(ui, chromium, query):
    """The time is printed with the server's own query time (the page shows it)."""
    watched = Watched(chromium.new_page())
    began = time.perf_counter()
    watched.page.goto(f"{ui}/sessions{query}")
    seconds = time.perf_counter() - began
    rows = watched.page.locator("tr.session").count()
    server = watched.page.inner_text("#page-info")
    reply = watched.page.evaluate(
        "(e => e.responseEnd - e.requestStart)(performance.getEntriesByType('navigation')[0])"
    )
    print(f"\nfirst page of /sessions{query} over {INVOCATIONS} invocations: {seconds * 1000:.0f} ms to load in the "
          f"browser, {reply:.0f} ms to answer ({server})")  # fmt: skip
    assert rows == 50
    if query == "":
        assert watched.page.locator("tr.session").first.get_attribute("data-session") == "s019999"
        watched.page.click("#next-page")
        assert watched.page.locator("tr.session").first.get_attribute("data-session") == "s019949"
    assert watched.errors == []
