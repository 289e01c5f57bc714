"""The budget gate in front of a judge's backend: each call holds room for the most it can cost before it is sent,
waits while calls in flight hold the room it needs, and is refused when there is none."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from toolpath.judges.call_gate import FRAMING_TOKENS, GatedBackend, most_tokens
from toolpath.judges.client import Judge, JudgeSettings
from toolpath.judges.messages import JudgeOutcome, JudgeReply, JudgeRequest, TransientError


class Holds:
    """Holds in memory: ``room`` tokens; each hold takes the call's most, each settle gives back the rest."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.flying = 0
        self.settled: list[tuple[tuple[int, int], tuple[int, int] | None]] = []
        self.asked = 0
        self.ended: list[bool] = []

    def hold(self, model: str, input_tokens: int, output_tokens: int) -> int | bool:
        self.asked += 1
        most = input_tokens + output_tokens
        if most <= self.room:
            self.room -= most
            self.flying += most
            return 7
        return self.flying > 0 and most <= self.room + self.flying

    def settle(
        self, key: int, model: str, held: tuple[int, int], reported: tuple[int, int] | None, *, ended: bool = False
    ) -> None:
        assert key == 7
        self.settled.append((held, reported))
        self.ended.append(ended)
        self.flying -= sum(held)
        self.room += sum(held) - (sum(reported) if reported is not None else 0)


class Model:
    """A backend that answers after ``delay`` seconds, or fails as told."""

    def __init__(self, delay: float = 0.0, fail: Exception | None = None) -> None:
        self.delay = delay
        self.fail = fail
        self.sent: list[JudgeRequest] = []

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        self.sent.append(request)
        await asyncio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        return JudgeReply('{"score": 1}', None, 10, 3)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_the_most_a_call_can_cost_is_its_bytes_framing_and_output_limit():
    assert most_tokens(JudgeRequest("héllo", max_output_tokens=50)) == (6 + FRAMING_TOKENS, 50)
    config = json.dumps({"system_instruction": "be fair", "max_output_tokens": 20})
    assert most_tokens(JudgeRequest("x", config=config, max_output_tokens=50)) == (
        1 + len(config) + FRAMING_TOKENS,
        20,
    )  # the config's own limit is the one the model gets
    assert most_tokens(JudgeRequest("x")) == (1 + FRAMING_TOKENS, None)


def test_a_call_held_is_sent_and_settled_with_what_the_model_reported():
    holds, model = Holds(1000), Model()
    reply = run(GatedBackend(model, holds).generate(JudgeRequest("prompt", max_output_tokens=100), 5.0))
    assert reply.text and reply.hold is not None and reply.hold[1:] == (10, 3)
    assert holds.settled == [((6 + FRAMING_TOKENS, 100), (10, 3))] and holds.room == 1000 - 13


def test_a_call_without_an_output_limit_or_without_room_is_never_sent():
    model = Model()
    unbounded = run(GatedBackend(model, Holds(10**9)).generate(JudgeRequest("prompt"), 5.0))
    assert unbounded.refused and "max_output_tokens" in (unbounded.error or "")
    over = run(GatedBackend(model, Holds(50)).generate(JudgeRequest("prompt", max_output_tokens=100), 5.0))
    assert over.refused and over.over_budget and "no room" in (over.error or "")
    assert model.sent == []


def test_a_call_waits_for_the_room_calls_in_flight_hold_beyond_their_cost():
    """Room for one call at its most: a second waits until the first has answered (costing less than its most),
    then goes; neither is refused, and the budget never held more than its room."""
    holds, model = Holds(2 * (6 + FRAMING_TOKENS) + 100 + 50), Model(delay=0.2)
    gate = GatedBackend(model, holds)

    async def both() -> list[JudgeReply]:
        request = JudgeRequest("prompt", max_output_tokens=100)
        return list(await asyncio.gather(gate.generate(request, 5.0), gate.generate(request, 5.0)))

    replies = run(both())
    assert all(r.text for r in replies) and len(model.sent) == 2 and holds.asked > 2
    assert holds.room >= 0 and holds.flying == 0


def test_a_429_gives_its_room_back_and_a_late_reply_keeps_its_most():
    for error, kept in ((TransientError("429"), None), (TransientError("no reply", answered=True), (70, 100))):
        holds = Holds(1000)
        with pytest.raises(TransientError):
            run(GatedBackend(Model(fail=error), holds).generate(JudgeRequest("prompt", max_output_tokens=100), 5.0))
        assert holds.settled == [((6 + FRAMING_TOKENS, 100), kept)] and holds.ended == [True]


def test_the_judge_counts_a_call_the_budget_refused_as_over_budget_not_as_an_error():
    calls = []
    judge = Judge(JudgeSettings(max_output_tokens=100), backend=GatedBackend(Model(), Holds(10)), on_call=calls.append)
    reply = judge.run(lambda ask: ask(JudgeRequest("prompt")))
    assert reply.over_budget and judge.usage.over_budget == 1 and judge.usage.errors == judge.usage.requests == 0
    assert [c.outcome for c in calls] == [JudgeOutcome.OVER_BUDGET]


def test_a_config_bounds_each_candidate_and_a_limit_that_is_not_a_whole_number_bounds_nothing():
    many = json.dumps({"max_output_tokens": 10, "candidate_count": 4})
    assert most_tokens(JudgeRequest("x", config=many))[1] == 40  # each candidate up to the limit
    text = json.dumps({"max_output_tokens": "50000"})  # the SDK would send 50000: not a bound held at 100
    assert most_tokens(JudgeRequest("x", config=text, max_output_tokens=100))[1] is None


def test_a_hold_made_as_its_caller_is_cancelled_is_given_back():
    class Slow(Holds):
        def hold(self, model: str, input_tokens: int, output_tokens: int) -> int | bool:
            time.sleep(0.2)  # the store's round trip
            return super().hold(model, input_tokens, output_tokens)

    holds = Slow(1000)
    gate = GatedBackend(Model(), holds)

    async def cancelled() -> None:
        task = asyncio.create_task(gate.generate(JudgeRequest("prompt", max_output_tokens=100), 5.0))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):  # the hold's thread ends, then its room is given back
            await asyncio.sleep(0.05)
            if holds.settled:
                break

    run(cancelled())
    assert holds.settled == [((6 + FRAMING_TOKENS, 100), None)] and holds.room == 1000 and holds.flying == 0
