"""The UI over 100,000 invocations (20,000 sessions, a model-call span each) in SQLite, bulk-inserted: the first
page of sessions, filtered pages and pages ordered store-wide, measured in Chromium and printed (not asserted:
machines differ); the same pages over PostgreSQL, timed over HTTP."""

from __future__ import annotations

import re
import time

import pytest

from tests.helpers.ui import Watched, browser, bulk_store, serve_ui

INVOCATIONS = 100_000


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-large")
    began = time.perf_counter()
    store = bulk_store(f"sqlite:///{folder / 'large.db'}", INVOCATIONS, model_spans=True)
    print(f"\n{INVOCATIONS} invocations inserted in {time.perf_counter() - began:.1f} s")
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture(scope="module")
def chromium():
    with browser() as launched:
        yield launched


@pytest.mark.parametrize(
    ("query", "rows"),
    [
        ("", 50),
        ("?failures=1", 50),
        ("?q=garage", 50),
        ("?q=done+99999", 1),  # a response, searched through every turn
        ("?q=s019998", 1),  # a session id
        ("?q=%22n%22%3A+4242", 3),  # a tool's arguments (n 4242, 42420-42429)
        ("?agent=agent-1", 50),
        ("?metric=trajectory_precision&below=0.3", 50),
        ("?metric=trajectory_precision&label=fail&worse=0.5", 50),
        ("?tool=lookup&hide_eval=1&slower=0.1", 50),
        ("?since=2026-05-29", 50),
        ("?sort=latency", 50),  # ordered store-wide, not the page
        ("?sort=calls&order=asc", 50),
        ("?sort=tokens", 50),
        ("?sort=cost&hide_eval=1", 50),
        ("?sort=failures&agent=agent-2&page=3", 50),
    ],
)
def test_pages_of_a_large_store(ui, chromium, query, rows):
    """The time is printed with the server's own query time (the page shows it)."""
    watched = Watched(chromium.new_page())
    began = time.perf_counter()
    watched.page.goto(f"{ui}/sessions{query}")
    seconds = time.perf_counter() - began
    shown = watched.page.locator("tr.session").count()
    server = watched.page.inner_text("#page-info")
    reply = watched.page.evaluate(
        "(e => e.responseEnd - e.requestStart)(performance.getEntriesByType('navigation')[0])"
    )
    print(f"\nfirst page of /sessions{query} over {INVOCATIONS} invocations: {seconds * 1000:.0f} ms to load in the "
          f"browser, {reply:.0f} ms to answer ({server})")  # fmt: skip
    assert shown == rows
    if query == "":
        assert watched.page.locator("tr.session").first.get_attribute("data-session") == "s019999"
        assert watched.page.inner_text("#total") == "20000"
        watched.page.click("#next-page")
        assert watched.page.locator("tr.session").first.get_attribute("data-session") == "s019949"
        began = time.perf_counter()
        watched.page.click("#previous-page")
        print(f"newer page: {(time.perf_counter() - began) * 1000:.0f} ms ({watched.page.inner_text('#page-info')})")
        assert watched.page.locator("tr.session").first.get_attribute("data-session") == "s019999"
    assert watched.errors == []


SORTED = ("", "?sort=latency", "?sort=calls&order=asc", "?sort=tokens", "?sort=cost&hide_eval=1",
          "?sort=failures&agent=agent-2&page=3", "?q=garage", "?tool=lookup&hide_eval=1&slower=0.1")  # fmt: skip


