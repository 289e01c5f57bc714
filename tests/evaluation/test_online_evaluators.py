"""Online evaluators as units, on SQLite and PostgreSQL: each takes the turns its own filters and sample admit
(every process agreeing which), its results name it and its version, and its limits hold whatever the number of
workers and processes: at most ``max_per_hour`` targets, no target taken once its judge budget is spent, at most
``concurrency`` judge calls in flight. What it skips is recorded with the reason."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from tests.helpers.builders import invocation
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply, serving_gemini
from toolpath.evaluation.online import OnlineConfig, OnlineEvaluator
from toolpath.evaluation.online.sampling import sampled
from toolpath.judges.call_gate import FRAMING_TOKENS
from toolpath.store.job_queue import Job, JobQueue, QueueEvaluator
from toolpath.store.job_status import JobStatus, SkipReason
from toolpath.store.online_reads import latest_scored
from toolpath.store.online_usage import UsageLimits
from toolpath.store.store import Store

TWO = {
    "poll_seconds": 0.02,
    "evaluator": [
        {"name": "all-turns", "version": "3", "metrics": ["tool_call_count", "failure"], "sample_rate": 0.5},
        {"name": "bot-failures", "metrics": ["failure"], "agent_names": ["bot"], "failures_only": True},
    ],
}


def another(store: Store) -> Store:
    """A second process's store: the same database, its own engine and connections."""
    return Store(store.engine.url.render_as_string(hide_password=False))


def jobs(store: Store) -> dict[Job, tuple[str, str | None]]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT invocation_id, evaluator, status, reason FROM eval_jobs")).all()
    return {Job(r[0], r[1]): (r[2], r[3]) for r in rows}


def results(store: Store) -> set[tuple[str, str, str, str]]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT invocation_id, evaluator, evaluator_version, metric FROM online_results"))
        return {tuple(r) for r in rows}


@pytest.fixture
def other(store) -> Iterator[Store]:
    opened = another(store)
    yield opened
    opened.close()


def test_two_collectors_take_the_same_targets_and_each_result_names_its_evaluator(store, other):
    """Two collectors with one online.toml, each storing part of the traffic (and late spans of the other's turns):
    each evaluator's jobs are exactly the turns its filters admit and its hash samples, once each; the two
    evaluators' samples are their own; the results name evaluator and version."""
    first, second = OnlineEvaluator(store, TWO), OnlineEvaluator(other, TWO)
    first.queue.attach()
    second.queue.attach()
    turns = [invocation(i, agent="bot" if i % 3 else "other", failure=int(i % 2 == 0)) for i in range(60)]
    store.write(turns[:30])
    other.write(turns[30:])
    other.write(turns[:30])  # late spans of the first collector's turns, rebuilt by the second
    sampled_a = {t.invocation_id for t in turns if sampled(t.invocation_id, "all-turns", 0.5)}
    failures = {t.invocation_id for t in turns if t.agent_name == "bot" and t.failure}
    assert 15 < len(sampled_a) < 45 and sampled_a != {
        t.invocation_id for t in turns if sampled(t.invocation_id, "b", 0.5)
    }
    expected = {Job(i, "all-turns") for i in sampled_a} | {Job(i, "bot-failures") for i in failures}
    assert set(jobs(store)) == expected
    assert first.queue.stats.enqueued + second.queue.stats.enqueued == len(expected)  # none enqueued twice
    # outside the sample: counted, once each in a process however often it stores the turn
    assert first.skipped() == {
        ("all-turns", SkipReason.NOT_SAMPLED): 30 - len(sampled_a & {t.invocation_id for t in turns[:30]})
    }
    assert second.skipped()[("all-turns", SkipReason.NOT_SAMPLED)] == 60 - len(sampled_a)

    first.start()
    second.start()
    try:
        assert first.drain(120) and second.drain(120)
    finally:
        first.stop()
        second.stop()
    assert results(store) == (
        {(i, "all-turns", "3", m) for i in sampled_a for m in ("tool_call_count", "failure")}
        | {(i, "bot-failures", "1", "failure") for i in failures}
    )  # one turn may carry the same metric twice: once per evaluator
    assert first.stats.scored + second.stats.scored == len(expected)
    both = next(iter(sampled_a & failures))
    (shown,) = [r for r in latest_scored(store, limit=100) if r["invocation_id"] == both]
    assert set(shown["scores"]) == {"tool_call_count", "failure (all-turns)", "failure (bot-failures)"}  # watch


