"""An online evaluator's judge budget is never passed: two collectors' workers on one store, targets dearer than any
before them, a judge that thinks before it answers — each call holds room for its most before it is sent."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import text

from tests.helpers import ADK_FIXTURES
from tests.helpers.builders import invocation
from tests.helpers.fake_gemini import Reply, json_reply, serving_gemini
from tests.helpers.online_sessions import turn, wait_for
from toolpath.errors import ConfigError
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.evaluation.online.budget_gate import StoreHolds
from toolpath.evaluation.online.evaluator_units import BatchSpend, spending
from toolpath.judges.call_gate import FRAMING_TOKENS, GatedBackend
from toolpath.judges.client import Judge, JudgeSettings
from toolpath.judges.messages import JudgeReply, JudgeRequest, TransientError
from toolpath.store import judge_spend
from toolpath.store.job_queue import JobQueue, QueueEvaluator
from toolpath.store.job_status import SkipReason
from toolpath.store.online_usage import UsageLimits
from toolpath.store.store import Store

BUDGET = 6000
MOST_OUT = 40


def config(workers: int = 3) -> dict:
    evaluator = {"name": "judge", "metrics": ["fluency"], "budget": {"tokens_per_hour": BUDGET}}
    return {"poll_seconds": 0.02, "workers": workers, "batch_size": 2, "evaluator": [evaluator],
            "judge": {"max_output_tokens": MOST_OUT}}  # fmt: skip


def test_two_collectors_never_spend_more_than_the_budget_on_targets_dearer_than_any_before(store, monkeypatch):
    """Answers that grow longer turn by turn (each judge prompt dearer than any before it: a claim's estimate from
    what targets have cost is too low) and thinking of the judge's that varies: the spend stays within the budget,
    every target is scored or skipped for budget, a skipped one has no results, and nothing stays held."""
    thoughts: list[int] = []
    lock = threading.Lock()

    def judge(prompt: str, seen: int) -> Reply:
        reply = json_reply(score=4, explanation="Reads well.")
        reply.thoughts = 3 + len(prompt) % 17
        with lock:
            thoughts.append(reply.thoughts)
        return reply

    turns = [
        invocation(i).model_copy(update={"response": " ".join(["sunny"] * (5 + 4 * i)) + f" in city {i}."})
        for i in range(60)
    ]
    other = Store(store.engine.url.render_as_string(hide_password=False))
    try:
        with serving_gemini(monkeypatch, judge) as fake:
            first, second = OnlineEvaluator(store, config()).start(), OnlineEvaluator(other, config()).start()
            try:
                for i in range(0, 60, 10):  # each collector stores part of the traffic
                    (store if i % 20 else other).write(turns[i : i + 10])
                assert first.drain(120) and second.drain(120)
            finally:
                first.stop()
                second.stop()
    finally:
        other.close()
    spend = judge_spend.by_evaluator(store)["judge"]
    tokens_in, tokens_out = spend.tokens
    assert tokens_in + tokens_out <= BUDGET  # never above
    assert first.usage()["judge"].tokens == tokens_in + tokens_out  # what the budget counted is what was spent
    assert {r.outcome for r in spend.rows} <= {"ok", "over_budget"}  # nothing left held
    assert tokens_out == sum(5 + t for t in thoughts)  # the judge's thinking is spent output
    assert all(body["generationConfig"]["maxOutputTokens"] == MOST_OUT for body in fake.bodies)
    with store.engine.connect() as conn:
        statuses = conn.execute(text("SELECT status, reason, count(*) FROM eval_jobs GROUP BY status, reason")).all()
        scored = {r[0] for r in conn.execute(text("SELECT DISTINCT invocation_id FROM online_results"))}
    by_status = {(status, reason): n for status, reason, n in statuses}
    done = by_status.pop(("done", None))
    assert set(by_status) == {("skipped", SkipReason.BUDGET)} and done + by_status["skipped", "budget"] == 60
    assert len(scored) == done == fake.requests and 2 <= done < 60
    largest = max(len(p.encode()) for p in fake.prompts) + len(turns[-1].response.encode())
    assert BUDGET - tokens_in - tokens_out < largest + FRAMING_TOKENS + MOST_OUT  # within about one call of it
    skipped = [n for e in (first, second) for (_, reason), n in e.skipped().items() if reason is SkipReason.BUDGET]
    assert sum(skipped) == by_status["skipped", "budget"]  # each counted once, by the collector that skipped it


def test_a_budget_with_no_room_for_one_call_at_its_most_is_refused_at_start(store, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    small = config()
    small["evaluator"][0]["budget"] = {"tokens_per_hour": 5000}
    small.pop("judge")  # the default max_output_tokens, 8192: more than the whole budget
    with pytest.raises(ConfigError, match=r"'judge': its budget \(tokens_per_hour of 5000\) has no room for one"):
        OnlineEvaluator(store, small)


class Flaky:
    """A model that fails as told, once each, then answers (10 tokens in, 3 out)."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)

    async def generate(self, request: JudgeRequest, timeout: float) -> JudgeReply:
        if self.failures:
            raise self.failures.pop(0)
        return JudgeReply('{"score": 1}', None, 10, 3)


