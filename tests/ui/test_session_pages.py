"""The Sessions and Online pages as a debugging tool, in real headless Chromium over a varied store: a failed turn
says how long it ran; the online filter finds sessions that failed a metric, and "worse than" reads the metric's
direction; the Online page counts errored results apart and draws its pass rates on an axis with dates; the
sessions list shows ids, looks one up, searches responses, tools, arguments and ids, hides evaluation traffic,
and pages both ways with a total. Screenshots at 1280 and 800 px go to the folder printed in the output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.ui import announced_screenshot_folder, screenshots, watched_page
from tests.helpers.ui_stores import (
    BIG_ARGUMENT,
    MARKUP,
    SUPPORT,
    TOOL_ERROR_SESSION,
    served_debugging_store,
)

WIDTHS = (1280, 800)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    with served_debugging_store(tmp_path_factory.mktemp("ui-sessions")) as served:
        yield served


@pytest.fixture(scope="module")
def page(ui):
    with watched_page() as page:
        yield page


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def listed(page) -> list[str]:
    return [r.get_attribute("data-session") for r in page.locator("tr.session").all()]


def test_a_failed_turn_says_how_long_it_ran(ui, page, shots):
    url, _ = ui
    page.goto(f"{url}/session?id={SUPPORT}")
    failed = page.locator("#turn-2")
    assert "failed" in failed.locator("h2 .badge.fail").inner_text()
    latency = failed.locator("h2 .latency").inner_text()
    assert latency == "failed after 26.6 ms (from its spans)", latency  # was "no latency" above a 26.6 ms waterfall
    assert page.locator("#turn-1 h2 .latency").inner_text() == "40.0 ms"
    assert page.locator("#turn-2 pre.prompt").inner_text() == f"Cancel it {MARKUP}"  # markup stays text
    screenshots(page, shots, "session-failed-turn", WIDTHS)


def test_online_filters_by_failed_metric_and_by_direction(ui, page):
    url, _ = ui
    page.goto(f"{url}/sessions")
    page.select_option("#metric-select", "tool_error_rate")
    page.select_option("#label-select", "fail")
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"label=fail"))
    assert listed(page) == [SUPPORT]
    # tool_error_rate is lower-is-better: "worse than 0.4" is a rate above it (0.5 and 1.0), not below it
    page.goto(f"{url}/sessions?metric=tool_error_rate&worse=0.4")
    assert listed(page) == [SUPPORT]
    page.goto(f"{url}/sessions?metric=tool_error_rate&worse=1.0")
    assert listed(page) == []  # nothing is worse than the worst rate
    page.goto(f"{url}/sessions?metric=trajectory_precision&worse=0.5")
    assert listed(page) == [TOOL_ERROR_SESSION]  # higher is better: 0.25 is worse than 0.5
    page.goto(f"{url}/sessions?metric=trajectory_precision&label=fail")
    assert listed(page) == [TOOL_ERROR_SESSION]
    page.goto(f"{url}/sessions?metric=tool_error_rate&label=error")
    assert listed(page) == [SUPPORT]


def test_the_online_page_counts_errors_apart_and_has_an_axis_and_dates(ui, page, shots):
    url, _ = ui
    page.goto(f"{url}/online?days=2&until=2026-05-30&bucket=hour")
    row = page.locator("tr.series[data-metric=tool_error_rate]")
    assert row.locator("td.results").inner_text() == "5"
    assert row.locator("td.scored").inner_text() == "4"  # the errored result has no score
    assert row.locator("td.errors").inner_text() == "1"
    assert row.locator("td.num").nth(3).inner_text() == "50%"  # 2 of the 4 judged passed
    chart = row.locator("svg.rates")
    assert [tick.text_content() for tick in chart.locator("text.tick").all()] == ["100%", "50%", "0%"]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d", chart.locator("text.first-date").text_content() or "")
    assert chart.locator("text.last-date").text_content()
    row.locator("td.errors a").click()
    page.wait_for_url(re.compile(r"label=error"))
    assert listed(page) == [SUPPORT]
    page.goto(f"{url}/online?days=2&until=2026-05-30&bucket=hour")
    screenshots(page, shots, "online", WIDTHS)


def test_sessions_show_their_ids_and_one_can_be_looked_up(ui, page):
    url, _ = ui
    page.goto(f"{url}/sessions")
    first = page.locator("tr.session").first
    assert first.locator("td.sid code").inner_text() == first.get_attribute("data-session")
    page.fill("#lookup-id", TOOL_ERROR_SESSION)
    page.click("#lookup button")
    page.wait_for_url(re.compile(r"/session\?id=lights-9"))
    assert page.inner_text("#session-id") == TOOL_ERROR_SESSION


@pytest.mark.parametrize(
    ("search", "found"),
    [
        ("I could not reach the porch", TOOL_ERROR_SESSION),  # a response
        ("set_light", TOOL_ERROR_SESSION),  # a tool name
        ("porch", TOOL_ERROR_SESSION),  # an argument (and the prompt)
        ("xxxxxxxxxxxxxxxxxxxx", SUPPORT),  # inside a 4 KB argument
        ("support-", SUPPORT),  # a session id
        ("shipped", SUPPORT),  # a tool's result
    ],
)
def test_search_covers_responses_tools_arguments_and_ids(ui, page, search, found):
    url, _ = ui
    page.goto(f"{url}/sessions")
    page.fill("input[name=q]", search)
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"q="))
    assert found in listed(page)
    assert len(BIG_ARGUMENT) == 4096


def test_tool_and_tool_error_and_latency_filters(ui, page):
    url, _ = ui
    page.goto(f"{url}/sessions?tool_error=1&hide_eval=1")
    assert listed(page) == [TOOL_ERROR_SESSION]
    row = page.locator(f"tr.session[data-session='{TOOL_ERROR_SESSION}']")
    assert row.locator(".failing").inner_text() == "set_light: TimeoutError: no answer"  # which tool, what error
    page.goto(f"{url}/sessions?tool_error=1")
    assert len(listed(page)) > 1  # the demo's agents hit device errors too
    page.goto(f"{url}/sessions?tool=lookup_order")
    assert listed(page) == [SUPPORT]
    page.goto(f"{url}/sessions?slower=0.1&hide_eval=1")
    assert listed(page) == [TOOL_ERROR_SESSION]  # 0.2 s; the support turns took 0.04 s


def test_evaluation_traffic_can_be_hidden(ui, page):
    url, _ = ui
    page.goto(f"{url}/sessions?limit=500")
    everything = listed(page)
    assert any(s.startswith("eval-") for s in everything) and any(s.startswith("replay-") for s in everything)
    page.check("#hide-eval")
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"hide_eval=1"))
    assert sorted(listed(page)) == sorted([SUPPORT, TOOL_ERROR_SESSION])
    assert page.inner_text("#total") == "2"


def test_pages_go_both_ways_with_a_total(ui, page, shots):
    url, store = ui
    total = len(store.list_sessions(limit=None))
    page.goto(f"{url}/sessions?limit=20")
    assert page.inner_text("#total") == str(total)
    first = listed(page)
    assert page.locator("#previous-page").count() == 0
    page.click("#next-page")
    second = listed(page)
    assert len(second) == 20 and not set(first) & set(second)
    page.click("#next-page")
    third = listed(page)
    page.click("#previous-page")
    assert listed(page) == second
    page.click("#previous-page")
    assert listed(page) == first and page.locator("#previous-page").count() == 0
    assert third and page.inner_text("#total") == str(total)
    screenshots(page, shots, "sessions", WIDTHS)


def test_search_reaches_errors_and_on_request_span_attributes(ui, page):
    url, _ = ui
    page.goto(f"{url}/sessions?q=backend+is+down&hide_eval=1")
    assert listed(page) == [SUPPORT]  # a turn's error
    page.goto(f"{url}/sessions?q=resp-3&hide_eval=1")
    assert listed(page) == []  # a model span's gen_ai.response.id: only in spans
    page.check("#in-spans")
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"in_spans=1"))
    assert listed(page) == [SUPPORT]