def limited(name: str, per_hour: int | None = None, tokens: int | None = None) -> QueueEvaluator:
    return QueueEvaluator(name, "1", limits=UsageLimits(per_hour, tokens))


def test_max_per_hour_holds_across_processes_claiming_at_once_and_the_rest_is_skipped_as_rate(store):
    """Four workers, each with a store of its own (as processes have), claim at once: together they take
    ``max_per_hour`` targets, the others are skipped with reason ``rate``; a target given back is uncounted."""
    JobQueue(store, evaluators=[limited("capped", per_hour=7), QueueEvaluator("free", "1")]).attach()
    store.write([invocation(i) for i in range(40)])
    stores = [another(store) for _ in range(4)]
    queues = [JobQueue(s, evaluators=[limited("capped", per_hour=7), QueueEvaluator("free", "1")]) for s in stores]
    taken: list[list[Job]] = [[] for _ in queues]
    start = threading.Barrier(len(queues))

    def work(n: int) -> None:
        start.wait()
        while batch := queues[n].claim(f"w{n}", 3, lease_seconds=60):
            taken[n].extend(batch)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(queues))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    claimed = [job for batch in taken for job in batch]
    assert len(claimed) == len(set(claimed))
    assert sum(job.evaluator == "capped" for job in claimed) == 7
    assert sum(job.evaluator == "free" for job in claimed) == 40
    stored = jobs(store)
    assert sorted(v for k, v in stored.items() if k.evaluator == "capped") == sorted(
        [("claimed", None)] * 7 + [("skipped", "rate")] * 33
    )
    skipped = sum(q.stats.skipped[("capped", SkipReason.RATE)] for q in queues)
    assert skipped == 33 and queues[0].skipped_in_store() == {("capped", SkipReason.RATE): 33}
    assert queues[0].usage()["capped"].targets == 7

    holder = next(n for n, batch in enumerate(taken) if any(job.evaluator == "capped" for job in batch))
    given = [job for job in taken[holder] if job.evaluator == "capped"]
    queues[holder].release(f"w{holder}", given)  # a stopping worker gives them back: no longer counted
    assert queues[0].usage()["capped"].targets == 7 - len(given)
    again = queues[0].claim("w9", 10, lease_seconds=60)
    assert sorted(again) == sorted(given)  # waiting again, and within the hour's room
    assert queues[0].usage()["capped"].targets == 7
    for s in stores:
        s.close()


def test_a_token_budget_takes_only_targets_it_can_pay_for_and_skips_the_rest_until_the_hour_turns(store):
    """Tokens are known once a target is scored: the first target of the hour is taken alone (the rest wait, not
    skipped) to learn what one costs; then a claim takes as many as the budget has room for at that cost, beside
    those being scored; the rest are skipped as ``budget``, and the spend never passes the budget."""
    queue = JobQueue(store, evaluators=[limited("judged", tokens=100)]).attach()
    store.write([invocation(i) for i in range(6)])
    first = queue.claim("w", 2, lease_seconds=60)
    assert len(first) == 1 and sorted(s for s, _ in jobs(store).values()).count("pending") == 5  # one waits
    closed, more = queue.complete_and_claim("w", {job: [] for job in first}, 4, 60, tokens={"judged": 30})
    assert closed == set(first) and len(more) == 2  # 30 a target: 70 left is room for 2 more (the rest skipped)
    closed, more = queue.complete_and_claim("w", {job: [] for job in more}, 4, 60, tokens={"judged": 60})
    assert more == []  # 90 spent, 30 a target: no room for one more
    usage = queue.usage()["judged"]
    assert (usage.tokens, usage.targets, usage.budget_spent) == (90, 3, False)  # never above the budget
    assert sorted(jobs(store).values()) == [("done", None)] * 3 + [("skipped", "budget")] * 3
    hour = 3600 * 10**9
    now = time.time_ns()
    this_hour, today = now - now % hour, now - now % (24 * hour)
    other_hour = this_hour - hour if this_hour > today else this_hour + hour  # another hour of the same UTC day
    with store.engine.begin() as conn:  # another hour: a new hour's room, its first target taken alone again
        conn.execute(text("UPDATE online_usage SET hour_start = :other"), {"other": other_hour})
        conn.execute(
            text("UPDATE eval_jobs SET status = 'pending', reason = NULL, attempts = 0 WHERE status = 'skipped'")
        )
    assert len(queue.claim("w", 5, lease_seconds=60)) == 1
    day = JobQueue(store, evaluators=[QueueEvaluator("judged", "1", limits=UsageLimits(None, None, 90))])
    assert day.usage()["judged"].day_tokens == 90 and day.usage()["judged"].budget_spent


