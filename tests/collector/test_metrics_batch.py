"""A scored batch updates each series once: the same exposition as prometheus-client's own ``observe`` and ``inc``
one result at a time."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from toolpath.collector.prometheus import ServiceMetrics, observe_all

VALUES = [0.0, 0.05, 0.1, 0.1, 0.5, 1.0, 2.5, 7.0, 1e9, -3.0, math.nan, 0.1]


def exposition(registry: CollectorRegistry) -> list[str]:
    return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]


def test_observe_all_exposes_what_observing_each_value_does():
    one_by_one, at_once = CollectorRegistry(), CollectorRegistry()
    buckets = (0.1, 0.5, 1.0, 5.0)
    single = Histogram("h", "help", ["m"], buckets=buckets, registry=one_by_one).labels("x")
    for value in VALUES:
        single.observe(value)
    observe_all(Histogram("h", "help", ["m"], buckets=buckets, registry=at_once).labels("x"), VALUES)
    assert exposition(at_once) == exposition(one_by_one)
    assert 'h_bucket{le="0.1",m="x"} 6.0' in exposition(at_once)  # -3, 0, 0.05, the 0.1s (a bound)


def test_a_batch_is_counted_as_its_results():
    metrics = ServiceMetrics()
    results = [
        ("bot", {"evaluator": "quality", "metric": "tool_call_count", "score": 2.0, "label": "pass", "explanation": None}),
        ("bot", {"evaluator": "quality", "metric": "tool_call_count", "score": 3.0, "label": "fail", "explanation": None}),
        (None, {"evaluator": "quality", "metric": "tool_call_count", "score": None, "label": "error",
                "explanation": "no trajectory"}),
        ("bot", {"metric": "failure", "score": 0.0, "label": "pass", "explanation": None}),  # the flat form's
    ]  # fmt: skip
    metrics.record_batch(results, [0.2, -1.0])
    lines = exposition(metrics.registry)
    for expected in [
        'gen_ai_evaluation_results_total{gen_ai_agent_name="bot",gen_ai_evaluation_evaluator_name="quality",'
        'gen_ai_evaluation_name="tool_call_count",gen_ai_evaluation_score_label="pass"} 1.0',
        'gen_ai_evaluation_results_total{gen_ai_agent_name="unknown",gen_ai_evaluation_evaluator_name="quality",'
        'gen_ai_evaluation_name="tool_call_count",gen_ai_evaluation_score_label="error"} 1.0',
        'gen_ai_evaluation_score_sum{gen_ai_agent_name="bot",gen_ai_evaluation_evaluator_name="quality",'
        'gen_ai_evaluation_name="tool_call_count"} 5.0',
        'gen_ai_evaluation_score_count{gen_ai_agent_name="bot",gen_ai_evaluation_evaluator_name="default",'
        'gen_ai_evaluation_name="failure"} 1.0',
        "toolpath_online_scoring_lag_seconds_count 2.0",
        "toolpath_online_scoring_lag_seconds_sum 0.2",
    ]:
        assert expected in lines, expected
