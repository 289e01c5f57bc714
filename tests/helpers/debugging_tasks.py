"""Issue 48's ten debugging tasks, each done as a user does it — clicks and keys in a real Chromium page of the UI —
over a store of :mod:`tests.helpers.debugging_day`. Every task asserts what the page must say; an assertion fails
if the feature behind it broke. Shared by ``tests/ui/test_debugging_tasks.py`` (a small store) and
``benchmarks/bench_debugging_day.py`` (100,000 turns)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.helpers.debugging_day import (
    BASELINE,
    BIG,
    CAPPED,
    CHILDREN,
    COSTLY,
    FAILED_CHILD,
    FAILED_STEP,
    FOUND_CHILD,
    FOUND_STEP,
    KEPT,
    NEEDLE,
    NEWER,
    REGRESSED,
    SEARCH,
    SEARCHED,
    SENT,
    TIMEOUT,
    Day,
    hex_id,
)

FOCUSED_ROW = (
    "() => { const row = document.activeElement.closest('tr.session'); return row ? row.dataset.session : null; }"
)


def sessions_shown(page: Any) -> list[str]:
    return page.eval_on_selector_all("#sessions tr.session", "rows => rows.map((r) => r.dataset.session)")


def submit_filters(page: Any, expected: str) -> None:
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(expected))


def compare_runs(page: Any, url: str, day: Day) -> None:
    """1. The baseline and a newer run that regressed, ticked in either order: A is the baseline, and the
    regressions are "broken", never "fixed"."""
    for ticked in ((NEWER, BASELINE), (BASELINE, NEWER)):
        page.goto(f"{url}/runs")
        for run_id in ticked:
            page.check(f"input.pick[value='{run_id}']")
        page.click("#compare-button")
        page.wait_for_url(re.compile(r"/compare\?run="))
        assert (page.inner_text("#run-a"), page.inner_text("#run-b")) == (BASELINE, NEWER), ticked
        assert "older" in page.inner_text("#baseline")
        assert (page.inner_text("#fixed-count"), page.inner_text("#broken-count")) == ("0 fixed", f"{REGRESSED} broken")
        flips = [case.get_attribute("data-flip") for case in page.locator("tbody.compared-case").all()]
        assert flips.count("broken") == REGRESSED and "fixed" not in flips, flips


def capped_turn(page: Any, url: str, day: Day) -> None:
    """2. The capped turn's row in the sessions list and its turn's header say what the cap cut."""
    page.goto(f"{url}/sessions")
    row = page.locator("tr.session", has=page.locator("td.calls .badge.cut"))
    assert row.count() == 1 and row.get_attribute("data-session") == CAPPED
    assert row.locator("td.calls").inner_text() == f"{KEPT} of {SENT}"
    assert f"left {SENT - KEPT} out" in (row.locator(".badge.cut").get_attribute("title") or "")
    row.locator("td.sid a").click()
    page.wait_for_url(re.compile(rf"/session\?id={CAPPED}"))
    said = page.inner_text("#turn-1 h2 .calls")
    assert said == f"{KEPT} of {SENT} tool calls kept: {SENT - KEPT} left out by the collector's cap", said


def span_link(page: Any, url: str, day: Day) -> None:
    """3. A span opened, its link copied, the link loaded in a fresh tab: the same span, open."""
    n = day.latest_failing_charge()
    span = hex_id(day.tool_span(n, "charge_card"))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    page.goto(f"{url}/session?id={day.session(n)}")
    page.locator(f"#turn-{n % 5 + 1} .wf-row[data-span='{span}'] button.span-open").click()
    page.locator("#span-panel").wait_for(state="visible")
    page.wait_for_function(f"() => location.search.includes('span={span}')")
    page.click("#span-link")
    page.wait_for_function("() => document.getElementById('span-link').dataset.copied === '1'")
    link = page.evaluate("() => navigator.clipboard.readText()")
    assert link == page.url and f"span={span}" in link
    fresh = page.context.new_page()
    try:
        fresh.goto(link)
        fresh.locator("#span-panel").wait_for(state="visible")
        assert fresh.inner_text("#span-title") == "execute_tool charge_card"
        assert fresh.locator(".wf-row.selected").get_attribute("data-span") == span
    finally:
        fresh.close()


def errors_first(page: Any, url: str, day: Day) -> None:
    """4. The Errors page groups the failing tool's exception and links its latest failing span; the "last hour"
    preset narrows the sessions list to the sessions active in it."""
    n = day.latest_failing_charge()
    agent = day.agent(n)
    page.goto(f"{url}/errors")
    group = page.locator(f"tr.error-group[data-kind='TimeoutError'][data-tool='charge_card'][data-agent='{agent}']")
    assert int(group.locator("td.count").inner_text()) == len(day.failing_charges(agent))
    assert group.locator("td.message").inner_text() == TIMEOUT
    group.locator("a.span-link").click()
    page.wait_for_url(re.compile(r"/session\?"))
    assert f"span={hex_id(day.tool_span(n, 'charge_card'))}" in page.url and f"id={day.session(n)}" in page.url
    page.locator("#span-panel").wait_for(state="visible")
    assert page.inner_text("#span-title") == "execute_tool charge_card"
    assert "TimeoutError" in page.inner_text("#span-events")  # the exception the tool's span recorded
    page.goto(f"{url}/sessions")
    page.click("#presets a[data-preset='1h']")
    page.wait_for_url(re.compile(r"last=1h"))
    recent = day.last_hour()
    assert page.inner_text("#total") == str(len(recent))
    shown = sessions_shown(page)
    assert shown and set(shown) <= recent and len(shown) == min(50, len(recent))


def tools_page(page: Any, url: str, day: Day) -> None:
    """5. The slowest tool first by p95, the tool that fails most first by errors."""
    page.goto(f"{url}/tools")
    page.click("#sort-p95")
    page.wait_for_url(re.compile(r"sort=p95"))
    slowest = page.locator("tr.tool-row").first
    assert slowest.get_attribute("data-tool") == "fetch_report"
    assert float(slowest.locator("td.max").inner_text().removesuffix(" ms")) >= 900
    page.click("#sort-errors")
    page.wait_for_url(re.compile(r"sort=errors"))
    assert page.locator("tr.tool-row").first.get_attribute("data-tool") == "charge_card"


def cost_and_search(page: Any, url: str, day: Day) -> None:
    """6. The most expensive session first by cost; a word of a tool result finds its session."""
    page.goto(f"{url}/sessions")
    page.click("#sort-cost")
    page.wait_for_url(re.compile(r"sort=cost&order=desc"))
    assert sessions_shown(page)[0] == COSTLY
    page.fill("input[name=q]", SEARCHED)
    submit_filters(page, rf"q={SEARCHED}")
    assert sessions_shown(page) == [SEARCH]


def users_sessions(page: Any, url: str, day: Day) -> None:
    """7. A user's sessions, from the user column of a session's row."""
    page.goto(f"{url}/sessions")
    link = page.locator(f"tr.session[data-session='s{day.sessions - 1:06d}'] td.user a")
    user = link.inner_text()
    link.click()
    page.wait_for_url(re.compile(rf"user={user}"))
    assert page.inner_text("#total") == str(day.sessions_of(user))
    assert set(page.locator("#sessions tr.session td.user").all_inner_texts()) == {user}


def big_trace(page: Any, url: str, day: Day) -> None:
    """8. A trace of hundreds of spans: a subtree folded, errors only, find in the trace."""
    n = day.special(BIG)
    spans = len(day.spans(n))
    page.goto(f"{url}/session?id={BIG}")
    page.wait_for_selector("#turn-1 .wf-row")
    count = page.locator("#turn-1 .wf-count")
    assert count.inner_text() == f"{spans} span(s)"
    page.locator(f".wf-row[data-span='{hex_id(day.step_id(n, 0))}'] button.fold").click()
    assert count.inner_text() == f"{spans - CHILDREN} of {spans} span(s) shown"
    page.click("#unfold-all")
    page.check("#errors-only")
    drawn = page.eval_on_selector_all("#turn-1 .wf-row", "rows => rows.map((r) => r.dataset.span)")
    failed = [day.ids(n)[1], day.step_id(n, FAILED_STEP), day.child_id(n, FAILED_STEP, FAILED_CHILD)]
    assert drawn == [hex_id(s) for s in failed]
    page.uncheck("#errors-only")
    page.fill("#span-find", NEEDLE)
    page.wait_for_function("() => document.querySelectorAll('#turn-1 .wf-row.match').length === 1")
    found = page.get_attribute("#turn-1 .wf-row.match", "data-span")
    assert found == hex_id(day.child_id(n, FOUND_STEP, FOUND_CHILD))


def online_by_traffic_time(page: Any, url: str, day: Day) -> None:
    """9. Scores stored within minutes of each other are charted over the six days of the traffic they score."""
    page.goto(f"{url}/online?days=7")
    assert page.locator("tr.series").count() >= 1
    starts = page.eval_on_selector_all("tr.series [data-start]", "marks => marks.map((m) => m.dataset.start)")
    days = {start[:10] for start in starts}
    assert len(days) >= 5, days


def state_and_keys(page: Any, url: str, day: Day) -> None:
    """10. A filter survives a reload (it is in the address); ``/`` focuses the search, j and k move by rows."""
    page.goto(f"{url}/sessions")
    page.select_option("#filters select[name=agent]", "agent-1")
    page.check("#filters input[name=failures]")
    submit_filters(page, r"agent=agent-1.*failures=1|failures=1.*agent=agent-1")
    shown = sessions_shown(page)
    assert len(shown) >= 2
    page.reload()
    assert page.input_value("#filters select[name=agent]") == "agent-1" and page.is_checked("input[name=failures]")
    assert sessions_shown(page) == shown
    assert set(page.locator("#sessions tr.session td:nth-child(3)").all_inner_texts()) == {"agent-1"}
    page.locator("h1").click()
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.name") == "q"
    page.locator("h1").click()
    page.keyboard.press("j")
    assert page.evaluate(FOCUSED_ROW) == shown[0]
    page.keyboard.press("j")
    assert page.evaluate(FOCUSED_ROW) == shown[1]
    page.keyboard.press("k")
    assert page.evaluate(FOCUSED_ROW) == shown[0]


@dataclass(frozen=True)
class Task:
    name: str
    run: Callable[[Any, str, Day], None]


TASKS = tuple(
    Task(run.__name__.replace("_", " "), run)
    for run in (compare_runs, capped_turn, span_link, errors_first, tools_page, cost_and_search, users_sessions,
                big_trace, online_by_traffic_time, state_and_keys)
)  # fmt: skip
"""The ten tasks, in the issue's order."""
