"""The sessions list's pages on real SQLite and PostgreSQL, against orders computed here from the rows written: the
UI's filtered pages newest first (ties of last activity by session id), walked both ways by their cursors; each
filter alone and together; the totals (capped with a filter, never without); the pages ordered by another column
with a filter; and the row of a session, the same on the UI's page as in the CLI's list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert

from toolpath.model import Invocation, ToolCall
from toolpath.store import browse, session_list
from toolpath.store import schema as t
from toolpath.store.annotations import ReviewLabel, annotate
from toolpath.store.job_status import ResultLabel
from toolpath.store.session_filter import SessionFilter
from toolpath.store.session_list import Reader
from toolpath.store.session_order import SessionSort, ordered_session_page

MARK = "toolpath.evaluation"


def at(second: int) -> datetime:
    return datetime(2026, 6, 1, 9, 0, tzinfo=UTC) + timedelta(seconds=second)


def ns(second: int) -> int:
    return int(at(second).timestamp()) * 1_000_000_000


def turn(iid: str, sid: str, second: int, agent: str = "a1", **fields: Any) -> Invocation:
    return Invocation(invocation_id=iid, session_id=sid, agent_name=agent, started_at=at(second),
                      prompt=fields.pop("prompt", f"prompt {iid}"), response="ok", **fields)  # fmt: skip


TURNS = [
    turn("i01a", "s01", 10, prompt="Refund ORDER 7", failure=1, error="boom", latency_seconds=2.5),
    turn("i01b", "s01", 50, latency_seconds=0.5),
    turn("i02", "s02", 50, agent="a2", tool_calls=[ToolCall(name="lookup", args={"q": 1}, error="Timeout")]),
    turn("i03", "s03", 50, tool_calls=[ToolCall(name="lookup", args={"q": "50%_off"}, result={"ok": 1})]),
    turn("i04", "s04", 40, agent="a2", attributes={MARK: True}),
    turn("i05", "eval-s05", 30),
    turn("i06", "s06", 20, latency_seconds=9.0),
    turn("i07a", "s07", 5, agent="a2"),
    turn("i07b", "s07", 50, agent="a2"),
    turn("i08", "s08", 60),
    turn("i09", "replay-s09", 45, agent="a2"),
]
LAST = {"s01": 50, "s02": 50, "s03": 50, "s04": 40, "eval-s05": 30, "s06": 20, "s07": 50, "s08": 60, "replay-s09": 45}
FIRST = {**LAST, "s01": 10, "s07": 5}
TURN_COUNT = {**{sid: 1 for sid in LAST}, "s01": 2, "s07": 2}


def newest_first(ids: set[str] | list[str]) -> list[str]:
    return sorted(ids, key=lambda sid: (-LAST[sid], sid))


def fill(store) -> None:
    store.write(TURNS)
    scored = [("i01a", 0.2, ResultLabel.FAIL), ("i03", 0.9, ResultLabel.PASS), ("i06", None, ResultLabel.ERROR),
              ("i08", 0.6, ResultLabel.PASS)]  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(insert(t.online_results), [
            {"invocation_id": iid, "evaluator": "default", "evaluator_version": "1", "metric": "m", "score": score, "label": label, "worker": "w", "created_at": 1}
            for iid, score, label in scored
        ])  # fmt: skip
    annotate(store, "i02", author="Ada", label=ReviewLabel.FAIL)
    annotate(store, "i06", author="Bo", score=0.5)


FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({}, set(LAST)),
    ({"agent": "a2"}, {"s02", "s04", "s07", "replay-s09"}),
    ({"since_ns": ns(45)}, {"s01", "s02", "s03", "s07", "s08", "replay-s09"}),
    ({"until_ns": ns(10)}, {"s01", "s07"}),
    ({"failures": True}, {"s01"}),
    ({"latency_above": 2.0}, {"s01", "s06"}),
    ({"tool": "lookup"}, {"s02", "s03"}),
    ({"tool_error": True}, {"s02"}),
    ({"tool": "lookup", "tool_error": True}, {"s02"}),
    ({"text": "order 7"}, {"s01"}),
    ({"text": "50%_off"}, {"s03"}),
    ({"text": "TIMEOUT"}, {"s02"}),
    ({"text": "s0"}, set(LAST)),
    ({"hide_evaluation": True}, set(LAST) - {"eval-s05", "replay-s09"}),
    ({"hide_evaluation": True, "evaluation_attribute": MARK}, set(LAST) - {"eval-s05", "replay-s09", "s04"}),
    ({"review": "fail"}, {"s02"}),
    ({"review": "any"}, {"s02", "s06"}),
    ({"metric": "m"}, {"s01", "s03", "s06", "s08"}),
    ({"metric": "m", "below": 0.5}, {"s01"}),
    ({"metric": "m", "worse_than": 0.7}, {"s01", "s08"}),
    ({"metric": "m", "worse_than": 0.5, "lower_is_better": True}, {"s03", "s08"}),
    ({"metric": "m", "label": ResultLabel.PASS}, {"s03", "s08"}),
    ({"agent": "a1", "since_ns": ns(45), "hide_evaluation": True}, {"s01", "s03", "s08"}),
]


@pytest.mark.parametrize(("where", "matching"), FILTERS, ids=[repr(w) for w, _ in FILTERS])
def test_each_filter_pages_newest_first_with_its_total(store, where, matching):
    fill(store)
    page = browse.session_page(store, SessionFilter(**where))
    assert [r["session_id"] for r in page.rows] == newest_first(matching)
    assert (page.total, page.total_capped, page.next_cursor, page.previous_cursor) == (len(matching), False, None, None)


def walk(store, where: SessionFilter, limit: int) -> tuple[list[list[str]], list[tuple[Any, Any]]]:
    """Every page from the first by ``after``, then back from the last by ``before``: the pages' ids and cursors."""
    pages, cursors = [], []
    page = browse.session_page(store, where, limit=limit)
    while True:
        pages.append([r["session_id"] for r in page.rows])
        cursors.append((page.previous_cursor, page.next_cursor))
        assert len(pages) <= len(LAST), "the cursors do not come to the last page"
        if page.next_cursor is None:
            break
        page = browse.session_page(store, where, limit=limit, after=page.next_cursor)
    while page.previous_cursor is not None:
        assert len(pages) <= 2 * len(LAST), "the cursors do not come back to the first page"
        page = browse.session_page(store, where, limit=limit, before=page.previous_cursor)
        pages.append([r["session_id"] for r in page.rows])
        cursors.append((page.previous_cursor, page.next_cursor))
    return pages, cursors