def test_the_budget_keeps_room_for_the_targets_other_workers_are_scoring(store):
    queue = JobQueue(store, evaluators=[limited("judged", tokens=100)]).attach()
    store.write([invocation(i) for i in range(8)])
    (learn,) = queue.claim("a", 4, lease_seconds=60)
    queue.complete_and_claim("a", {learn: []}, 0, 60, tokens={"judged": 20})  # 20 a target: 80 left
    held = queue.claim("a", 2, lease_seconds=60)  # being scored by worker a, not yet counted
    assert len(held) == 2
    taken = queue.claim("b", 10, lease_seconds=60)
    assert len(taken) == 2  # 80 left, 40 of it for a's two: room for two at 20
    assert sorted(s for s, _ in jobs(store).values()) == ["claimed"] * 4 + ["done"] + ["skipped"] * 3


def test_the_budget_prices_targets_at_the_costliest_seen_not_the_mean(store):
    """Targets cheap at first and dearer later (a conversation's judge prompt grows with its turns): a claim takes
    each waiting target for as dear as the costliest one scored, so the spend stays within the budget where the
    mean of the first, cheap ones would have let it pass."""
    queue = JobQueue(store, evaluators=[limited("judged", tokens=100)]).attach()
    store.write([invocation(i) for i in range(8)])
    (learn,) = queue.claim("w", 4, lease_seconds=60)
    _, two = queue.complete_and_claim("w", {learn: []}, 2, 60, tokens={"judged": 10})  # 10 a target
    assert len(two) == 2
    _, more = queue.complete_and_claim("w", {job: [] for job in two}, 8, 60, tokens={"judged": 64})
    # 74 spent over 3 targets: at their mean (24.7) the 26 left would take one more, but a target cost 32
    assert more == []
    usage = queue.usage()["judged"]
    assert usage.tokens == 74 and usage.targets == 3
    store.write([invocation(i) for i in range(8, 10)])
    fresh = JobQueue(store, evaluators=[limited("judged", tokens=100)])  # another process: only the mean known
    assert len(fresh.claim("x", 8, lease_seconds=60)) == 1


MOST_OUT = 16
"""The judge's replies here are five tokens (words, as the fake counts them): held at 16 at most."""


def judged_config(**evaluator: object) -> dict:
    table = {"name": "judge", "metrics": ["fluency"], **evaluator}
    judge = {"max_output_tokens": MOST_OUT}
    return {"poll_seconds": 0.02, "workers": 4, "batch_size": 4, "evaluator": [table], "judge": judge}


def most_a_call(fake: FakeGemini) -> int:
    """The most tokens a call of the judge's could have cost, as it was held before it was sent: its prompt's
    bytes, the framing, and its max_output_tokens."""
    return max(len(p.encode()) for p in fake.prompts) + FRAMING_TOKENS + MOST_OUT


def answered(n: int) -> list:
    """``n`` turns, each answered with a text of its own (a judge's cached reply would cost nothing)."""
    return [invocation(i).model_copy(update={"response": f"Sunny in city {i}."}) for i in range(n)]


