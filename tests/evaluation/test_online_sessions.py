"""Online evaluators of whole sessions, on SQLite and PostgreSQL: a session is scored once it has been quiet for
``idle_seconds``, on every turn it has then; a turn arriving later reopens it, and its next revision's results
supersede the earlier ones, which are kept; collectors sharing a store score each session once, whatever the
order the turns arrive in and whichever collector stores them; a worker killed mid-score loses nothing; an ADK eval
set as reference gives a session the verdict ``toolpath eval SET --from-store`` gives the case it plays."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import text

from tests.helpers import ADK_FIXTURES
from tests.helpers.online_sessions import turn, wait_for
from toolpath.errors import ConfigError
from toolpath.evaluation.evalsets.files import load_eval_sets
from toolpath.evaluation.evalsets.recorded_cases import Match, pair_cases, score_recorded_sessions
from toolpath.evaluation.online import OnlineConfig, OnlineEvaluator
from toolpath.model import ToolCall
from toolpath.store.store import Store

SESSIONS = {"poll_seconds": 0.02, "evaluator": [{
    "name": "conversations", "version": "2", "target": "session", "idle_seconds": 0.3,
    "metrics": ["tool_call_count"], "aggregate": {"tool_call_count": ["mean", "min", "last"]},
}]}  # fmt: skip


def results(store: Store) -> dict[tuple[str, int, str], tuple]:
    """Every revision's results: (session, revision, metric) → score, label, turns, superseded."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT session_id, revision, metric, score, label, turns, superseded_at FROM session_results")
        ).all()
    return {(r[0], r[1], r[2]): (r[3], r[4], r[5], r[6] is not None) for r in rows}


def test_a_session_is_scored_once_quiet_and_a_late_turn_reopens_it(store):
    online = OnlineEvaluator(store, SESSIONS)
    assert online.described() == "conversations v2 (whole sessions once quiet for 0.3 s: tool_call_count)"
    store.on_invocations = online._enqueue  # stored first, scored once the workers start
    written = time.time_ns()
    store.write([turn("a", 1, calls=3), turn("a", 2, calls=1)])
    with store.engine.connect() as conn:
        status, due = conn.execute(text("SELECT status, due_at FROM session_jobs")).one()
    assert status == "pending" and written + 0.3e9 <= due <= time.time_ns() + 0.3e9  # due once quiet for 0.3 s
    online.start()
    try:
        assert wait_for(lambda: len(results(store)) == 3)
        first = results(store)
        assert first == {
            ("a", 1, "tool_call_count:mean"): (2.0, "scored", 2, False),
            ("a", 1, "tool_call_count:min"): (1.0, "scored", 2, False),
            ("a", 1, "tool_call_count:last"): (1.0, "scored", 2, False),
        }
        store.write([turn("a", 3, calls=5)])  # the user came back: the session goes on
        assert wait_for(lambda: len(results(store)) == 6)
    finally:
        online.stop()
    now = results(store)
    assert {k: v for k, v in now.items() if k[1] == 1} == {k: (*v[:3], True) for k, v in first.items()}  # kept
    assert now["a", 2, "tool_call_count:last"] == (5.0, "scored", 3, False)
    assert now["a", 2, "tool_call_count:mean"] == (3.0, "scored", 3, False)
    assert online.stats.scored == 2


def test_collectors_score_each_session_once_whatever_the_arrival_order(store, tmp_path):
    """Three collectors share a store; the turns of 12 sessions arrive interleaved, in a shuffled order, each
    through any of them: each session is scored once, on all its turns, as one collector alone scores them."""
    import random

    turns = [turn(f"s{i}", n, calls=(i + n) % 4) for i in range(12) for n in range(1, 1 + i % 4 + 1)]
    random.Random(7).shuffle(turns)
    others = [Store(store.engine.url.render_as_string(hide_password=False)) for _ in range(2)]
    collectors = [OnlineEvaluator(s, SESSIONS) for s in (store, *others)]
    for collector in collectors:  # storing: the sessions' jobs follow the turns
        collector.store.on_invocations = collector._enqueue
    try:
        for k, t in enumerate(turns):
            (store, *others)[k % 3].write([t])
        for collector in collectors:  # all scoring at once, once the sessions are quiet (however slow the writes)
            collector.start()
        assert wait_for(lambda: len(results(store)) == 36)
        time.sleep(0.5)  # a second scoring would show now
    finally:
        for collector in collectors:
            collector.stop()
        for other in others:
            other.close()
    got = results(store)
    assert len(got) == 36 and {k[1] for k in got} == {1}  # one revision each: scored once
    assert sum(c.stats.scored for c in collectors) == 12
    for i in range(12):
        counts = [(i + n) % 4 for n in range(1, 1 + i % 4 + 1)]
        assert got[f"s{i}", 1, "tool_call_count:mean"][0] == pytest.approx(sum(counts) / len(counts))
        assert got[f"s{i}", 1, "tool_call_count:last"][0] == counts[-1]


