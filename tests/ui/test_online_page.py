"""The Online page over four days of traffic scored in one burst (tests/helpers/online_store.py): its reads on
SQLite and PostgreSQL bucket the scores by the traffic's time, per evaluator, count skipped and waiting targets
and the judge's spend; on SQLite they go through the time indexes; and in real headless Chromium the page charts
a bucket per day of traffic (pass rate bars, a mean line), and shows skipped, waiting, spend and the session
results with their superseded revisions, axe-clean and no wider than a phone."""

from __future__ import annotations

import re
import time

import pytest
from sqlalchemy import text

from tests.helpers.axe import axe_findings
from tests.helpers.online_store import BASE_NS, BURST_NS, DAY_NS, DAYS, UNTIL, fill
from tests.helpers.ui import Watched, browser, serve_ui
from toolpath.store import judge_spend, online_views
from toolpath.store.job_status import SkipReason
from toolpath.store.online_views import Target, Waiting
from toolpath.store.store import Store
from toolpath.ui.online_charts import buckets_for

UNTIL_NS = BASE_NS + DAYS * DAY_NS


def test_scores_are_bucketed_by_the_traffics_time_per_evaluator(store):
    fill(store)
    points = online_views.score_series(store, since_ns=BASE_NS - 3 * DAY_NS, until_ns=UNTIL_NS, bucket_ns=DAY_NS)
    by = {(p.evaluator, p.metric): [q for q in points if (q.evaluator, q.metric) == (p.evaluator, p.metric)]
          for p in points}  # fmt: skip
    quality = by["quality", "trajectory_precision"]
    assert [p.start_ns for p in quality] == [BASE_NS + d * DAY_NS for d in range(DAYS)]  # not one burst bucket
    assert [(p.passed, p.failed) for p in quality] == [(0, 3), (1, 2), (2, 1), (3, 0)]
    speed = by["speed", "latency_in_seconds"]
    assert [(p.measured, p.passed + p.failed, p.mean) for p in speed] == [(3, 0, d + 1.0) for d in range(DAYS)]
    conversation = by["conversation", "multi_turn_task_success"]
    assert {p.target for p in conversation} == {Target.SESSION}
    # s0's superseded first revision (a fail) is not counted: only its current one (a pass)
    assert [(p.start_ns, p.results, p.passed) for p in conversation] == [
        (BASE_NS, 1, 1), (BASE_NS + DAY_NS, 1, 1), (BASE_NS + 2 * DAY_NS, 1, 0)]  # fmt: skip
    later = online_views.score_series(store, since_ns=BASE_NS + 2 * DAY_NS, until_ns=UNTIL_NS, bucket_ns=DAY_NS)
    assert {p.start_ns for p in later} == {BASE_NS + 2 * DAY_NS, BASE_NS + 3 * DAY_NS}
    burst = online_views.score_series(store, since_ns=BURST_NS - DAY_NS, until_ns=BURST_NS + DAY_NS, bucket_ns=DAY_NS)
    assert burst == []  # when they were scored is not the traffic's time
    with pytest.raises(ValueError, match="bucket_ns=0"):
        online_views.score_series(store, since_ns=0, until_ns=1, bucket_ns=0)


