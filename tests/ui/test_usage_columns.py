"""Tokens and cost in real headless Chromium: each turn and session counts its model calls' input and output
tokens; cost is what a call reported (gen_ai.usage.cost.total) or its tokens priced, by genai-prices' price until
the user sets one on the Prices page (which then wins); the sessions list sorts by any number column, by
mouse or keyboard. Screenshots at 1280 and 800 px."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.ui import Watched, announced_screenshot_folder, browser, screenshots, serve_ui
from tests.helpers.ui_stores import SUPPORT, debugging_store
from toolpath.store.store import Store
from toolpath.store.usage import prices
from toolpath.ui.default_prices import package_price

PRICE_IN, PRICE_OUT = 0.5, 4.0  # typed on the Prices page: not the package's price of the model
PACKAGE = package_price("gemini-2.5-flash")
PRICED = (121 + 122 + 123 + 124) * PRICE_IN / 1e6 + (31 + 32 + 33 + 34) * PRICE_OUT / 1e6
"""Turns 1-4 priced by the table; turn 5 reported its own cost."""


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-usage")
    store = Store(debugging_store(folder))
    with serve_ui(store, folder / "evalsets") as url:
        yield url, store
    store.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def test_tokens_and_cost_per_turn_session_and_list(ui, shots):
    url, store = ui
    with browser() as chromium:
        watched = Watched(chromium.new_page(viewport={"width": 1280, "height": 900}))
        page = watched.page
        page.goto(f"{url}/session?id={SUPPORT}")
        assert page.inner_text("#turn-1 h2 .tokens") == "121 / 31 tokens"
        assert page.inner_text("#turn-1 h2 .calls") == "1 tool call(s)"
        assert PACKAGE is not None and (PACKAGE.input_per_million, PACKAGE.output_per_million) != (PRICE_IN, PRICE_OUT)
        # no price typed: the package's
        assert (
            page.inner_text("#turn-1 h2 .cost")
            == f"${121 * PACKAGE.input_per_million / 1e6 + 31 * PACKAGE.output_per_million / 1e6:.4f}"
        )
        assert "no price" not in (page.locator("#turn-1 h2 .cost").get_attribute("title") or "")
        assert page.inner_text("#turn-5 h2 .cost") == "$0.0100"  # reported by the call: kept
        totals = page.inner_text("#session-totals")
        assert "615 / 165 tokens" in totals and "≥" not in totals  # every model priced: no lower bound
        assert "5 tool call(s)" in totals and "120.0 ms in finished turns" in totals  # turns 1, 3 and 5

        page.goto(f"{url}/prices")
        page.fill("#price-model", "gemini-2.5-flash")
        page.fill("#price-input", str(PRICE_IN))
        page.fill("#price-output", str(PRICE_OUT))
        page.click("#price-save")
        page.wait_for_url(re.compile(r"saved="))
        assert page.locator("#prices tr[data-model='gemini-2.5-flash']").count() == 1
        assert prices(store)["gemini-2.5-flash"].output_per_million == PRICE_OUT
        screenshots(page, shots, "prices", (1280, 800))

        page.goto(f"{url}/session?id={SUPPORT}")
        assert page.inner_text("#turn-1 h2 .cost") == f"${121 * PRICE_IN / 1e6 + 31 * PRICE_OUT / 1e6:.4f}"
        assert f"${PRICED + 0.01:.4f}" in page.inner_text("#session-totals")

        page.goto(f"{url}/sessions?hide_eval=1")
        row = page.locator(f"tr.session[data-session='{SUPPORT}']")
        assert row.locator("td.tokens").inner_text() == "615 / 165"
        assert row.locator("td.cost").inner_text() == f"${PRICED + 0.01:.4f}"
        screenshots(page, shots, "sessions-usage", (1280, 800))
        assert watched.errors == []


def test_the_sessions_list_sorts_by_a_column_by_mouse_and_keyboard(ui):
    """The headers are links to the whole list ordered by their column (the server orders it): again, the other
    way round; the cost order agrees with the cost column the page computes."""
    url, _ = ui
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        page.goto(f"{url}/sessions?limit=100")

        def column(name: str) -> list[float]:
            cells = page.locator(f"#sessions tbody td.{name}").all()
            return [float(v) for c in cells if (v := c.get_attribute("data-value"))]

        page.click("#sort-tokens")
        page.wait_for_url(re.compile(r"sort=tokens&order=desc"))
        tokens = column("tokens")
        assert tokens == sorted(tokens, reverse=True) and tokens[0] == 780  # the support session first
        assert page.locator("#sessions th[aria-sort=descending]").inner_text().startswith("tokens")
        page.focus("#sort-tokens")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"sort=tokens&order=asc"))
        assert column("tokens") == sorted(tokens)
        assert page.locator("#sessions th[aria-sort=ascending]").inner_text().startswith("tokens")

        page.click("#sort-cost")
        page.wait_for_url(re.compile(r"sort=cost&order=desc"))
        costs = column("cost")
        assert costs == [pytest.approx(PRICED + 0.01)]  # the one session with a cost, first; those without, last
        assert page.locator("tr.session").first.get_attribute("data-session") == SUPPORT
        page.click("#sort-time")  # back to newest first: the default order, no parameter
        page.wait_for_url(re.compile(r"/sessions\?limit=100$"))
        assert watched.errors == []
