"""Online evaluation's judge spend and whole-session results in view, on SQLite and PostgreSQL: a collector's
``/metrics`` (the store's spend totals per evaluator as counters, session results labelled by their evaluator)
and ``toolpath watch`` (the sessions scored, at their current revision, and a spend line per evaluator)."""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.cli import run_cli
from tests.helpers.fake_gemini import json_reply, serving_gemini
from tests.helpers.online_sessions import turn, wait_for
from toolpath.collector.prometheus import MAX_EVALUATOR_LABELS, OTHER_AGENTS, ServiceMetrics
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.store import judge_spend
from toolpath.store.judge_spend import SpendRow
from toolpath.store.online_reads import latest_sessions
from toolpath.store.usage import set_price

CONFIG = {"poll_seconds": 0.02, "evaluator": [
    {"name": "turns", "metrics": ["tool_call_count"]},
    {"name": "conversations", "version": "3", "target": "session", "idle_seconds": 0.3,
     "metrics": ["multi_turn_task_success_v1"]},
]}  # fmt: skip


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""Scraped samples: (name, sorted labels) -> value."""


def scraped(metrics: ServiceMetrics) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.expose().decode())
        for s in family.samples
    }


def judge(prompt: str, _: int):
    rubrics = [{"rubric": "answers", "verdict": "yes", "reason": "r"}, {"rubric": "asks", "verdict": "no"}]
    return json_reply(rubrics=rubrics)


def test_metrics_and_watch_show_each_evaluators_judge_spend_and_the_sessions_it_scored(store, monkeypatch, tmp_path):
    with serving_gemini(monkeypatch, judge) as fake:
        online = OnlineEvaluator(store, CONFIG)
        metrics = ServiceMetrics()
        metrics.watch(online=online)
        online.add_sink(metrics)
        online.start()
        try:
            store.write([turn("s1", 1), turn("s2", 1), turn("s1", 2, prompt="and tomorrow?")])
            assert wait_for(lambda: len(latest_sessions(store)) == 2)
            assert online.drain(30)
            store.write([turn("s2", 2, prompt="one more thing")])  # s2 reopened: scored again as revision 2
            assert wait_for(lambda: any(r["revision"] == 2 for r in latest_sessions(store)))
            assert online.drain(30)
        finally:
            online.stop()
    usage = online.units["conversations"].judge_usage()
    spend = judge_spend.by_evaluator(store)["conversations"]
    (model,) = {row.model for row in spend.rows}
    samples = scraped(metrics)
    calls = {dict(k)["outcome"]: v for (n, k), v in samples.items() if n == "toolpath_judge_spend_calls_total"}
    assert calls == {"ok": fake.requests} and fake.requests == usage.requests >= 3  # s1, s2, s2 again
    conversations = (("evaluator", "conversations"), ("model", model))
    tokens = "toolpath_judge_spend_tokens_total"
    assert samples[tokens, (("direction", "input"), *conversations)] == usage.input_tokens > 0
    assert samples[tokens, (("direction", "output"), *conversations)] == usage.output_tokens
    seconds = samples["toolpath_judge_spend_seconds_total", conversations]
    assert seconds == pytest.approx(spend.mean_seconds * fake.requests) and seconds > 0
    assert not [k for k in samples if k[0] == "toolpath_judge_spend_cost_total"]  # no price: no cost, not 0
    assert not [k for k in samples if k[0].startswith("toolpath_judge_spend") and ("evaluator", "turns") in k[1]]
    results = {
        (labels["gen_ai_evaluation_evaluator_name"], labels["gen_ai_evaluation_name"], labels[
            "gen_ai_evaluation_score_label"]): value
        for (name, key), value in samples.items()
        if name == "gen_ai_evaluation_results_total" and (labels := dict(key))["gen_ai_agent_name"] == "bot"
    }  # fmt: skip
    assert results == {
        ("conversations", "multi_turn_task_success_v1", "fail"): 3,
        ("turns", "tool_call_count", "scored"): 4,
    }

    set_price(store, model, 2.0, 10.0)
    cost = scraped(metrics)["toolpath_judge_spend_cost_total", (("evaluator", "conversations"),)]
    assert cost == pytest.approx((usage.input_tokens * 2.0 + usage.output_tokens * 10.0) / 1e6) and cost > 0

    rows = {r["session_id"]: r for r in latest_sessions(store)}
    assert {k: (r["revision"], r["turns"], r["evaluator_version"]) for k, r in rows.items()} == {
        "s1": (1, 2, "3"),
        "s2": (2, 2, "3"),  # the current revision only: revision 1 is superseded
    }
    assert rows["s2"]["scores"]["multi_turn_task_success_v1"]["label"] == "fail"
    url = store.engine.url.render_as_string(hide_password=False)
    shown = run_cli(tmp_path, "watch", "--once", "--store", url)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    (s2,) = [line for line in lines if line.startswith("│ s2 ")]
    assert "conversations v3" in s2 and "│ 2 " in s2 and "0.50" in s2
    (line,) = [line for line in lines if line.startswith("conversations:")]
    assert (
        f"{fake.requests} calls sent," in line
        and f"tokens {usage.input_tokens:,} in / {usage.output_tokens:,} out" in line
    )
    assert f"cost {cost:.4f}" in line and "mean latency" in line and " s" in line
    from rich.console import Console

    from toolpath.cli.watch_display import watch_screen

    only_sessions = Console(record=True, width=160)
    only_sessions.print(watch_screen([], list(rows.values()), {}))
    assert "Scored online (" not in only_sessions.export_text()  # no empty table of turns beside sessions


def test_spend_of_many_evaluators_is_folded_into_other_and_priced_only_when_every_model_is(store):
    """Evaluators past the label bound add up under ``other``; an evaluator with a model without a price has no
    cost series, and ``toolpath watch`` names that model instead."""
    hour = time.time_ns()
    many = {f"e{n:03d}": [SpendRow("priced", "ok", 1, 10, 1, 0.5)] for n in range(MAX_EVALUATOR_LABELS + 2)}
    mixed = [
        SpendRow("priced", "ok", 2, 100, 10, 1.0),
        SpendRow("free", "error", 1, 7, 3, 0.0),
        SpendRow("free", "cached", 1, 70, 30, 0.0),
    ]  # a cached reply's tokens were not spent again
    with store.engine.begin() as conn:
        judge_spend.add(conn, {**many, "a_mixed": mixed}, hour)
    set_price(store, "priced", 1.0, 1.0)
    online = OnlineEvaluator(store, {"metrics": ["tool_call_count"]})  # not started: only read at scrape
    metrics = ServiceMetrics()
    metrics.watch(online=online)
    samples = scraped(metrics)
    calls = {
        dict(k)["evaluator"]: v for (n, k), v in samples.items() if n == "toolpath_judge_spend_calls_total"
        and dict(k)["model"] == "priced"
    }  # fmt: skip
    # the config's own evaluator took a label first (its skip counts): a_mixed and e000..e097 keep their names
    assert len(calls) == MAX_EVALUATOR_LABELS and "e097" in calls and calls[OTHER_AGENTS] == 4  # e098..e101
    assert calls["a_mixed"] == 2
    costs = {dict(k)["evaluator"]: v for (n, k), v in samples.items() if n == "toolpath_judge_spend_cost_total"}
    assert "a_mixed" not in costs and costs[OTHER_AGENTS] == pytest.approx(4 * 11 / 1e6)
    cached = ("toolpath_judge_spend_calls_total", (("evaluator", "a_mixed"), ("model", "free"), ("outcome", "cached")))
    assert samples[cached] == 1
    assert samples["toolpath_judge_spend_seconds_total", (("evaluator", "a_mixed"), ("model", "free"))] == 0
    from toolpath.cli.watch_display import spend_lines

    line = next(str(t) for t in spend_lines(judge_spend.by_evaluator(store)) if str(t).startswith("a_mixed"))
    assert (
        line
        == "a_mixed: 3 calls sent (1 failed), 1 cached, tokens 107 in / 13 out, unpriced: free, mean latency 0.33 s"
    )


def test_every_worker_of_collect_reports_the_stores_judge_spend_once(store, monkeypatch, tmp_path):
    """``toolpath collect --workers 2 --online`` judging whole sessions: whichever worker answers a scrape, its
    judge spend counters are the store's totals (every worker's requests, counted once), and the sessions'
    results are counted once under their evaluator."""
    from tests.helpers.builders import otlp_json
    from tests.helpers.collector import TOKEN, Collector, http_get

    (tmp_path / "online.toml").write_text(
        "poll_seconds = 0.05\n"
        '[[evaluator]]\nname = "conversations"\ntarget = "session"\nidle_seconds = 2\n'
        'metrics = ["multi_turn_task_success_v1"]\n'
    )
    url = store.engine.url.render_as_string(hide_password=False)
    sessions = 4
    with serving_gemini(monkeypatch, judge) as fake:  # the workers find it through the environment they inherit
        collector = Collector(tmp_path, url, "--workers", "2", "--online", str(tmp_path / "online.toml")).start()

        def scrape() -> Samples:
            text = http_get(f"{collector.url}/metrics", TOKEN)[1].decode()
            return {
                (s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
            }

        try:
            for n in range(2 * sessions):  # two turns a session, back to back, each on a new connection
                body = otlp_json(f"{n + 1:032x}", tool_calls=1, session=f"conv-{n // 2}")
                assert collector.post(body, "application/json")[0] == 200
            assert wait_for(lambda: len(latest_sessions(store)) == sessions, timeout=60)
            assert wait_for(lambda: results_counted(scrape()) == sessions)  # told to the sinks after the commit
            scrapes = [scrape() for _ in range(6)]  # each on a new connection: answered by either worker
        finally:
            collector.stop()
    assert collector.process is not None and collector.process.returncode == 0
    spend = judge_spend.by_evaluator(store)["conversations"]
    assert spend.calls == fake.requests and {r.outcome for r in spend.rows} == {"ok"}
    (model,) = {r.model for r in spend.rows}
    calls = ("toolpath_judge_spend_calls_total", (("evaluator", "conversations"), ("model", model), ("outcome", "ok")))
    assert [samples[calls] for samples in scrapes] == [fake.requests] * len(scrapes)
    assert {r["turns"] for r in latest_sessions(store)} == {2}
    assert [results_counted(samples) for samples in scrapes] == [sessions] * len(scrapes)  # each session once


def results_counted(samples: Samples) -> float:
    """The session evaluator's results in ``gen_ai_evaluation_results_total``, every label added up."""
    return sum(
        v
        for (name, labels), v in samples.items()
        if name == "gen_ai_evaluation_results_total" and ("gen_ai_evaluation_evaluator_name", "conversations") in labels
    )


