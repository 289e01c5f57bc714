"""The sessions list ordered store-wide: the server orders every matching session by the chosen column, not the
page the browser shows, and pages follow that order. In real headless Chromium over SQLite, and the ordering
query on SQLite and PostgreSQL against orders computed here from the rows themselves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, update

from tests.helpers.ui import (
    Watched,
    announced_screenshot_folder,
    browser,
    bulk_store,
    screenshots,
    serve_ui,
)
from toolpath.store import schema as t
from toolpath.store import turn_usage
from toolpath.store.session_filter import SessionFilter
from toolpath.store.session_order import SessionSort, ordered_session_page
from toolpath.store.store import Store
from toolpath.store.usage import ModelPrice

SLOW = "s000003"
"""An old session (page 2 of the newest-first list) with the slowest turn of the store."""


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-sorted")
    store = bulk_store(f"sqlite:///{folder / 'sorted.db'}", 600)  # 120 sessions, every turn 0.5 s
    with store.engine.begin() as conn:
        conn.execute(
            update(t.invocations).where(t.invocations.c.invocation_id == "i0000017").values(latency_seconds=9.0)
        )
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return announced_screenshot_folder(tmp_path_factory.getbasetemp())


def test_sorting_by_latency_orders_the_whole_store_not_the_page(ui, shots):
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        page.goto(f"{ui}/sessions")
        rows = page.locator("tr.session")
        assert rows.count() == 50 and page.locator(f"tr.session[data-session='{SLOW}']").count() == 0
        page.click("#sort-latency")
        page.wait_for_url(re.compile(r"sort=latency&order=desc"))
        assert rows.first.get_attribute("data-session") == SLOW
        assert page.locator("#sessions th[aria-sort=descending]").inner_text().startswith("slowest turn")
        assert page.inner_text("#total") == "120"
        first_page = [rows.nth(i).get_attribute("data-session") for i in range(rows.count())]
        page.click("#next-page")  # pages follow the order: ties by session id, none shown twice
        page.wait_for_url(re.compile(r"page=2"))
        second_page = [rows.nth(i).get_attribute("data-session") for i in range(rows.count())]
        assert len(second_page) == 50 and not set(first_page) & set(second_page)
        assert second_page == sorted(second_page) and first_page[1:] == sorted(first_page[1:])
        assert "sort=latency" in page.url and page.inner_text("#page-number") == "page 2"
        screenshots(page, shots, "sessions-sorted", (1280, 800))
        page.fill("#filters input[name=tool]", "lookup")  # filtering keeps the order, from the first page
        page.click("#filters button[type=submit]")
        page.wait_for_url(re.compile(r"tool=lookup"))
        assert "sort=latency" in page.url and "page=" not in page.url
        assert rows.first.get_attribute("data-session") == SLOW

        page.goto(f"{ui}/sessions?agent=agent-0")  # a filter and an order together; the keyboard follows the link
        page.focus("#sort-latency")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"agent=agent-0&sort=latency"))
        assert rows.first.get_attribute("data-session") == SLOW  # s000003 is agent-0 (3 % 3)
        assert page.inner_text("#total") == "40"
        page.focus("#sort-latency")
        page.keyboard.press("Enter")  # again: the other way round, the slow session last
        page.wait_for_url(re.compile(r"order=asc"))
        page.goto(page.url.replace("page=", "") + "&page=1")
        assert page.locator(f"tr.session[data-session='{SLOW}']").count() == 1
        assert rows.nth(rows.count() - 1).get_attribute("data-session") == SLOW
        assert watched.errors == []


def test_a_bad_order_is_a_400_naming_it(ui):
    with browser() as chromium:
        page = chromium.new_page()
        answer = page.goto(f"{ui}/sessions?sort=speed")
        assert answer is not None and answer.status == 400 and "sort='speed'" in page.inner_text("main")
        answer = page.goto(f"{ui}/sessions?sort=latency&after=1:s1")
        assert answer is not None and answer.status == 400 and "page=" in page.inner_text("main")
        answer = page.goto(f"{ui}/sessions?page=2")
        assert answer is not None and answer.status == 400 and "after=" in page.inner_text("main")


def _fill(store: Store) -> dict[str, dict[str, Any]]:
    """Six sessions with varied turns, failures, calls, latencies, tokens and costs; returns each one's values."""
    expected: dict[str, dict[str, Any]] = {}
    with store.engine.begin() as conn:
        for k in range(6):
            sid, turns = f"sess-{k}", 1 + (k * 5) % 4
            conn.execute(insert(t.sessions).values(session_id=sid, agent_name=f"a{k % 2}", first_started_at=k,
                                                   last_started_at=100 + k))  # fmt: skip
            values: dict[str, Any] = {
                "turns": turns,
                "failures": 0,
                "calls": 0,
                "latency": None,
                "tokens": 0,
                "cost": 0.0,
            }
            for j in range(turns):
                iid, trace = f"{sid}-{j}", f"{k:016x}{j:016x}"
                failed = (k + j) % 3 == 0
                latency = None if failed else 0.1 * ((k * 7 + j * 3) % 10)
                conn.execute(insert(t.invocations).values(
                    invocation_id=iid, session_id=sid, trace_id=trace, agent_name=f"a{k % 2}", prompt="p",
                    response="r", intermediate_responses=[], latency_seconds=latency, failure=int(failed),
                    started_at=k * 10 + j, attributes={}))  # fmt: skip
                calls = (k + 2 * j) % 3
                for c in range(calls):
                    conn.execute(insert(t.tool_calls).values(invocation_id=iid, position=c, name="f", args={}))
                tokens_in, tokens_out = 100 * k + j, 10 * j
                model = "priced" if k % 2 else "reported"
                attributes = {"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out,
                              "gen_ai.request.model": model}  # fmt: skip
                cost = tokens_in * 2 / 1e6 + tokens_out * 8 / 1e6
                if model == "reported":
                    attributes["gen_ai.usage.cost.total"] = cost = 0.001 * (k + j)
                conn.execute(insert(t.spans).values(
                    trace_id=trace, span_id=f"{j:016x}", name="chat", kind=0, start_time=0, status_code=0,
                    attributes=attributes, events=[], resource={}))  # fmt: skip
                values["failures"] += failed
                values["calls"] += calls
                if latency is not None:  # a failed turn has no latency; a session of only those, none
                    values["latency"] = max(values["latency"] or 0.0, latency)
                values["tokens"] += tokens_in + tokens_out
                values["cost"] += cost
            expected[sid] = values
        turn_usage.backfill(conn)  # the rows above bypass the write path: their usage kept as migration 0011 does
    return expected