def test_a_session_claimed_by_a_worker_that_died_is_scored_once_by_another(store):
    """A worker claims a quiet session and is killed before it stores anything: once its lease runs out another
    scores it; the dead worker's late completion (had it lived) would be refused."""
    config = {**SESSIONS, "lease_seconds": 1}
    dead = OnlineEvaluator(store, config)
    store.on_invocations = dead._enqueue
    store.write([turn("k", 1, calls=2)])
    time.sleep(0.4)
    (claimed,) = dead.sessions.claim("dead-worker", 10, 1)  # then nothing: killed
    assert results(store) == {}
    alive = OnlineEvaluator(store, config).start()
    try:
        assert wait_for(lambda: len(results(store)) == 3)
    finally:
        alive.stop()
    assert not dead.sessions.complete("dead-worker", claimed, [])  # its lease is gone
    assert {k[:2] for k in results(store)} == {("k", 1)}


def test_an_eval_set_reference_gives_a_session_its_cases_verdict_as_from_store(tmp_path):
    """A live session that plays the weather case (by its first user text) gets the case's verdict and each
    criterion's score as ``toolpath eval weather.evalset.json --from-store`` gives them on the same session."""
    for f in ADK_FIXTURES.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    golden = tmp_path / "weather.evalset.json"
    store = Store(f"sqlite:///{tmp_path / 'traffic.db'}")
    config = {"target": "session", "reference_dataset": str(golden), "idle_seconds": 0.3, "poll_seconds": 0.02}
    online = OnlineEvaluator(store, config).start()
    london = ToolCall(name="get_weather", args={"city": "London"})
    played = [
        turn("chat", 1, calls=0, prompt="Hi"),  # normalised user text finds the case
        turn("chat", 2, calls=0, prompt="What is the weather in Paris?", response="Sunny in London."),
        turn("stranger", 1, calls=0, prompt="Tell me a joke"),
    ]
    played[1] = played[1].model_copy(update={"tool_calls": [london]})
    try:
        store.write(played)
        assert wait_for(lambda: {k[0] for k in results(store)} == {"chat", "stranger"})
    finally:
        online.stop()
    got = {k[2]: v for k, v in results(store).items() if k[0] == "chat"}
    eval_sets = load_eval_sets(golden)
    offline = score_recorded_sessions(
        pair_cases(eval_sets, [store.get_session("chat")], match=Match.NORMALIZED, each=False), store=store
    ).result.cases[0]
    assert set(got) == {*offline.metrics, "eval_case"}
    for name, criterion in offline.metrics.items():
        assert got[name][0] == criterion.score
        assert got[name][1] == {"PASSED": "pass", "FAILED": "fail"}[criterion.status]
    assert offline.status == "FAILED" and got["eval_case"][:2] == (0.0, "fail")
    stranger = {k[2]: v for k, v in results(store).items() if k[0] == "stranger"}
    assert stranger == {"eval_case": (None, "error", 1, False)}  # no case begins so: said, not scored
    store.close()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"metrics": ["tool_call_count"]}, r"tool_call_count scores single turns; say how .*aggregate = \{ tool_call"),
        ({"metrics": ["failure"], "aggregate": {"failure": "median"}}, r"aggregate.failure = 'median'"),
        ({"metrics": ["failure"], "aggregate": {"failure": "min", "latency": "mean"}}, "aggregate names latency"),
        ({"metrics": ["failure"], "aggregate": {"failure": "mean"}, "idle_seconds": 0}, "idle_seconds = 0"),
        ({"target": "turn", "metrics": ["failure"], "idle_seconds": 5}, "idle_seconds: only for an evaluator of"),
        ({"metrics": ["failure"], "reference_dataset": "golden.jsonl"}, "reference_dataset = 'golden.jsonl'"),
        ({"target": "conversation", "metrics": ["failure"]}, "target = 'conversation'"),
    ],
)
def test_a_session_evaluators_keys_are_checked(tmp_path, table, message):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    config = {"evaluator": [{"name": "e", "target": "session", **table}]}
    with pytest.raises(ConfigError, match=message):
        OnlineEvaluator(store, OnlineConfig.load(config))
    store.close()