LATE = TransientError("no reply within 60 s", answered=True)


@pytest.mark.parametrize(
    ("failures", "outcomes"),
    [
        ((LATE,), {"ok": (1, 10, 3), "error": (0, 70, 100)}),  # a reply too late may have been billed at its most
        ((ValueError("unreadable reply"),), {"error": (1, 70, 100)}),
        ((LATE, LATE, LATE), {"error": (1, 210, 300)}),
    ],
    ids=["late-then-answered", "unreadable", "late-every-time"],
)
def test_once_the_results_are_stored_every_calls_cost_is_under_its_outcome(store, failures, outcomes):
    """Whatever the calls' attempts met, the results' transaction leaves nothing held, each request counted once
    under its outcome with what it may have cost, the budget's count the same."""
    limits = UsageLimits(tokens_per_hour=100_000)
    queue = JobQueue(store, evaluators=[QueueEvaluator("e", "1", limits=limits)]).attach()
    store.write([invocation(1)])
    (job,) = queue.claim("w", 1, lease_seconds=60)
    spent = BatchSpend()
    gate = GatedBackend(Flaky(*failures), StoreHolds(store, "e", limits))
    settings = JudgeSettings(model="m", max_attempts=3, backoff=0.0, max_output_tokens=100)
    judge = Judge(settings, backend=gate, on_call=spent.calls.append)
    judge.run(lambda ask: ask(JudgeRequest("prompt", model="m")))
    spent.tokens = (
        judge.usage.input_tokens
        + judge.usage.output_tokens
        - sum(c.hold.input_tokens + c.hold.output_tokens for c in spent.calls if c.hold is not None)
    )
    closed, _ = queue.complete_and_claim("w", {job: []}, 0, 60, **spending({"e": spent}))
    assert closed == {job}
    rows = {r.outcome: (r.calls, r.input_tokens, r.output_tokens) for r in judge_spend.by_evaluator(store)["e"].rows}
    assert rows == outcomes
    assert queue.usage()["e"].tokens == sum(i + o for _, i, o in outcomes.values())


def test_a_session_evaluator_judged_by_its_eval_sets_criteria_alone_spends_within_its_budget(
    store, monkeypatch, tmp_path
):
    """No metric of its own asks a judge; its eval set's criteria do: their calls are held in its budget and
    recorded as its judge spend, as any judge metric's."""
    for fixture in ADK_FIXTURES.iterdir():
        (tmp_path / fixture.name).write_text(fixture.read_text())
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"multi_turn_task_success_v1": 0.5}}))

    def judge(prompt: str, _: int) -> Reply:
        return json_reply(rubrics=[{"rubric": "answers", "verdict": "yes", "reason": "r"}])

    evaluator = {
        "name": "conv",
        "target": "session",
        "idle_seconds": 0.3,
        "metrics": [],
        "reference_dataset": str(tmp_path / "weather.evalset.json"),
        "budget": {"tokens_per_hour": 50_000},
    }
    settings = {"poll_seconds": 0.02, "evaluator": [evaluator], "judge": {"max_output_tokens": MOST_OUT}}  # fmt: skip
    with serving_gemini(monkeypatch, judge) as fake:
        online = OnlineEvaluator(store, settings).start()
        try:
            store.write([turn("chat", 1, calls=0, prompt="Hi"),
                         turn("chat", 2, calls=0, prompt="What is the weather in Paris?")])  # fmt: skip
            assert wait_for(lambda: fake.requests > 0 and online.drain(1), timeout=60)
        finally:
            online.stop()
    spend = judge_spend.by_evaluator(store)["conv"]
    assert spend.calls == fake.requests > 0 and {r.outcome for r in spend.rows} == {"ok"}
    assert online.usage()["conv"].tokens == sum(spend.tokens)
    assert all(body["generationConfig"]["maxOutputTokens"] == MOST_OUT for body in fake.bodies)