@pytest.mark.parametrize("key", ["turns", "failures", "calls", "latency", "tokens", "cost"])
def test_each_order_is_the_stores_on_sqlite_and_postgresql(store, key):
    expected = _fill(store)
    prices = {"priced": ModelPrice("priced", 2.0, 8.0)}
    for descending in (True, False):
        found = []
        for number in (1, 2, 3):
            ordered = ordered_session_page(store, SessionFilter(), SessionSort(key), descending=descending,
                                           page=number, limit=2, prices=prices)  # fmt: skip
            found += [r["session_id"] for r in ordered.page.rows]
            assert ordered.more == (number < 3) and ordered.page.total == 6
        valued = sorted((s for s in expected if expected[s][key] is not None),
                        key=lambda s: (-expected[s][key] if descending else expected[s][key], s))  # fmt: skip
        want = valued + sorted(s for s in expected if expected[s][key] is None)  # no value: last, either way
        assert [expected[s][key] for s in found] == pytest.approx([expected[s][key] for s in want])
        assert found == want
    only = ordered_session_page(store, SessionFilter(agent="a1"), SessionSort(key), descending=True,
                                prices=prices)  # fmt: skip
    assert {r["session_id"] for r in only.page.rows} == {"sess-1", "sess-3", "sess-5"}
