"""The session page's span panel in real headless Chromium: a click on a span of the waterfall, or Tab to it and
Enter, opens its attributes, events, status and timing; Escape closes it and gives the focus back; long values
are collapsed until expanded, and every value has a copy button. An open span is in the page's address, its
"copy link" copies that address, and the address opens the span on load. Screenshots at 1280 and 800 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.ui import Watched, browser, screenshot_folder, screenshots, serve_ui
from tests.helpers.ui_stores import MARKUP, REQUEST_BODY, SUPPORT, debugging_store
from toolpath.store.store import Store

FOCUSED_SPAN = "() => document.activeElement && document.activeElement.matches('.wf-row[data-span] button.span-open')"
AGENT_SPAN_2 = f"{102:016x}"
"""The agent span of the support session's turn 2 (the turn that raised)."""
MODEL_SPAN_4 = f"{204:016x}"
"""The model-call span of the support session's turn 4."""


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-spans")
    store = Store(debugging_store(folder))
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture
def page(ui):
    with browser() as chromium:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui)
        watched = Watched(context.new_page())
        yield watched.page
        assert watched.errors == [] and watched.dialogs == []
        context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = screenshot_folder(tmp_path_factory.getbasetemp())
    print(f"\nUI screenshots: {folder}")
    return folder


def test_a_click_on_a_failed_span_shows_its_status_events_and_attributes(ui, page, shots):
    page.goto(f"{ui}/session?id={SUPPORT}#turn-2")
    panel = page.locator("#span-panel")
    assert panel.is_hidden()
    page.locator("#turn-2 .wf-row.agent button.span-open").click()
    panel.wait_for(state="visible")
    assert page.inner_text("#span-title") == "invoke_agent support_bot"
    assert page.inner_text("#span-status") == "status: error: RuntimeError: the backend is down"
    assert "26.60 ms" in page.inner_text("#span-summary")
    events = page.inner_text("#span-events")
    assert "exception" in events and "the backend is down" in events
    prompt = page.locator("#span-attributes tr[data-key='gen_ai.prompt'] pre.value")
    assert prompt.inner_text() == f"Cancel it {MARKUP}"  # markup in an attribute stays text
    assert page.locator("#span-panel b, #span-panel i").count() == 0
    screenshots(page, shots, "span-panel", (1280, 800))
    page.locator("#turn-2 .wf-row.model button.span-open").click()
    page.wait_for_function("() => document.getElementById('span-title').textContent.startsWith('chat')")
    assert page.locator("#span-attributes tr[data-key='gen_ai.usage.input_tokens'] pre.value").inner_text() == "122"


def test_the_keyboard_reaches_every_span_and_escape_gives_the_focus_back(ui, page):
    page.goto(f"{ui}/session?id={SUPPORT}")
    for _ in range(300):  # Tab through the page until a span of the waterfall has the focus
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED_SPAN):
            break
    assert page.evaluate(FOCUSED_SPAN), "no span of the waterfall is reachable with Tab"
    focused = page.evaluate("() => document.activeElement.closest('.wf-row').dataset.span")
    page.keyboard.press("Enter")
    page.locator("#span-panel").wait_for(state="visible")
    assert page.evaluate("() => document.activeElement.id") == "span-panel"
    page.keyboard.press("Escape")
    assert page.locator("#span-panel").is_hidden()
    assert page.evaluate("() => document.activeElement.closest('.wf-row').dataset.span") == focused
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED_SPAN)  # the next span
    page.keyboard.press(" ")
    page.locator("#span-panel").wait_for(state="visible")


def test_long_values_are_collapsed_and_copied_whole(ui, page):
    page.goto(f"{ui}/session?id={SUPPORT}")
    page.locator("#turn-1 .wf-row.agent button.span-open").click()
    cell = page.locator("#span-attributes tr[data-key='app.request.body'] td")
    cell.wait_for()
    shown = cell.locator("pre.value").inner_text()
    assert len(shown) <= 301 and shown.endswith("…") and len(REQUEST_BODY) > 4000
    cell.locator("button.expand").click()
    assert cell.locator("pre.value").inner_text() == REQUEST_BODY
    cell.locator("button.expand").click()
    assert len(cell.locator("pre.value").inner_text()) <= 301
    cell.locator("button.copy").click()
    page.wait_for_function("() => document.querySelector('button.copy[data-copied]')")
    assert page.evaluate("() => navigator.clipboard.readText()") == REQUEST_BODY


def test_a_link_to_a_span_opens_it_on_load(ui, page):
    page.goto(f"{ui}/session?id={SUPPORT}&span={MODEL_SPAN_4}")
    page.locator("#span-panel").wait_for(state="visible")
    assert page.inner_text("#span-title") == "chat gemini-2.5-flash"
    assert page.locator("#span-attributes tr[data-key='gen_ai.response.id'] pre.value").inner_text() == "resp-4"
    selected = page.locator(".wf-row.selected")
    assert selected.count() == 1 and selected.get_attribute("data-span") == MODEL_SPAN_4
    assert page.locator("#turn-4 .wf-row.selected").count() == 1
    assert page.locator("#span-missing").count() == 0


def test_an_opened_span_is_in_the_address_and_copy_link_copies_it(ui, page):
    page.goto(f"{ui}/session?id={SUPPORT}")
    page.locator("#turn-2 .wf-row.agent button.span-open").click()
    page.locator("#span-panel").wait_for(state="visible")
    page.wait_for_function(f"() => location.search.includes('span={AGENT_SPAN_2}')")
    assert page.evaluate("() => location.hash") == "#turn-2"
    page.click("#span-link")
    page.wait_for_function("() => document.getElementById('span-link').dataset.copied === '1'")
    link = page.evaluate("() => navigator.clipboard.readText()")
    assert link == page.url and f"span={AGENT_SPAN_2}" in link and f"id={SUPPORT}" in link
    page.keyboard.press("Escape")  # closed: the address no longer opens a span
    page.wait_for_function("() => !location.search.includes('span=')")
    page.goto(link)  # the copied link, pasted: the same span, open
    page.locator("#span-panel").wait_for(state="visible")
    assert page.inner_text("#span-title") == "invoke_agent support_bot"
    assert page.inner_text("#span-status") == "status: error: RuntimeError: the backend is down"
    assert page.locator("#turn-2 .wf-row.selected").get_attribute("data-span") == AGENT_SPAN_2


def test_a_span_the_page_does_not_draw_is_said_and_a_bad_one_is_a_400(ui, page):
    page.goto(f"{ui}/session?id={SUPPORT}&span={'f' * 16}")
    assert "is not among the spans drawn on this page" in page.inner_text("#span-missing")
    assert page.locator("#span-panel").is_hidden()
    reply = page.request.get(f"{ui}/session?id={SUPPORT}&span=%3Cb%3E")
    assert reply.status == 400 and "span=" in reply.text() and "hex digits" in reply.text()