def test_the_judge_budget_counts_the_judges_own_tokens_and_stops_scoring_once_spent(store, monkeypatch):
    """One worker, one target a batch: scoring stops at the last call the budget has room for at the most it could
    cost; every other target is recorded as skipped for budget, and the judge never spends more than the
    budget."""
    with serving_gemini(monkeypatch, lambda prompt, seen: json_reply(score=4, explanation="Reads well.")) as fake:
        config = judged_config(budget={"tokens_per_hour": 2000})
        online = OnlineEvaluator(store, {**config, "workers": 1, "batch_size": 1}).start()
        try:
            store.write(answered(40))
            assert online.drain(120)
        finally:
            online.stop()
    usage = online.units["judge"].judge_usage()
    spent = usage.input_tokens + usage.output_tokens
    state = online.queue.usage()["judge"]
    assert state.tokens == spent  # the store counts what the judge reported
    scored = [status for status, _ in jobs(store).values()].count("done")
    assert fake.requests == scored and spent % scored == 0  # every target costs the same here
    assert 1 < scored < 40 and spent <= 2000 < spent + most_a_call(fake)  # the last one it had room for
    assert sorted(jobs(store).values()) == sorted([("done", None)] * scored + [("skipped", "budget")] * (40 - scored))
    assert online.skipped() == {("judge", SkipReason.BUDGET): 40 - scored}
    assert online.counters()[f"skipped:judge:{SkipReason.BUDGET}"] == 40 - scored


def test_a_budget_in_cost_prices_the_judges_tokens_and_stops_scoring_once_spent(store, monkeypatch):
    """``cost_per_hour``: the judge's tokens at the model's price; scoring stops at the last target it can pay
    for, the rest skipped for budget; the judge spend's cost says the same."""
    from toolpath.judges.client import DEFAULT_MODEL
    from toolpath.store import judge_spend
    from toolpath.store.usage import set_price

    set_price(store, DEFAULT_MODEL, 100.0, 400.0)  # per million tokens
    with serving_gemini(monkeypatch, lambda prompt, seen: json_reply(score=4, explanation="Reads well.")) as fake:
        config = judged_config(budget={"cost_per_hour": 0.25})
        online = OnlineEvaluator(store, {**config, "workers": 1, "batch_size": 1}).start()
        try:
            store.write(answered(40))
            assert online.drain(120)
        finally:
            online.stop()
    usage = online.units["judge"].judge_usage()
    cost = (usage.input_tokens * 100.0 + usage.output_tokens * 400.0) / 1e6
    state = online.queue.usage()["judge"]
    assert state.cost == pytest.approx(cost)
    assert judge_spend.by_evaluator(store)["judge"].cost == pytest.approx(cost)
    scored = [status for status, _ in jobs(store).values()].count("done")
    most = max(len(p.encode()) for p in fake.prompts) + FRAMING_TOKENS
    assert 1 < scored < 40 and cost <= 0.25 < cost + (most * 100.0 + MOST_OUT * 400.0) / 1e6  # the last it had room for
    assert online.skipped() == {("judge", SkipReason.BUDGET): 40 - scored}


def test_a_budget_in_cost_needs_a_priced_judge_model(store, monkeypatch):
    from toolpath.errors import ConfigError

    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # credentials: the judge is made, its model not priced
    with pytest.raises(ConfigError, match=r"budget in cost: the judge model 'gemini-2.5-flash' has no price"):
        OnlineEvaluator(store, judged_config(budget={"cost_per_day": 5}))
    no_judge = {"evaluator": [{"name": "c", "metrics": ["failure"], "budget": {"cost_per_hour": 1}}]}
    with pytest.raises(ConfigError, match="none of its metrics asks a judge"):
        OnlineEvaluator(store, no_judge)
    with pytest.raises(ConfigError, match=r"budget = \{'cost_per_hour': -1\}"):
        OnlineEvaluator(store, judged_config(budget={"cost_per_hour": -1}))


