"""The Errors and Tools pages in real headless Chromium, over SQLite and PostgreSQL, on a store of known failures
and latencies stamped relative to now (tests/helpers/failure_store.py): the groups and their counts, the latest
failing span's link, the tools' figures and a tool's calls, the models' tokens and cost; the presets (last 15 min,
1 h, 24 h, 7 d) narrowing these pages and the sessions list; every time labelled UTC. Screenshots at 1280 and
800 px."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.failure_store import TIMEOUT, FailureStore
from tests.helpers.ui import Watched, announced_screenshot_folder, browser, screenshots, serve_ui


@pytest.fixture
def served(store, tmp_path):
    filled = FailureStore(store).fill()
    with serve_ui(store, tmp_path / "evalsets") as url, browser() as chromium:
        watched = Watched(chromium.new_page(viewport={"width": 1280, "height": 900}))
        yield url, filled, watched
        assert watched.errors == []


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def groups(page: Any) -> list[tuple[str, str, str, int]]:
    return [
        (row.get_attribute("data-kind"), row.get_attribute("data-tool"), row.get_attribute("data-agent"),
         int(row.locator("td.count").inner_text()))
        for row in page.locator("tr.error-group").all()
    ]  # fmt: skip


def preset(page: Any, value: str) -> None:
    page.click(f"#presets a[data-preset='{value}']")
    page.wait_for_url((lambda u: f"last={value}" in u) if value else (lambda u: "last=" not in u))


def test_errors_grouped_with_presets_and_the_latest_span(served, shots, store):
    url, filled, watched = served
    page = watched.page
    page.goto(f"{url}/errors")
    assert groups(page) == [
        ("TimeoutError", "fetch_weather", "forecaster", 4),
        ("RuntimeError", "", "planner", 2),
        ("KeyError", "", "planner", 1),
        ("TimeoutError", "fetch_weather", "planner", 1),
        ("", "", "planner", 1),
        ("ValueError", "fetch_weather", "forecaster", 1),
    ]
    assert page.inner_text("#failure-count") == "10" and page.inner_text("#window") == "all time"
    headers = page.locator("#errors thead").inner_text()
    assert "first seen (UTC)" in headers and "last seen (UTC)" in headers
    first = page.locator("tr.error-group").first
    assert first.locator("td.message").inner_text() == TIMEOUT
    assert page.locator("tr.error-group[data-kind=''] td.kind").inner_text() == "no type"
    screenshots(page, shots, f"errors-{store.dialect}", (1280, 800))

    preset(page, "15m")
    assert [c for *_, c in groups(page)] == [1, 1, 1] and page.inner_text("#failure-count") == "3"
    assert page.locator("#presets a.active").inner_text() == "15 min"
    assert page.input_value("#last-select") == "15m"
    assert "UTC" in page.inner_text("#window") and "the last 15 min" in page.inner_text("#window")
    preset(page, "1h")
    assert page.inner_text("#failure-count") == "5"
    preset(page, "24h")
    assert page.inner_text("#failure-count") == "7"
    preset(page, "7d")
    assert page.inner_text("#failure-count") == "9"
    page.check("#hide-eval")
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"hide_eval=1"))
    assert page.inner_text("#failure-count") == "8" and "KeyError" not in [k for k, *_ in groups(page)]
    preset(page, "")
    assert page.inner_text("#failure-count") == "9" and "hide_eval=1" in page.url  # the other filters kept

    page.goto(f"{url}/errors")
    page.locator("tr.error-group").first.locator("a.span-link").click()
    page.wait_for_url(re.compile(r"/session\?"))
    assert f"span={filled.latest_timeout_span}" in page.url and "id=weather-0" in page.url
    assert page.url.endswith("#turn-5")  # weather-0's latest turn: call 0's
    page.locator("#span-panel").wait_for(state="visible")  # the span opened in its panel
    page.wait_for_function("() => document.getElementById('span-title').textContent === 'execute_tool fetch_weather'")
    assert "TimeoutError" in page.inner_text("#span-status")
    page.goto(f"{url}/errors")
    page.locator("tr.error-group[data-kind='RuntimeError'] a.span-link").click()  # a failed turn: its agent span
    page.wait_for_url(re.compile(f"span={filled.budget_turn_span}"))
    page.wait_for_function("() => document.getElementById('span-title').textContent === 'invoke_agent planner'")
    assert "out of budget" in page.inner_text("#span-status")
    trace = filled.invocations[0].trace_id
    answer = page.evaluate(
        "(url) => fetch(url).then((r) => r.text())", f"/traces/{trace}/spans/{filled.latest_timeout_span}.json"
    )
    span = json.loads(answer)
    assert (span["status"], span["name"]) == ("error", "execute_tool fetch_weather")

    page.goto(f"{url}/errors")
    page.locator("tr.error-group").first.locator("a.sessions-link").click()
    page.wait_for_url(re.compile(r"/sessions\?"))
    shown = sorted(r.get_attribute("data-session") for r in page.locator("tr.session").all())
    assert shown == ["weather-0", "weather-1", "weather-3"]  # calls 0, 1 and 13, 7 and 19


def test_a_preset_and_times_together_are_refused(served):
    url, _, watched = served
    page = watched.page
    for path in ("errors", "tools", "sessions"):
        reply = page.goto(f"{url}/{path}?last=1h&since=2026-01-01")
        assert reply.status == 400 and "last='1h'" in page.inner_text("main")
    reply = page.goto(f"{url}/errors?last=2h")
    assert reply.status == 400 and "15m, 1h, 24h, 7d" in page.inner_text("main")
    watched.errors.clear()  # the browser logs each 400 as a failed resource


def tool_row(page: Any, tool: str, agent: str) -> Any:
    return page.locator(f"tr.tool-row[data-tool='{tool}'][data-agent='{agent}']")


def test_tools_with_latencies_calls_and_models(served, shots, store):
    url, _, watched = served
    page = watched.page
    page.goto(f"{url}/tools")
    weather = tool_row(page, "fetch_weather", "forecaster")
    cells = {c: weather.locator(f"td.{c}").inner_text() for c in ("calls", "errors", "rate", "p50", "p95", "max")}
    assert cells == {"calls": "20", "errors": "5", "rate": "25.0 %", "p50": "105.0 ms", "p95": "190.5 ms",
                     "max": "200.0 ms"}  # fmt: skip
    assert weather.locator("a.slowest-link").inner_text() == "200.0 ms"
    assert TIMEOUT in weather.locator("td.latest-failure").inner_text()
    table = tool_row(page, "book_table", "planner")
    assert table.locator("td.p95").inner_text() == "290.0 ms" and table.locator("td.errors").inner_text() == "0"
    assert "latest failure (UTC)" in page.locator("#tools thead").inner_text()
    models = {r.get_attribute("data-model"): r for r in page.locator("tr.model-row").all()}
    assert models["gemini-x"].locator("td.tokens-in").inner_text() == "200"
    assert models["gemini-x"].locator("td.cost").inner_text() == "no price"
    assert models["gemini-y"].locator("td.cost").inner_text() == "$0.0200"

    page.click("#sort-p95")
    page.wait_for_url(re.compile(r"sort=p95"))
    assert page.locator("tr.tool-row").first.get_attribute("data-tool") == "book_table"
    page.click("#sort-errors")
    page.wait_for_url(re.compile(r"sort=errors"))
    assert page.locator("tr.tool-row").first.get_attribute("data-agent") == "forecaster"

    tool_row(page, "fetch_weather", "forecaster").locator("td.tool a").click()
    page.wait_for_url(re.compile(r"tool=fetch_weather"))
    slowest = page.locator("#slowest-calls td.took").all_inner_texts()
    assert slowest[:3] == ["200.0 ms", "190.0 ms", "180.0 ms"] and len(slowest) == 10
    failed = page.locator("#failed-calls tr.call-row")
    assert failed.count() == 5 and TIMEOUT in failed.first.inner_text()
    screenshots(page, shots, f"tools-{store.dialect}", (1280, 800))
    failed.first.locator("a").click()
    page.wait_for_url(re.compile(r"/session\?id=weather-0"))

    page.goto(f"{url}/tools")
    preset(page, "1h")
    weather = tool_row(page, "fetch_weather", "forecaster")
    assert weather.locator("td.calls").inner_text() == "8" and weather.locator("td.p50").inner_text() == "90.0 ms"
    assert tool_row(page, "book_table", "planner").count() == 0  # a day ago
    assert page.locator("tr.model-row[data-model='gemini-x'] td.tokens-in").inner_text() == "100"


def test_presets_narrow_the_sessions_list(served):
    url, _, watched = served
    page = watched.page
    page.goto(f"{url}/sessions")
    assert page.locator("tr.session").count() == 9
    labels = page.locator("#filters").inner_text()
    assert "since (UTC)" in labels and "until (UTC)" in labels
    preset(page, "15m")
    shown = sorted(r.get_attribute("data-session") for r in page.locator("tr.session").all())
    assert shown == ["eval-7", "plan-1", "weather-0", "weather-1", "weather-2", "weather-3"]
    page.fill("input[name=q]", "turn")  # the form keeps the preset it shows
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"q=turn"))
    assert "last=15m" in page.url and page.locator("tr.session").count() == 6
    preset(page, "1h")
    assert page.locator("tr.session").count() == 7 and "q=turn" in page.url
    preset(page, "24h")
    assert page.locator("tr.session").count() == 8  # plan-2 is a day old, to the second
    preset(page, "7d")
    assert page.locator("tr.session").count() == 9