def test_skipped_waiting_spend_and_session_revisions(store):
    fill(store)
    since = BASE_NS - 3 * DAY_NS
    assert online_views.skipped_counts(store, since_ns=since, until_ns=UNTIL_NS) == {
        "quality": {SkipReason.RATE: 3, SkipReason.BUDGET: 2},
        "conversation": {SkipReason.BUDGET: 1},
    }
    waiting = {(b.evaluator, b.target): b.counts for b in online_views.backlog(store, now_ns=time.time_ns())}
    assert waiting == {
        ("conversation", Target.SESSION): {Waiting.OPEN: 2, Waiting.DUE: 1, Waiting.CLAIMED: 1},
        ("quality", Target.TURN): {Waiting.DUE: 2, Waiting.CLAIMED: 1},
    }
    spend = judge_spend.by_evaluator(store, since_ns=since, until_ns=UNTIL_NS)
    assert (spend["conversation"].calls, spend["conversation"].tokens) == (5, (1000, 200))  # not the older 100
    assert spend["conversation"].cost == pytest.approx(0.0014)
    assert (spend["quality"].cost, spend["quality"].unpriced) == (None, ["judge-b"])
    revisions = online_views.session_revisions(store, limit=3)
    assert [(r.session_id, r.revision, r.current) for r in revisions] == [("s0", 2, True), ("s2", 1, True),
                                                                          ("s1", 1, True)]  # fmt: skip
    everything = online_views.session_revisions(store)
    assert [(r.session_id, r.revision, r.current) for r in everything][-1] == ("s0", 1, False)
    assert everything[-1].results == [("multi_turn_task_success", 0.0, "fail", "revision 1")]


@pytest.mark.parametrize(
    ("days", "name", "count"),
    [(1, "hour", 25), (7, "3 hours", 57), (30, "12 hours", 61), (90, "3 days", 31), (365, "week", 53)],
)
def test_buckets_are_chosen_from_the_range(days, name, count):
    until = BASE_NS + 7 * 3600 * 10**9 + 123  # aligned to nothing
    chosen = buckets_for(until - days * DAY_NS, until, None)
    assert (chosen.name, chosen.count) == (name, count)
    assert chosen.first * chosen.size_ns <= until - days * DAY_NS < (chosen.first + 1) * chosen.size_ns
    assert buckets_for(until - days * DAY_NS, until, "day").count == days + 1
    with pytest.raises(ValueError, match=r"^bucket='week': expected hour or day \(or none: chosen from the range\)$"):
        buckets_for(0, DAY_NS, "week")


def test_the_reads_use_the_time_indexes_on_sqlite(tmp_path):
    """The series are bounded by an indexed time: a long history outside the range is not scanned."""
    store = Store(f"sqlite:///{tmp_path / 'plans.db'}")
    try:
        reads = {
            "ix_invocations_started": online_views._turn_series(0, 1, DAY_NS),
            "ix_sessions_last_started_at": online_views._session_series(0, 1, DAY_NS),
        }
        with store.engine.connect() as conn:
            for index, query in reads.items():
                compiled = query.compile(conn, compile_kwargs={"literal_binds": True})
                plan = " | ".join(str(row[-1]) for row in conn.execute(text(f"EXPLAIN QUERY PLAN {compiled}")))
                assert index in plan, plan
    finally:
        store.close()


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-online")
    store = Store(f"sqlite:///{folder / 'online.db'}")
    fill(store)
    with serve_ui(store, folder / "evalsets") as url:
        yield url
    store.close()


@pytest.fixture(scope="module")
def watched():
    with browser() as chromium:
        opened = Watched(chromium.new_page(viewport={"width": 1280, "height": 900}))
        yield opened
        assert opened.errors == []


@pytest.fixture
def page(watched):
    return watched.page


