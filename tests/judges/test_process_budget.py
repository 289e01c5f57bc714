"""The process's judge budget: calls and tokens per minute never passed, however many threads ask; what is refused
says when to come back; calls in flight bounded across every judge of the process."""

from __future__ import annotations

import asyncio
import threading

import pytest

from toolpath.errors import ConfigError
from toolpath.judges.client import Judge, JudgeReply, JudgeRequest, JudgeSettings
from toolpath.judges.process_budget import BudgetLimits, BudgetSpent, ProcessBudget, WhenSpent


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_calls_per_minute_are_never_passed_and_free_up_a_minute_later():
    clock = Clock()
    budget = ProcessBudget(BudgetLimits(calls_per_minute=3), clock=clock)
    for _ in range(3):
        budget.take()
        clock.now += 10
    with pytest.raises(BudgetSpent) as spent:
        budget.take()
    assert spent.value.retry_after == 30  # the first call (at 1000) leaves the window at 1060; now is 1030
    assert "3 calls per minute" in str(spent.value) and "retry after 30 s" in str(spent.value)
    clock.now = 1060.0
    budget.take()  # the first call has aged out
    assert budget.state().calls == 3 and budget.state().refused == 1


def test_tokens_per_minute_stop_new_calls_once_reached():
    clock = Clock()
    budget = ProcessBudget(BudgetLimits(tokens_per_minute=100), clock=clock)
    budget.take()
    budget.spent_tokens(60)
    budget.take()  # 60 < 100: still room
    clock.now += 5
    budget.spent_tokens(50)
    with pytest.raises(BudgetSpent) as spent:
        budget.take()
    assert spent.value.what == "tokens" and spent.value.retry_after == 55  # the 60 of 1000 age out at 1060
    clock.now = 1060.0
    budget.take()


def test_a_request_is_refused_whole_before_any_call():
    clock = Clock()
    budget = ProcessBudget(BudgetLimits(calls_per_minute=5), clock=clock)
    for _ in range(3):
        budget.take()
        clock.now += 1
    budget.check(2)  # 3 + 2 fit
    with pytest.raises(BudgetSpent) as spent:
        budget.check(3)  # one of the three must age out first: the one at 1000, at 1060
    assert spent.value.retry_after == 57
    assert budget.state().calls == 3  # a check counts nothing
    with pytest.raises(ConfigError, match="more than this process's 5 per minute"):
        budget.check(6)  # never fits: said as such, not "retry later"


def test_threads_together_never_pass_the_calls_per_minute():
    budget = ProcessBudget(BudgetLimits(calls_per_minute=50))
    taken = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(40):
            try:
                budget.take()
            except BudgetSpent:
                continue
            with lock:
                taken.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 50 and budget.state().refused == 8 * 40 - 50


@pytest.mark.parametrize(
    "limits",
    [{"in_flight": 0}, {"calls_per_minute": -1}, {"tokens_per_minute": 1.5}, {"calls_per_minute": True}],
)
def test_limits_are_whole_numbers(limits):
    with pytest.raises(ConfigError, match="judge budget"):
        BudgetLimits(**limits)


def test_workers_share_the_commands_budget():
    assert BudgetLimits(32, 600, 1_000_000).divided(4) == BudgetLimits(8, 150, 250_000)
    assert BudgetLimits(1, 1, None).divided(3) == BudgetLimits(1, 1, None)


class CountingBackend:
    """A model that answers after a short wait, counting the calls in flight at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.in_flight = 0
        self.most = 0

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        self.calls += 1
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return JudgeReply('{"score": 1}', input_tokens=7, output_tokens=3)


def asking(n: int, tag: str):
    async def work(ask):
        return await asyncio.gather(*(ask(JudgeRequest(f"{tag} {i}")) for i in range(n)))

    return work


def test_a_judge_refusing_when_spent_gets_an_error_with_its_retry(monkeypatch):
    from toolpath.judges import client

    budget = ProcessBudget(BudgetLimits(calls_per_minute=4))
    monkeypatch.setattr(client, "process_budget", lambda: budget)
    backend = CountingBackend()
    judge = Judge(JudgeSettings(), backend=backend, when_spent=WhenSpent.REFUSE)
    replies = judge.run(asking(10, "refuse"))
    answered = [r for r in replies if r.error is None]
    refused = [r for r in replies if r.error is not None]
    assert backend.calls == 4 and len(answered) == 4 and len(refused) == 6
    assert all("judge budget spent" in r.error and r.retry_after and r.retry_after >= 1 for r in refused)
    assert judge.usage.requests == 4 and judge.usage.over_budget == 6
    assert budget.state().tokens == 40  # 4 answers of 10 tokens each


def test_calls_in_flight_are_bounded_across_judges(monkeypatch):
    from toolpath.judges import client

    budget = ProcessBudget(BudgetLimits(in_flight=3))
    monkeypatch.setattr(client, "process_budget", lambda: budget)
    backend = CountingBackend()
    judges = [Judge(JudgeSettings(concurrency=10), backend=backend) for _ in range(3)]
    threads = [threading.Thread(target=judge.run, args=(asking(12, f"judge {i}"),)) for i, judge in enumerate(judges)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert backend.calls == 36 and backend.most == 3


def test_a_prompt_over_the_limit_is_never_sent():
    backend = CountingBackend()
    judge = Judge(JudgeSettings(max_prompt_chars=100), backend=backend)

    async def work(ask):
        return await ask(JudgeRequest("x" * 101))

    reply = judge.run(work)
    assert backend.calls == 0
    assert reply.error is not None and "101 characters" in reply.error and "max_prompt_chars" in reply.error