def test_ordered_pages_of_a_large_store_on_postgresql(postgres_url, tmp_path):
    """The server's own time (the page shows it) and the whole answer, per page; the ordered pages agree with
    SQLite's reading of the same rows (the first sessions by latency, tokens and cost)."""
    from sqlalchemy import text
    from starlette.testclient import TestClient

    from toolpath.store import schema
    from toolpath.store.store import Store
    from toolpath.ui import create_app

    emptied = Store(postgres_url)
    with emptied.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(schema.metadata.tables)}"))
    emptied.close()
    began = time.perf_counter()
    store = bulk_store(postgres_url, INVOCATIONS, model_spans=True)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    print(f"\n{INVOCATIONS} invocations inserted into PostgreSQL in {time.perf_counter() - began:.1f} s")
    client = TestClient(create_app(store, evalsets=tmp_path / "e", agents={}), base_url="http://127.0.0.1:8765")
    try:
        for query in SORTED:
            began = time.perf_counter()
            answer = client.get(f"/sessions{query}")
            seconds = time.perf_counter() - began
            assert answer.status_code == 200 and answer.text.count('<tr class="session') == 50
            server = re.search(r'id="page-info">(.*?)</p>', answer.text, re.S)
            info = re.sub(r"<[^>]+>", "", server.group(1)) if server else "?"
            print(f"PostgreSQL /sessions{query} over {INVOCATIONS} invocations: {seconds * 1000:.0f} ms ({info})")
        tokens: dict[str, int] = {}
        for n in range(INVOCATIONS):  # bulk_store's token counts, summed per session
            tokens[f"s{n // 5:06d}"] = tokens.get(f"s{n // 5:06d}", 0) + n % 997 + n % 89
        most = min(tokens, key=lambda s: (-tokens[s], s))
        first = re.search(r'data-session="([^"]+)"', client.get("/sessions?sort=tokens").text)
        assert first is not None and first.group(1) == most
    finally:
        store.close()


def test_a_session_of_20000_calls_is_a_small_page(tmp_path):
    """20,000 tool calls (one turn of 5,000, then 75 turns of 200) were a 14.7 MB page: a page shows 10 turns,
    100 calls a turn and says how many more there are; its waterfalls hold every call, drawn by the page's script a
    window at a time."""
    from datetime import UTC, datetime

    from starlette.testclient import TestClient

    from toolpath.model import Invocation, ToolCall
    from toolpath.store.store import Store
    from toolpath.ui import create_app

    store = Store(f"sqlite:///{tmp_path / 'big.db'}")
    t0 = 1_780_000_000_000_000_000

    def calls(n: int, turn: int) -> list[ToolCall]:
        return [
            ToolCall(name="lookup", args={"turn": turn, "n": i, "text": "x" * 200}, result={"ok": i},
                     start_time=t0 + i * 1000, end_time=t0 + i * 1000 + 500)
            for i in range(n)
        ]  # fmt: skip

    sizes = [5_000] + [200] * 75
    store.write(
        [
            Invocation(invocation_id=f"i{k:03d}", session_id="huge", agent_name="bot", prompt=f"turn {k}",
                       response="ok", tool_calls=calls(n, k), started_at=datetime(2026, 5, 1, 10, k // 60, k % 60, tzinfo=UTC))
            for k, n in enumerate(sizes)
        ]
    )  # fmt: skip
    assert sum(sizes) == 20_000
    c = TestClient(create_app(store, evalsets=tmp_path / "e", agents={}), base_url="http://127.0.0.1:8765")
    first = c.get("/session", params={"id": "huge"})
    assert first.status_code == 200 and len(first.content) < 1_500_000
    assert first.text.count('<li class="call') == 10 * 100
    assert "and 4900 more tool call(s)" in first.text and "page 1 of 8" in first.text
    assert first.text.count('class="wf-data"') == 10 and "· 5000 call(s)</span>" in first.text
    last = c.get("/session", params={"id": "huge", "page": 8})
    assert last.status_code == 200 and 'id="turn-76"' in last.text and 'id="turn-71"' in last.text
    assert c.get("/session", params={"id": "huge", "page": 9}).status_code == 400
    store.close()


def test_the_online_page_of_a_large_store(ui, chromium):
    """Every fourth turn scored: the page charts their 25,000 results by the turns' time (about 28 hours of traffic,
    3-hour buckets); its time in the browser is printed, not asserted."""
    watched = Watched(chromium.new_page())
    began = time.perf_counter()
    watched.page.goto(f"{ui}/online?days=3&until=2026-05-31")
    seconds = time.perf_counter() - began
    reply = watched.page.evaluate(
        "(e => e.responseEnd - e.requestStart)(performance.getEntriesByType('navigation')[0])"
    )
    print(f"\n/online over {INVOCATIONS} invocations ({INVOCATIONS // 4} results in range): {seconds * 1000:.0f} ms to "
          f"load in the browser, {reply:.0f} ms to answer")  # fmt: skip
    row = watched.page.locator("tr.series[data-evaluator=default][data-metric=trajectory_precision]")
    assert row.locator("td.results").inner_text() == str(INVOCATIONS // 4)
    assert row.locator("rect.bucket").count() == 11  # 2026-05-28 18:00 to 2026-05-30 00:00, every 3 hours
    assert watched.errors == []
