"""A turn of 5,000 spans on the session page, in real headless Chromium: every span is in its waterfall, drawn a
window at a time as the box scrolls; a subtree folds; "errors only" keeps the failed span and the spans above it;
"find in spans" finds a value of an attribute and marks a name; the view (find, errors only, folded spans, the open
span) is in the address and a reload shows it again; ``/`` focuses the find box and j / k move from span to span; a
20 KB tool result is shown cut until "show all"."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlparse

import pytest

from tests.helpers.axe import axe_findings
from tests.helpers.ui import Watched, browser, serve_ui
from toolpath.model import Invocation, ToolCall
from toolpath.store.spanrecord import STATUS_ERROR, STATUS_OK, SpanRecord
from toolpath.store.store import Store

SESSION = "big-trace"
TRACE = f"{4242:032x}"
ROOT = f"{1:016x}"
STEPS, CHILDREN = 40, 124
SPANS = 1 + STEPS + STEPS * CHILDREN
"""The turn's spans: an agent span, 40 steps under it and 124 spans under each step."""
FAILED_STEP, FAILED_CHILD = 30, 77
FOUND_STEP, FOUND_CHILD = 12, 5
NEEDLE = "needle-4242"
"""A value of an attribute of one span (its name does not say it)."""
T0 = 1_780_000_000 * 10**9
MS = 1_000_000
BIG_RESULT = "y" * 20_000


def step_id(step: int) -> str:
    return f"{1000 + step:016x}"


def child_id(step: int, child: int) -> str:
    return f"{100_000 + step * 1000 + child:016x}"


def span_at(row: int) -> str:
    """The span of the waterfall's ``row`` (0: the root), all unfolded."""
    if row == 0:
        return ROOT
    step, place = divmod(row - 1, CHILDREN + 1)
    return step_id(step) if place == 0 else child_id(step, place - 1)