def test_concurrent_workers_never_spend_more_than_the_budget(store, monkeypatch):
    """Four workers claiming four targets at a time: each call holds room in the budget for the most it can cost
    before it is sent, so the judge's spend never passes the budget, and stops short of it by less than what one
    call could cost."""
    with serving_gemini(monkeypatch, lambda prompt, seen: json_reply(score=4, explanation="Reads well.")) as fake:
        online = OnlineEvaluator(store, judged_config(budget={"tokens_per_hour": 2000})).start()
        try:
            store.write(answered(80))
            assert online.drain(120)
        finally:
            online.stop()
    state = online.queue.usage()["judge"]
    scored = [status for status, _ in jobs(store).values()].count("done")
    per_target = state.tokens // scored
    assert 1 < scored < 80 and state.tokens % scored == 0
    assert state.tokens <= 2000 < state.tokens + most_a_call(fake)  # never above; no room left for one more call
    assert per_target < most_a_call(fake)
    assert online.skipped() == {("judge", SkipReason.BUDGET): 80 - scored}


def test_concurrency_bounds_the_judge_calls_in_flight_of_all_workers(store, monkeypatch):
    in_flight, most = 0, 0
    lock = threading.Lock()

    def slow(prompt: str, seen: int) -> Reply:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.15)
        with lock:
            in_flight -= 1
        return json_reply(score=4, explanation="Reads well.")

    with serving_gemini(monkeypatch, slow) as fake:
        online = OnlineEvaluator(store, judged_config(concurrency=2)).start()
        try:
            store.write(answered(16))
            assert online.drain(120)
        finally:
            online.stop()
    assert fake.requests == 16 and most == 2  # four workers with four turns each would send 16 at once
    assert online.units["judge"].judge.slots.most_in_flight == 2  # type: ignore[union-attr]


def test_max_per_hour_holds_for_an_evaluators_workers_and_the_results_are_its_own(store):
    config = {
        "poll_seconds": 0.02,
        "workers": 4,
        "batch_size": 2,
        "evaluator": [{"name": "capped", "version": "2", "metrics": ["tool_call_count"], "max_per_hour": 5}],
    }
    online = OnlineEvaluator(store, config).start()
    try:
        store.write([invocation(i) for i in range(20)])
        assert online.drain(120)
    finally:
        online.stop()
    scored = results(store)
    assert len(scored) == 5 and {(e, v) for _, e, v, _ in scored} == {("capped", "2")}
    assert online.queue.counts() == {JobStatus.DONE: 5, JobStatus.SKIPPED: 15}
    assert online.skipped() == {("capped", SkipReason.RATE): 15}


def test_a_session_turn_metric_without_its_aggregate_or_an_option_that_does_nothing_is_refused(store):
    from toolpath.errors import ConfigError

    with pytest.raises(ConfigError, match="failure scores single turns; say how a session's turns make one score"):
        OnlineEvaluator(store, {"evaluator": [{"name": "s", "metrics": ["failure"], "target": "session"}]})
    with pytest.raises(ConfigError, match="thresholds for fluency, which 'metrics' does not name"):
        OnlineEvaluator(store, {"thresholds": {"fluency": 3}, "evaluator": [{"name": "s", "metrics": ["failure"]}]})
    assert OnlineConfig.load(TWO).specs[1].filters.failures_only


def test_prometheus_shows_skips_by_reason_and_each_evaluators_use_of_its_limits(store):
    from prometheus_client.parser import text_string_to_metric_families

    from toolpath.collector.prometheus import ServiceMetrics

    config = {
        "poll_seconds": 0.02,
        "evaluator": [
            {"name": "capped", "metrics": ["tool_call_count"], "max_per_hour": 3, "sample_rate": 0.5,
             "budget": {"tokens_per_day": 1000}},
            {"name": "free", "metrics": ["failure"]},
        ],
    }  # fmt: skip
    online = OnlineEvaluator(store, config)
    metrics = ServiceMetrics()
    metrics.watch(online=online)
    online.add_sink(metrics)
    online.start()
    try:
        store.write([invocation(i) for i in range(20)])
        assert online.drain(120)
    finally:
        online.stop()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.expose().decode())
        for s in family.samples
    }
    sampled_in = sum(sampled(invocation(i).invocation_id, "capped", 0.5) for i in range(20))
    skipped = "toolpath_online_skipped_total"
    assert samples[(skipped, (("evaluator", "capped"), ("reason", "not_sampled")))] == 20 - sampled_in
    assert samples[(skipped, (("evaluator", "capped"), ("reason", "rate")))] == sampled_in - 3
    assert samples[("toolpath_online_evaluator_targets", (("evaluator", "capped"),))] == 3
    assert samples[("toolpath_online_evaluator_tokens", (("evaluator", "capped"), ("window", "day")))] == 0
    assert samples[("toolpath_online_evaluator_limit", (("evaluator", "capped"), ("limit", "max_per_hour")))] == 3
    assert samples[("toolpath_online_evaluator_budget_spent", (("evaluator", "capped"),))] == 0
    assert ("toolpath_online_evaluator_targets", (("evaluator", "free"),)) not in samples  # no limits: no row
    by_evaluator = {
        dict(labels)["gen_ai_evaluation_evaluator_name"]: n
        for (name, labels), n in samples.items()
        if name == "gen_ai_evaluation_score_count"
    }
    assert by_evaluator == {"capped": 3, "free": 20}