def test_a_budget_in_cost_shows_what_it_spent_and_is_spent_once_a_model_loses_its_price(store, monkeypatch):
    from toolpath.judges.client import DEFAULT_MODEL
    from toolpath.store.usage import remove_price

    set_price(store, DEFAULT_MODEL, 2.0, 10.0)  # a budget in cost needs a priced judge at start
    config = {"poll_seconds": 0.02, "evaluator": [
        {"name": "conversations", "target": "session", "idle_seconds": 0.3, "metrics": ["multi_turn_task_success_v1"],
         "budget": {"cost_per_day": 50.0}},
    ]}  # fmt: skip
    with serving_gemini(monkeypatch, judge):
        online = OnlineEvaluator(store, config)
        metrics = ServiceMetrics()
        metrics.watch(online=online)
        online.start()
        try:
            store.write([turn("c1", 1), turn("c1", 2, prompt="and then?")])
            assert wait_for(lambda: len(latest_sessions(store)) == 1)
            assert online.drain(30)
        finally:
            online.stop()
    spent = judge_spend.by_evaluator(store)["conversations"].cost
    assert spent is not None and spent > 0
    samples = scraped(metrics)
    mine = ("evaluator", "conversations")
    assert samples["toolpath_online_evaluator_cost", (mine, ("window", "day"))] == pytest.approx(spent)
    assert samples["toolpath_online_evaluator_cost", (mine, ("window", "hour"))] <= spent
    assert samples["toolpath_online_evaluator_limit", (("evaluator", "conversations"), ("limit", "cost_per_day"))] == 50
    assert ("toolpath_online_evaluator_limit", (mine, ("limit", "cost_per_hour"))) not in samples
    assert samples["toolpath_online_evaluator_budget_spent", (mine,)] == 0
    remove_price(store, DEFAULT_MODEL)  # its cost can no longer be known: the budget counts as spent, and says so
    samples = scraped(metrics)
    assert samples["toolpath_online_evaluator_cost", (mine, ("window", "day"))] == float("inf")
    assert samples["toolpath_online_evaluator_budget_spent", (mine,)] == 1
    assert not [k for k in samples if k[0] == "toolpath_judge_spend_cost_total"]