def big_trace() -> tuple[Invocation, list[SpanRecord]]:
    spans = [
        SpanRecord(TRACE, ROOT, None, "invoke_agent planner", 1, T0, T0 + 5000 * MS, STATUS_OK, None,
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"})
    ]  # fmt: skip
    for step in range(STEPS):
        begin = T0 + step * 120 * MS
        spans.append(
            SpanRecord(TRACE, step_id(step), ROOT, f"step {step}", 1, begin, begin + 120 * MS, STATUS_OK, None, {})
        )
        for child in range(CHILDREN):
            failed = (step, child) == (FAILED_STEP, FAILED_CHILD)
            attributes: dict[str, object] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
            if (step, child) == (FOUND_STEP, FOUND_CHILD):
                attributes["app.order.ref"] = NEEDLE
            name = "execute_tool charge_card" if failed else f"execute_tool lookup {step}.{child}"
            spans.append(
                SpanRecord(TRACE, child_id(step, child), step_id(step), name, 1, begin + child * MS,
                           begin + child * MS + MS // 2, STATUS_ERROR if failed else STATUS_OK,
                           "CardDeclined: no funds" if failed else None, attributes)
            )  # fmt: skip
    assert len(spans) == SPANS
    turn = Invocation(
        invocation_id=f"{TRACE}-{ROOT}",
        session_id=SESSION,
        trace_id=TRACE,
        agent_name="planner",
        prompt="plan the week",
        response="done",
        tool_calls=[ToolCall(name="lookup", args={"q": "week"}, result=BIG_RESULT, start_time=T0, end_time=T0 + MS)],
        latency_seconds=5.0,
        started_at=datetime.fromtimestamp(T0 / 1e9, UTC),
    )
    return turn, spans


LONG = "twelve-turns"
"""A session of 12 turns (two pages of them), each an agent span over a tool span."""


def long_session() -> tuple[list[Invocation], list[SpanRecord]]:
    turns, spans = [], []
    for n in range(12):
        trace, root, start = f"{9000 + n:032x}", f"{9000 + n:016x}", T0 + n * 60 * 10**9
        spans += [
            SpanRecord(trace, root, None, "invoke_agent planner", 1, start, start + 10 * MS, STATUS_OK, None, {}),
            SpanRecord(trace, f"{9100 + n:016x}", root, f"execute_tool tool{n}", 1, start + MS, start + 2 * MS,
                       STATUS_OK, None, {}),
        ]  # fmt: skip
        turns.append(
            Invocation(invocation_id=f"{trace}-{root}", session_id=LONG, trace_id=trace, agent_name="planner",
                       prompt=f"turn {n}", response="ok", latency_seconds=0.01,
                       started_at=datetime.fromtimestamp(start / 1e9, UTC))
        )  # fmt: skip
    return turns, spans


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-big-trace")
    store = Store(f"sqlite:///{folder / 'big.db'}")
    turn, spans = big_trace()
    turns, more = long_session()
    store.write([turn, *turns], [*spans, *more])
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture
def page(ui):
    with browser() as chromium:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        watched = Watched(context.new_page())
        yield watched.page
        assert watched.errors == [] and watched.dialogs == []
        context.close()


def drawn(page) -> list[str]:
    return page.eval_on_selector_all("#turn-1 .wf-row", "rows => rows.map(r => r.dataset.span)")


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def count_text(page) -> str:
    return page.inner_text("#turn-1 .wf-count")


def test_every_span_is_in_the_waterfall_and_a_window_of_them_is_drawn(ui, page):
    page.goto(f"{ui}/session?id={SESSION}")
    page.wait_for_selector("#turn-1 .wf-row")
    assert count_text(page) == f"{SPANS} span(s)"
    first = drawn(page)
    assert first[:3] == [ROOT, step_id(0), child_id(0, 0)]  # each span right above the spans under it
    assert 0 < len(first) < 300, len(first)  # a window of the 5,001 rows, not all of them
    scroller = page.locator("#turn-1 .wf-scroll")
    box = scroller.bounding_box()
    assert box is not None and box["height"] <= 700 and box["width"] > 1100  # the page's width, not 960 px
    scroller.evaluate("box => { box.scrollTop = box.scrollHeight; }")
    page.wait_for_function(
        f"() => !!document.querySelector(\"#turn-1 .wf-row[data-span='{child_id(STEPS - 1, CHILDREN - 1)}']\")"
    )
    assert ROOT not in drawn(page)
    page.locator(f".wf-row[data-span='{child_id(STEPS - 1, CHILDREN - 1)}'] button.span-open").click()
    page.locator("#span-panel").wait_for(state="visible")
    assert page.inner_text("#span-title") == f"execute_tool lookup {STEPS - 1}.{CHILDREN - 1}"


def test_a_subtree_folds_and_stays_folded_in_the_address(ui, page):
    page.goto(f"{ui}/session?id={SESSION}")
    fold = page.locator(f".wf-row[data-span='{step_id(0)}'] button.fold")
    assert fold.get_attribute("aria-expanded") == "true"
    fold.click()
    assert count_text(page) == f"{SPANS - CHILDREN} of {SPANS} span(s) shown"
    assert drawn(page)[:3] == [ROOT, step_id(0), step_id(1)]
    assert query(page)["fold"] == [step_id(0)]
    page.reload()
    page.wait_for_selector("#turn-1 .wf-row")
    assert drawn(page)[:3] == [ROOT, step_id(0), step_id(1)]
    assert page.get_attribute(f".wf-row[data-span='{step_id(0)}'] button.fold", "aria-expanded") == "false"
    page.locator(f".wf-row[data-span='{ROOT}'] button.fold").click()  # the root folded: one row left
    assert drawn(page) == [ROOT]
    page.click("#unfold-all")
    assert count_text(page) == f"{SPANS} span(s)" and "fold" not in query(page)


def test_errors_only_keeps_the_failed_span_and_the_spans_above_it(ui, page):
    page.goto(f"{ui}/session?id={SESSION}")
    page.check("#errors-only")
    assert drawn(page) == [ROOT, step_id(FAILED_STEP), child_id(FAILED_STEP, FAILED_CHILD)]
    assert count_text(page) == f"3 of {SPANS} span(s) shown · 1 failed"
    assert query(page)["errors"] == ["1"]
    page.reload()
    page.wait_for_selector("#turn-1 .wf-row")
    assert page.is_checked("#errors-only") and len(drawn(page)) == 3
    page.focus("#errors-only")
    page.keyboard.press("j")  # from the check box (not a text field): to the first span
    assert page.evaluate("() => document.activeElement.closest('.wf-row').dataset.span") == ROOT
    page.uncheck("#errors-only")
    assert len(drawn(page)) > 3 and "errors" not in query(page)


def test_find_reads_attribute_values_and_marks_names(ui, page):
    page.goto(f"{ui}/session?id={SESSION}")
    page.wait_for_selector("#turn-1 .wf-row")
    page.keyboard.press("/")  # "/" goes to the find box
    assert page.evaluate("() => document.activeElement.id") == "span-find"
    page.keyboard.type(NEEDLE.upper())  # any case
    page.wait_for_function("() => document.querySelectorAll('#turn-1 .wf-row').length === 3")
    assert drawn(page) == [ROOT, step_id(FOUND_STEP), child_id(FOUND_STEP, FOUND_CHILD)]
    assert page.locator("#turn-1 .wf-row.match").count() == 1
    assert page.locator("#turn-1 .wf-row.context").count() == 2  # the spans above it, shown as its path
    assert count_text(page).endswith("· 1 match(es)")
    assert query(page)["find"] == [NEEDLE.upper()]
    page.fill("#span-find", "charge_card")
    page.wait_for_function("() => document.querySelectorAll('#turn-1 .wf-row mark').length === 1")
    assert page.inner_text("#turn-1 .wf-row mark") == "charge_card"
    page.goto(f"{ui}/session?id={SESSION}&find=charge_card&errors=1")  # a link reproduces the view
    page.wait_for_selector("#turn-1 .wf-row")
    assert page.input_value("#span-find") == "charge_card" and page.is_checked("#errors-only")
    assert drawn(page)[-1] == child_id(FAILED_STEP, FAILED_CHILD)
    page.fill("#span-find", "no such span anywhere")
    page.wait_for_function("() => document.querySelectorAll('#turn-1 .wf-row').length === 0")
    assert count_text(page) == f"0 of {SPANS} span(s) shown · 0 match(es)"


def test_a_link_opens_a_span_far_down_the_trace_even_under_a_folded_span(ui, page):
    deep = child_id(FAILED_STEP, FAILED_CHILD)
    page.goto(f"{ui}/session?id={SESSION}&fold={step_id(FAILED_STEP)}&span={deep}")
    page.locator("#span-panel").wait_for(state="visible")
    assert page.inner_text("#span-title") == "execute_tool charge_card"
    assert page.inner_text("#span-status") == "status: error: CardDeclined: no funds"
    selected = page.locator("#turn-1 .wf-row.selected")
    assert selected.get_attribute("data-span") == deep and selected.is_visible()
    assert "fold" not in query(page)  # the span it was under was unfolded to show it
    page.keyboard.press("Escape")
    assert page.locator("#span-panel").is_hidden() and "span" not in query(page)


def test_j_and_k_move_from_span_to_span(ui, page):
    page.goto(f"{ui}/session?id={SESSION}")
    page.wait_for_selector("#turn-1 .wf-row")
    focused = (
        "() => document.activeElement.closest('.wf-row') && document.activeElement.closest('.wf-row').dataset.span"
    )
    page.keyboard.press("j")
    assert page.evaluate(focused) == ROOT
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.evaluate(focused) == child_id(0, 0)
    page.keyboard.press("k")
    assert page.evaluate(focused) == step_id(0)
    page.keyboard.press("Enter")
    page.locator("#span-panel").wait_for(state="visible")
    assert page.inner_text("#span-title") == "step 0"
    page.keyboard.press("Escape")
    assert page.evaluate(focused) == step_id(0)  # Escape gave the focus back to the span
    for _ in range(400):  # past the drawn window: the rows below are drawn as the focus reaches them
        page.keyboard.press("j")
    assert page.evaluate(focused) == span_at(401)


def test_a_20_kb_tool_result_is_cut_until_show_all(ui, page):
    page.goto(f"{ui}/session?id={SESSION}")
    page.locator("ol.trajectory summary", has_text="result").click()
    result = page.locator("pre.result")
    box = result.bounding_box()
    assert box is not None and box["height"] < 200, box
    more = page.locator("ol.trajectory button.expand")
    assert more.inner_text() == f"show all {len(BIG_RESULT) + 2} characters"  # the JSON string, quoted
    more.click()
    box = result.bounding_box()
    assert box is not None and box["height"] > 400
    assert more.inner_text() == "show less" and more.get_attribute("aria-expanded") == "true"


def test_axe_and_a_390_px_phone_on_the_big_trace(ui):
    with browser() as chromium:
        watched = Watched(chromium.new_page(viewport={"width": 390, "height": 800}))
        page = watched.page
        page.goto(f"{ui}/session?id={SESSION}&fold={step_id(1)}")
        page.wait_for_selector("#turn-1 .wf-row")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        assert axe_findings(page) == []
        page.goto(f"{ui}/session?id={SESSION}&find=lookup&errors=1&span={child_id(FAILED_STEP, FAILED_CHILD)}")
        page.locator("#span-panel").wait_for(state="visible")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        assert axe_findings(page) == []
        assert watched.errors == []


def test_the_view_goes_with_the_other_pages_of_turns_and_a_turn_link(ui, page):
    page.goto(f"{ui}/session?id={LONG}")
    page.fill("#span-find", "TOOL1")
    page.wait_for_function("() => document.querySelectorAll('.wf-row.match').length === 1")  # turn 2's tool1
    page.check("#errors-only")
    page.click("#next-page")
    page.wait_for_url(lambda address: "page=2" in address)
    assert query(page)["find"] == ["TOOL1"] and query(page)["errors"] == ["1"]
    assert page.input_value("#span-find") == "TOOL1" and page.is_checked("#errors-only")
    page.uncheck("#errors-only")
    page.wait_for_function("() => document.querySelectorAll('.wf-row.match').length === 2")  # tool10 and tool11
    assert "errors" not in parse_qs(urlparse(page.get_attribute("#previous-page", "href")).query)
    page.goto(f"{ui}/turn/{9011:032x}-{9011:016x}?find=tool11&fold={9011:016x}")
    assert query(page)["page"] == ["2"] and query(page)["find"] == ["tool11"]
    assert urlparse(page.url).fragment == "turn-12"
    assert page.get_attribute(f".wf-row[data-span='{9011:016x}'] button.fold", "aria-expanded") == "false"