def test_a_burst_of_scores_is_charted_over_the_days_of_its_traffic(ui, page):
    page.goto(f"{ui}/online?days=7&until={UNTIL}")
    assert "per 3 hours" in page.inner_text("#range")  # chosen from a week
    quality = page.locator("tr.series[data-evaluator=quality][data-metric=trajectory_precision]")
    bars = quality.locator("svg.rates rect.bucket")
    assert [b.get_attribute("data-start") for b in bars.all()] == [
        f"2026-06-0{d + 1} 09:00:00" for d in range(DAYS)]  # fmt: skip
    heights = [float(b.get_attribute("height") or 0) for b in bars.all()]
    assert heights == sorted(heights) and heights[0] < heights[-1]  # 0 %, 33 %, 67 %, 100 %
    assert quality.locator("td.num").nth(3).inner_text() == "50%"
    speed = page.locator("tr.series[data-evaluator=speed]")
    assert speed.locator("svg.means").count() == 1 and speed.locator("svg rect").count() == 0
    points = speed.locator("svg.means circle.bucket")
    assert [p.get_attribute("data-mean") for p in points.all()] == ["1.000", "2.000", "3.000", "4.000"]
    assert [tick.text_content() for tick in speed.locator("text.tick").all()] == ["4.000", "2.000", "0.000"]
    line = speed.locator("path.mean-line").get_attribute("d") or ""
    assert line.count("M") == 1 and line.count("L") == DAYS - 1  # one line through the days with traffic
    assert page.input_value("#until") == "2026-06-05T00:00"
    session = page.locator("tr.series[data-evaluator=conversation]")
    assert session.get_attribute("data-target") == "session"
    assert session.locator("td.results").inner_text() == "3"  # the superseded revision is not counted
    assert session.locator("svg.rates rect.bucket").count() == 3
    page.goto(f"{ui}/online?days=30&until={UNTIL}")
    assert "per 12 hours" in page.inner_text("#range")
    assert page.locator("tr.series[data-evaluator=quality] rect.bucket").count() == DAYS
    page.goto(f"{ui}/online?days=7")  # the traffic is older than the last week
    assert page.locator("tr.series").count() == 0


def test_skipped_waiting_spend_and_session_results_are_shown(ui, page):
    page.goto(f"{ui}/online?days=7&until={UNTIL}")
    quality = page.locator("#skipped tr[data-evaluator=quality]")
    cells = {name: quality.locator(f"td.{name}").inner_text()
             for name in ("skipped-rate", "skipped-budget", "waiting-open", "waiting-due", "waiting-claimed")}  # fmt: skip
    assert cells == {"skipped-rate": "3", "skipped-budget": "2", "waiting-open": "0", "waiting-due": "2",
                     "waiting-claimed": "1"}  # fmt: skip
    conversation = page.locator("#skipped tr[data-evaluator=conversation]")
    assert conversation.locator("td.skipped-budget").inner_text() == "1"
    assert conversation.locator("td.waiting-open").inner_text() == "2"
    assert "not_sampled is counted by the collector's /metrics" in page.inner_text("#skipped")
    spend = page.locator("#spend tr[data-evaluator=conversation]")
    assert [spend.locator(f"td.{c}").inner_text() for c in ("calls", "tokens-in", "tokens-out", "cost", "latency")] == [
        "5", "1000", "200", "0.0014", "600.0 ms"]  # fmt: skip
    assert page.locator("#spend tr[data-evaluator=quality] td.cost").inner_text() == "unpriced: judge-b"
    rows = page.locator("#session-results tr.revision")
    assert [(r.get_attribute("data-session"), r.get_attribute("data-revision")) for r in rows.all()] == [
        ("s0", "2"), ("s2", "1"), ("s1", "1"), ("s0", "1")]  # fmt: skip
    old = page.locator("#session-results tr.superseded")
    assert old.count() == 1 and old.get_attribute("data-revision") == "1"
    assert "superseded" in old.locator(".state").inner_text()
    assert page.locator("#session-results tr[data-revision='2'] .state").inner_text() == "current"
    page.locator("#session-results tr[data-revision='2'] a").click()
    page.wait_for_url(re.compile(r"/session\?id=s0"))


def test_the_full_page_is_axe_clean_and_fits_a_phone(ui, page):
    page.goto(f"{ui}/online?days=7&until={UNTIL}")
    assert axe_findings(page) == []
    page.set_viewport_size({"width": 390, "height": 900})
    try:
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_a_bucket_too_small_for_the_range_is_one_clear_error(ui, watched):
    answer = watched.page.goto(f"{ui}/online?days=365&until={UNTIL}&bucket=hour")
    assert answer is not None and answer.status == 400
    assert "bucket='hour': 8760 buckets in the range, at most 400" in watched.page.inner_text("main")
    assert [e for e in watched.errors if "400" in e] and watched.errors == [watched.errors[0]]
    watched.errors.clear()  # the refused page's own status, as expected
