"""A user's sessions and the cost order in real headless Chromium, over a store written through the write path:
the user kept on each turn (``user.id`` of a span or ``enduser.id`` of its resource), the list's user column and
filter, and the whole store ordered by cost: reported costs and tokens priced on the Prices page."""

from __future__ import annotations

import re

import pytest

from tests.helpers.ui import Watched, browser, serve_ui
from toolpath.model import Invocation, invocation_key
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store
from toolpath.store.usage import set_price
from toolpath.tracer import semconv as sc

SESSIONS = 12


def _turn(k: int) -> tuple[Invocation, list[SpanRecord]]:
    """Session ``k``'s one turn: an agent span, and a model call below it. Even sessions are alice's (a span
    attribute), odd ones bob's (the resource); every third session's call reports its cost."""
    trace, agent, call = f"{k + 1:032x}", f"{k + 1:016x}", f"{k + 101:016x}"
    user = {"user.id": "alice"} if k % 2 == 0 else {}
    resource = {"service.name": "bot", **({"enduser.id": "bob"} if k % 2 else {})}
    usage: dict[str, object] = {sc.GEN_AI_REQUEST_MODEL: "m", sc.GEN_AI_USAGE_INPUT_TOKENS: 1000 * (k + 1),
                                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10}  # fmt: skip
    if k % 3 == 0:
        usage[sc.GEN_AI_USAGE_COST_TOTAL] = 0.5 * k
    start = 1_780_000_000 * 10**9 + k * 10**9
    spans = [
        SpanRecord(trace, agent, None, "invoke_agent bot", 1, start, start + 5, attributes=user, resource=resource),
        SpanRecord(trace, call, agent, "chat m", 3, start + 1, start + 2, attributes=usage, resource=resource),
    ]
    invocation = Invocation(invocation_id=invocation_key(trace, agent), session_id=f"s{k:02d}", trace_id=trace,
                            agent_name="bot", prompt=f"question {k}")  # fmt: skip
    return invocation, spans


def _cost(k: int, price_per_million: float) -> float:
    return 0.5 * k if k % 3 == 0 else 1000 * (k + 1) * price_per_million / 1e6


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-users")
    store = Store(f"sqlite:///{folder / 'users.db'}")
    for k in range(SESSIONS):
        invocation, spans = _turn(k)
        store.write([invocation], spans)
    set_price(store, "m", 100.0, 0.0)  # 0.1 per 1,000 input tokens
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


def test_the_user_column_and_filter_show_a_users_sessions(ui):
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        page.goto(f"{ui}/sessions")
        rows = page.locator("tr.session")
        assert rows.count() == SESSIONS
        assert page.locator("tr.session[data-session='s03'] td.user").inner_text() == "bob"
        page.fill("#filters input[name=user]", "alice")
        page.click("#filters button[type=submit]")
        page.wait_for_url(re.compile(r"user=alice"))
        shown = {rows.nth(i).get_attribute("data-session") for i in range(rows.count())}
        assert shown == {f"s{k:02d}" for k in range(0, SESSIONS, 2)}
        assert page.inner_text("#total") == str(SESSIONS // 2)
        page.goto(f"{ui}/sessions")
        page.click("tr.session[data-session='s05'] td.user a")  # a user's sessions, from the list
        page.wait_for_url(re.compile(r"user=bob"))
        shown = {rows.nth(i).get_attribute("data-session") for i in range(rows.count())}
        assert shown == {f"s{k:02d}" for k in range(1, SESSIONS, 2)}
        page.goto(f"{ui}/sessions?q=bob")  # the text search finds a user too, without reading spans
        assert rows.count() == SESSIONS // 2
        assert watched.errors == []


def test_ordering_by_cost_orders_every_session_by_reported_and_priced_cost(ui):
    with browser() as chromium:
        watched = Watched(chromium.new_page())
        page = watched.page
        page.goto(f"{ui}/sessions?user=alice")
        page.click("#sort-cost")
        page.wait_for_url(re.compile(r"sort=cost&order=desc"))
        rows = page.locator("tr.session")
        shown = [rows.nth(i).get_attribute("data-session") for i in range(rows.count())]
        alice = sorted(range(0, SESSIONS, 2), key=lambda k: (-_cost(k, 100.0), k))
        assert shown == [f"s{k:02d}" for k in alice]
        assert "user=alice" in page.url
        assert watched.errors == []