@pytest.mark.parametrize(("where", "limit"), [({}, 2), ({}, 3), ({"agent": "a2"}, 1), ({"text": "prompt"}, 2)])
def test_cursors_walk_ties_of_last_activity_both_ways(store, where, limit):
    fill(store)
    # every session has a turn whose prompt holds "prompt"
    order = newest_first({"s02", "s04", "s07", "replay-s09"} if where.get("agent") else set(LAST))
    chunks = [order[i : i + limit] for i in range(0, len(order), limit)]
    pages, cursors = walk(store, SessionFilter(**where), limit)
    assert pages == chunks + chunks[-2::-1]  # forward to the last page, then back to the first
    forward = [
        ((ns(LAST[c[0]]), c[0]) if i else None, (ns(LAST[c[-1]]), c[-1]) if i < len(chunks) - 1 else None)
        for i, c in enumerate(chunks)
    ]
    # going back, a page before the first has its older cursor, and the first page none newer
    backward = [((ns(LAST[c[0]]), c[0]) if i else None, (ns(LAST[c[-1]]), c[-1])) for i, c in enumerate(chunks)]
    assert cursors == forward + backward[-2::-1]


def test_a_filtered_total_stops_at_the_cap_and_the_whole_count_does_not(store, monkeypatch):
    fill(store)
    monkeypatch.setattr(browse, "COUNT_CAP", 3)
    capped = browse.session_page(store, SessionFilter(agent="a2"), limit=1)
    assert (capped.total, capped.total_capped) == (3, True)
    exact = browse.session_page(store, SessionFilter(tool="lookup"), limit=1)
    assert (exact.total, exact.total_capped) == (2, False)
    whole = browse.session_page(store, SessionFilter(), limit=1)
    assert (whole.total, whole.total_capped) == (len(LAST), False)
    assert browse.session_page(store, SessionFilter(agent="a2"), count=False).total is None


def test_a_row_is_the_same_on_the_ui_page_as_in_the_list(store):
    fill(store)
    page = browse.session_page(store, SessionFilter(evaluation_attribute=MARK))
    with store.engine.connect() as conn:
        listed = session_list.listed(Reader.of_connection(conn), limit=None, evaluation_attribute=MARK)
    iso = {"first_started_at": session_list.iso, "last_started_at": session_list.iso}
    assert [{k: iso.get(k, lambda v: v)(v) for k, v in row.items()} for row in page.rows] == listed
    s01 = next(row for row in page.rows if row["session_id"] == "s01")
    assert s01 == {"session_id": "s01", "agent_name": "a1", "first_started_at": ns(10), "last_started_at": ns(50),
                   "invocations": 2, "failures": 1, "latency": 3.0, "slowest": 2.5, "tool_calls": 0,
                   "tool_calls_dropped": 0, "tool_errors": 0, "prompt": "Refund ORDER 7", "evaluation": False,
                   "users": [], "failing_tool": None, "failing_error": "boom"}  # fmt: skip
    marked = {row["session_id"] for row in page.rows if row["evaluation"]}
    assert marked == {"s04", "eval-s05", "replay-s09"}