def test_a_judged_session_evaluators_spend_is_kept_apart_and_priced(store, monkeypatch):
    """Sessions judged by ADK's multi-turn task success, beside a turn evaluator with no judge: each session once
    on its whole conversation; every judge request the session evaluator made is in its judge spend (model,
    outcome, tokens, time), priced by the model's price; the turn evaluator spent nothing."""
    from tests.helpers.fake_gemini import json_reply, serving_gemini
    from toolpath.store import judge_spend
    from toolpath.store.usage import set_price

    seen: list[str] = []

    def judge(prompt: str, _: int):
        seen.append(prompt)
        rubrics = [{"rubric": "answers", "verdict": "yes", "reason": "r"}, {"rubric": "asks", "verdict": "no"}]
        return json_reply(rubrics=rubrics)

    config = {"poll_seconds": 0.02, "evaluator": [
        {"name": "turns", "metrics": ["tool_call_count"]},
        {"name": "conversations", "target": "session", "idle_seconds": 0.3, "metrics": ["multi_turn_task_success_v1"],
         "budget": {"tokens_per_day": 10_000_000}},
    ]}  # fmt: skip
    with serving_gemini(monkeypatch, judge) as fake:
        online = OnlineEvaluator(store, config).start()
        try:
            store.write([turn("j1", 1), turn("j2", 1), turn("j1", 2, prompt="and tomorrow?")])
            assert wait_for(lambda: {k[0] for k in results(store)} == {"j1", "j2"})
            assert online.drain(30)
        finally:
            online.stop()
    got = results(store)
    assert got["j1", 1, "multi_turn_task_success_v1"] == (0.5, "fail", 2, False)
    conversation = next(p for p in seen if "j1 request 1" in p)
    assert "USER TURN 2: and tomorrow?" in conversation  # the whole conversation, in one request
    spend = judge_spend.by_evaluator(store)
    assert set(spend) == {"conversations"}  # the turn evaluator asked no judge
    mine = spend["conversations"]
    usage = online.units["conversations"].judge_usage()
    assert mine.calls == fake.requests == usage.requests >= 2
    assert mine.tokens == (usage.input_tokens, usage.output_tokens) and sum(mine.tokens) > 0
    assert {r.outcome for r in mine.rows} == {"ok"} and mine.mean_seconds is not None
    assert mine.cost is None and mine.unpriced == [mine.rows[0].model]  # no price set: no cost, and said so
    set_price(store, mine.rows[0].model, 2.0, 10.0)
    priced = judge_spend.by_evaluator(store)["conversations"]
    assert priced.cost == pytest.approx((usage.input_tokens * 2.0 + usage.output_tokens * 10.0) / 1e6)
    assert online.usage()["conversations"].tokens == sum(mine.tokens)  # what the budget counted


def test_the_judges_requests_are_traced_as_a_service_of_their_own(tmp_path, monkeypatch):
    """``judge_traces``: each request a session evaluator's judge made is a root span of service
    ``toolpath-judge`` at the endpoint named (a collector on 127.0.0.1 with its own store): the model, evaluator,
    version and tokens, no prompt; none of it is in the agent's store, and none becomes a run or a session."""
    from tests.helpers.collector import serving
    from tests.helpers.fake_gemini import json_reply, serving_gemini

    traffic, judged = Store(f"sqlite:///{tmp_path / 'traffic.db'}"), Store(f"sqlite:///{tmp_path / 'judge.db'}")
    reply = json_reply(rubrics=[{"rubric": "answers", "verdict": "yes"}])
    with serving_gemini(monkeypatch, lambda prompt, seen: reply) as fake, serving(judged) as receiver:
        config = {"poll_seconds": 0.02, "judge_traces": f"http://127.0.0.1:{receiver.options.http_port}",
                  "evaluator": [{"name": "conversations", "version": "4", "target": "session", "idle_seconds": 0.3,
                                 "metrics": ["multi_turn_task_success_v1"]}]}  # fmt: skip
        online = OnlineEvaluator(traffic, config).start()
        try:
            traffic.write([turn("t1", 1), turn("t1", 2)])
            assert wait_for(lambda: bool(results(traffic)))
        finally:
            online.stop()  # flushes the judge's spans
        assert wait_for(lambda: _spans(judged) != [])
        spans = _spans(judged)
    assert len(spans) == fake.requests >= 1
    for name, parent, attributes, resource in spans:
        assert name.startswith("chat ") and parent is None  # a root: no agent span above it
        assert resource["service.name"] == "toolpath-judge"
        assert attributes["gen_ai.evaluation.evaluator_name"] == "conversations"
        assert attributes["gen_ai.evaluation.evaluator_version"] == "4"
        assert attributes["gen_ai.usage.input_tokens"] > 0 and "error.type" not in attributes
        assert "t1 request" not in json.dumps(attributes)  # no prompt
    assert judged.list_invocations() == [] and judged.list_sessions() == []
    with traffic.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM spans")).scalar_one() == 0
    traffic.close()
    judged.close()


def _spans(store: Store) -> list[tuple]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT name, parent_span_id, attributes, resource FROM spans")).all()
    return [(r[0], r[1], _json(r[2]), _json(r[3])) for r in rows]


def _json(value: object) -> dict:
    """A JSON column's value (SQLite returns its text)."""
    return value if isinstance(value, dict) else json.loads(str(value))