def test_collect_with_workers_keeps_max_per_hour_across_its_processes_and_says_what_it_scores(tmp_path):
    """``toolpath collect --workers 2 --online`` with two evaluators: the worker processes together score
    ``max_per_hour`` turns of the capped one, skip the rest as ``rate``, and score every turn for the other."""
    from tests.helpers.builders import otlp_json
    from tests.helpers.collector import Collector

    (tmp_path / "online.toml").write_text(
        "batch_size = 1\npoll_seconds = 0.05\n"
        '[[evaluator]]\nname = "capped"\nversion = "2"\nmetrics = ["tool_call_count"]\nmax_per_hour = 5\n'
        '[[evaluator]]\nname = "every"\nmetrics = ["failure"]\n'
    )
    collector = Collector(tmp_path, None, "--workers", "2", "--online", str(tmp_path / "online.toml")).start()
    traces = 16
    try:
        statuses = [
            collector.post(otlp_json(f"{n:032x}", tool_calls=1), "application/json")[0] for n in range(1, traces + 1)
        ]  # each on a new connection: the parent deals them to both workers
        assert statuses == [200] * traces
        store = collector.store()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            finished = [status for status, _ in jobs(store).values() if status in ("done", "skipped")]
            if len(finished) == 2 * traces:
                break
            time.sleep(0.1)
    finally:
        collector.stop()
    assert collector.process.returncode == 0
    stored = jobs(store)
    capped = sorted(v for k, v in stored.items() if k.evaluator == "capped")
    assert capped == sorted([("done", None)] * 5 + [("skipped", "rate")] * (traces - 5))
    assert sorted(v for k, v in stored.items() if k.evaluator == "every") == [("done", None)] * traces
    assert {(e, v, m) for _, e, v, m in results(store)} == {
        ("capped", "2", "tool_call_count"),
        ("every", "1", "failure"),
    }
    out = " ".join(collector.process.stdout.read().split())  # as the console wrapped it
    assert "online evaluation: capped v2 (tool_call_count); every v1 (failure) on 2 x 2 worker(s)" in out
    store.close()


def test_a_worker_takes_more_turns_at_once_when_no_judge_scores_them(store, monkeypatch):
    """Without ``batch_size``: 64 turns a claim when only computations score turns (cheaper a turn), 16 when a
    judge does (a judged batch waits for its slowest call); a session judge does not change the turns' batch; the
    config's ``batch_size`` wins over either."""
    computed = {"metrics": ["tool_call_count"]}
    online = OnlineEvaluator(store, computed)
    assert (online.batch, online.session_batch) == (64, 64)
    assert OnlineEvaluator(store, {**computed, "batch_size": 5}).batch == 5
    with serving_gemini(monkeypatch, lambda prompt, seen: json_reply(score=4, explanation="Reads well.")):
        judged = {k: v for k, v in judged_config().items() if k != "batch_size"}
        assert OnlineEvaluator(store, judged).batch == 16
        sessions = {"name": "chats", "target": "session", "metrics": ["fluency"], "aggregate": {"fluency": "mean"}}
        both = {**judged, "evaluator": [{"name": "calls", "metrics": ["tool_call_count"]}, sessions]}
        online = OnlineEvaluator(store, both)
        assert (online.batch, online.session_batch) == (64, 1)
