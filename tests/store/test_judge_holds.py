"""Room held in an online evaluator's judge budget, in the store: a call's most held before it is sent, replaced by
what it cost once answered, moved to its outcome's row with its results; on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time

import pytest

from toolpath.collector import spend_metrics
from toolpath.collector.spend_metrics import spend_families
from toolpath.judges.messages import JudgeOutcome
from toolpath.store import judge_holds, judge_spend, online_usage
from toolpath.store.judge_holds import NoRoom, Released
from toolpath.store.judge_spend import HELD, HOLDING
from toolpath.store.online_usage import CACHED, UsageLimits
from toolpath.store.usage import prices, set_price

MODEL = "judge-model"
TOKENS = UsageLimits(tokens_per_hour=1000)


def hold(store, limits=TOKENS, most=(300, 200), price=None):  # type: ignore[no-untyped-def]
    with store.durable_write() as conn:
        return judge_holds.hold(conn, "e", limits, MODEL, most, price, time.time_ns())


def settle(store, key, held=(300, 200), reported=(40, 10)):  # type: ignore[no-untyped-def]
    with store.durable_write() as conn:
        judge_holds.settle(conn, "e", key, MODEL, held, reported)


def used(store, limits=TOKENS) -> int:  # type: ignore[no-untyped-def]
    with store.engine.connect() as conn:
        return online_usage.read(conn, {"e": limits}, time.time_ns())["e"].tokens


def rows(store) -> dict[str, tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    spend = judge_spend.by_evaluator(store).get("e")
    return {r.outcome: (r.calls, r.input_tokens, r.output_tokens) for r in spend.rows} if spend else {}


def test_a_call_is_held_at_its_most_then_at_its_cost_then_moved_to_its_outcome(store):
    key = hold(store)
    assert isinstance(key, int) and used(store) == 500 and rows(store) == {HOLDING: (1, 300, 200)}
    settle(store, key)
    assert used(store) == 50 and rows(store) == {HELD: (1, 40, 10)}
    with store.redoable_write() as conn:  # the results' transaction
        online_usage.lock(conn, {"e": TOKENS}, time.time_ns())
        judge_holds.release(conn, [("e", Released(key, MODEL, 40, 10, "ok", 0.2))])
    assert used(store) == 50 and rows(store) == {"ok": (1, 40, 10)}  # the held row, empty, is not shown


def test_no_room_now_waits_for_calls_in_flight_and_none_at_all_is_refused(store):
    first = hold(store)  # 500 of 1000 held at its most
    assert isinstance(first, int)
    assert hold(store, most=(400, 200)) is NoRoom.YET  # 600 fits once the first costs less than its most
    assert hold(store, most=(900, 200)) is NoRoom.LEFT  # 1100: never
    settle(store, first)
    assert isinstance(hold(store, most=(400, 200)), int)  # 50 spent, 600 held: fits
    assert hold(store, most=(200, 200)) is NoRoom.YET


def test_a_call_not_answered_gives_its_room_back(store):
    key = hold(store)
    assert isinstance(key, int)
    settle(store, key, reported=None)
    assert used(store) == 0 and rows(store) == {}


def test_a_budget_in_cost_holds_at_the_models_price_and_refuses_a_model_without_one(store):
    limits = UsageLimits(cost_per_hour=0.01)
    set_price(store, MODEL, 10.0, 20.0)  # per million: a hold of (300, 200) costs 0.007
    price = prices(store)[MODEL]
    assert isinstance(hold(store, limits, price=price), int)
    assert hold(store, limits, price=price) is NoRoom.YET  # 0.014 held would pass 0.01
    assert hold(store, limits, price=None) is NoRoom.LEFT


@pytest.mark.parametrize("day", [True, False])
def test_a_days_budget_counts_the_holds_of_every_hour(store, day):
    limits = UsageLimits(tokens_per_day=1000) if day else TOKENS
    assert isinstance(hold(store, limits), int)
    assert hold(store, limits, most=(400, 200)) is NoRoom.YET


def test_a_call_ended_with_no_reply_keeps_its_cost_in_the_errors_now(store):
    key = hold(store)
    with store.durable_write() as conn:  # a reply too late: it may have been billed at its most
        judge_holds.settle(conn, "e", key, MODEL, (300, 200), (300, 200), ended=True)
    assert used(store) == 500 and rows(store) == {"error": (0, 300, 200)}  # the request is counted with its results


def test_a_calls_cost_stays_in_the_hour_it_was_held_in_when_its_results_come_an_hour_later(store):
    """Held in hour H, stored in H+1: the cost is H's, where the budget checked it; H+1's own holds had room."""
    limits = UsageLimits(cost_per_hour=0.01)
    set_price(store, MODEL, 10.0, 20.0)  # (300, 200): 0.007
    price = prices(store)[MODEL]
    h = online_usage.hour_of(time.time_ns()) - 5 * online_usage.HOUR_NS
    keys = []
    for at in (h + online_usage.HOUR_NS - 1_000, h + online_usage.HOUR_NS + 1_000):  # one each side of the hour
        with store.durable_write() as conn:
            keys.append(judge_holds.hold(conn, "e", limits, MODEL, (300, 200), price, at))
        with store.durable_write() as conn:
            judge_holds.settle(conn, "e", keys[-1], MODEL, (300, 200), (300, 200))
    assert keys == [h, h + online_usage.HOUR_NS]
    with store.redoable_write() as conn:  # H's call's results, stored in H+1
        online_usage.lock(conn, {"e": limits}, h + online_usage.HOUR_NS + 2_000)
        judge_holds.release(conn, [("e", Released(h, MODEL, 300, 200, "ok", 0.5))])
    with store.engine.connect() as conn:
        after = online_usage.read(conn, {"e": limits}, h + online_usage.HOUR_NS + 3_000)["e"]
    assert after.cost == pytest.approx(0.007)  # H+1 holds only its own call


def test_two_holds_either_side_of_an_hour_boundary_share_one_days_budget(store):
    """On PostgreSQL two writers in two hours lock two hour rows: a day budget locks the day's row first, so the
    second waits for the first and sees its hold."""
    if store.dialect != "postgresql":
        pytest.skip("writers side by side: PostgreSQL")
    limits = UsageLimits(tokens_per_day=1000)
    now = time.time_ns()
    ten = now - now % online_usage.DAY_NS + 10 * online_usage.HOUR_NS
    one, two = store.engine.connect(), store.engine.connect()
    found: list[object] = []
    try:
        first = one.begin()
        assert isinstance(judge_holds.hold(one, "e", limits, MODEL, (300, 300), None, ten - 1), int)

        def second() -> None:
            with two.begin():
                found.append(judge_holds.hold(two, "e", limits, MODEL, (300, 300), None, ten + 1))

        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # waits for the day's row
        first.commit()
        waiting.join(10)
    finally:
        one.close()
        two.close()
    assert found == [NoRoom.YET]  # saw the first's hold: room only if it costs less than its most


def test_replies_answered_from_the_cache_count_as_calls_but_cost_nothing(store):
    """A cached reply keeps the tokens it was first bought with; they are not spent again: not in a cost budget's
    spend, nor in the spend shown (its calls are)."""
    limits = UsageLimits(cost_per_hour=1.0)
    set_price(store, MODEL, 10.0, 20.0)
    now = time.time_ns()
    spent = judge_spend.SpendRow(MODEL, "ok", 1, 1000, 500, 0.5)
    cached = judge_spend.SpendRow(MODEL, str(JudgeOutcome.CACHED), 3, 3000, 1500, 0.0)
    with store.durable_write() as conn:
        judge_spend.add(conn, {"e": [spent, cached]}, now)
    with store.engine.connect() as conn:
        usage = online_usage.read(conn, {"e": limits}, now)["e"]
    assert usage.cost == pytest.approx(0.02) and usage.day_cost == pytest.approx(0.02)  # 1000 × 10 + 500 × 20
    shown = judge_spend.by_evaluator(store)["e"]
    assert shown.cost == pytest.approx(0.02) and shown.tokens == (1000, 500)
    assert {r.outcome: r.calls for r in shown.rows} == {"ok": 1, "cached": 3}
    families = {family.name: family for family in spend_families({"e": shown}, str)}
    tokens = {s.labels["direction"]: s.value for s in families["toolpath_judge_spend_tokens"].samples}
    assert tokens == {"input": 1000, "output": 500} and CACHED == spend_metrics.CACHED == JudgeOutcome.CACHED