@pytest.mark.parametrize(("where", "matching"), FILTERS, ids=[repr(w) for w, _ in FILTERS])
def test_an_order_by_turns_pages_a_filtered_set(store, where, matching):
    fill(store)
    want = sorted(matching, key=lambda sid: (-TURN_COUNT[sid], sid))
    found: list[str] = []
    for number in range(1, len(want) + 2):
        ordered = ordered_session_page(store, SessionFilter(**where), SessionSort.TURNS, descending=True,
                                       page=number, limit=2)  # fmt: skip
        found += [r["session_id"] for r in ordered.page.rows]
        assert ordered.number == number and ordered.more == (number * 2 < len(want))
        assert (ordered.page.total, ordered.page.next_cursor, ordered.page.previous_cursor) == (len(want), None, None)
        if not ordered.more:
            break
    assert found == want
    ascending = ordered_session_page(store, SessionFilter(**where), SessionSort.SESSION, descending=False, limit=50)
    assert [r["session_id"] for r in ascending.page.rows] == sorted(matching)
    assert [r["invocations"] for r in ascending.page.rows] == [TURN_COUNT[sid] for sid in sorted(matching)]


def test_hiding_evaluation_traffic_reads_the_id_prefixes_as_the_rows_do(store):
    """A session id the evaluators never give (``EVAL-…``: the prefixes are lowercase) is production traffic on
    both stores: listed with evaluation traffic hidden, and its row not marked evaluation."""
    store.write([turn("u1", "EVAL-7", 10), turn("u2", "Replay-8", 20), turn("u3", "eval-9", 30)])
    page = browse.session_page(store, SessionFilter(hide_evaluation=True))
    assert [(r["session_id"], r["evaluation"]) for r in page.rows] == [("Replay-8", False), ("EVAL-7", False)]
    assert page.total == 2
    ordered = ordered_session_page(store, SessionFilter(hide_evaluation=True), SessionSort.SESSION, descending=False)
    assert [r["session_id"] for r in ordered.page.rows] == ["EVAL-7", "Replay-8"]


@pytest.mark.parametrize("text", ["CAFÉ", "café", "Café au", "münchen", "MÜNCHEN", "日本"])
def test_text_search_ignores_the_case_of_letters_beyond_ascii(store, text):
    """SQLite's LIKE folds ASCII letters only: the search folds the others itself, as PostgreSQL's ILIKE does."""
    store.write([turn("u1", "s-cafe", 10, prompt="CAFÉ au lait"),
                 turn("u2", "s-city", 20, tool_calls=[ToolCall(name="weather", args={"city": "München 日本"})]),
                 turn("u3", "s-none", 30, prompt="cafe munchen")])  # fmt: skip
    want = {"CAFÉ": ["s-cafe"], "café": ["s-cafe"], "Café au": ["s-cafe"], "münchen": ["s-city"],
            "MÜNCHEN": ["s-city"], "日本": ["s-city"]}[text]  # fmt: skip
    assert [r["session_id"] for r in browse.session_page(store, SessionFilter(text=text)).rows] == want


@pytest.mark.parametrize("value", ["banana", "yes", "true", 1, 0, False, None, [True], {"x": True}])
def test_only_a_json_true_marks_a_turn_as_evaluation_traffic(store, value):
    """The mark is what toolpath's tracer writes, a JSON ``true``; any other value an instrumentation put under the
    same name marks nothing, and never fails the page (on PostgreSQL a cast of ``banana`` to boolean would)."""
    store.write(
        [turn("u1", "s-odd", 10, attributes={MARK: value}), turn("u2", "s-marked", 20, attributes={MARK: True})]
    )
    where = SessionFilter(hide_evaluation=True, evaluation_attribute=MARK)
    assert [r["session_id"] for r in browse.session_page(store, where).rows] == ["s-odd"]
    ordered = ordered_session_page(store, where, SessionSort.SESSION, descending=False)
    assert [r["session_id"] for r in ordered.page.rows] == ["s-odd"]
    rows = browse.session_page(store, SessionFilter(evaluation_attribute=MARK)).rows
    assert [(r["session_id"], r["evaluation"]) for r in rows] == [("s-marked", True), ("s-odd", False)]
