"""The multi-node layout, run for real on loopback (the one multi-node test, marked ``multinode``): HAProxy with the
configuration docs/deploy.md shows, round-robin in front of three ``toolpath collect --workers 2 --online``
processes whose store is HAProxy's PostgreSQL frontend over a primary and its synchronous streaming replica. Agents
export through HAProxy with the OpenTelemetry SDK's OTLP/HTTP exporter (retrying). A quarter of the way in, one
collector is killed (``kill -9``) and started again; halfway, the primary dies and the replica is promoted, while
the exports retry. Then: every acknowledged span is stored, none twice, every invocation built whole and scored
online once per metric."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlalchemy import select

from tests.helpers.haproxy import haproxy_binary
from tests.helpers.layout import METRICS, TOOLS, Layout, Load, layout, wait_scored
from tests.helpers.pgserver import postgres_server
from toolpath.store import schema as t

pytestmark = pytest.mark.multinode

AGENTS, RUNS = 6, 60


def test_killed_collector_and_database_failover_lose_nothing_acknowledged(tmp_path):
    haproxy_binary()  # skips (or fails under CI) before anything starts when HAProxy is not installed
    with layout(postgres_server(), tmp_path) as running:
        load = Load(running.front, AGENTS, RUNS)
        fired: dict[str, threading.Thread] = {}

        def events(acknowledged: int) -> None:  # called by the agents' threads: the events run beside the load
            total = load.total_spans
            if acknowledged >= total // 4 and "kill" not in fired:
                fired["kill"] = threading.Thread(target=running.kill_and_restart, args=(running.collectors[1],))
                fired["kill"].start()
            if acknowledged >= total // 2 and "failover" not in fired:
                fired["failover"] = threading.Thread(target=running.failover)
                fired["failover"].start()

        load.on_acknowledged = _once_at_a_time(events)
        load.run()
        for thread in fired.values():
            thread.join(60)
        assert sorted(running.events) == [
            "collector killed",
            "collector restarted",
            "primary stopped",
            "replica promoted",
        ]
        _check(running, load)


def _once_at_a_time(events):
    lock = threading.Lock()

    def call(acknowledged: int) -> None:
        with lock:
            events(acknowledged)

    return call


def _check(running: Layout, load: Load) -> None:
    assert len(load.acknowledged) == load.total_spans == len(set(load.acknowledged))
    store = running.store()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT pg_is_in_recovery()").scalar() is False  # the promoted replica
        spans = [(r.trace_id, r.span_id) for r in conn.execute(select(t.spans.c.trace_id, t.spans.c.span_id))]
        invocations = [r.invocation_id for r in conn.execute(select(t.invocations.c.invocation_id))]
        calls = Counter(r.invocation_id for r in conn.execute(select(t.tool_calls.c.invocation_id)))
    # nothing acknowledged lost, nothing stored twice
    assert len(spans) == len(set(spans)) == load.total_spans
    assert set(spans) == set(load.acknowledged)
    # every run rebuilt whole, once
    assert len(invocations) == AGENTS * RUNS == len(set(invocations))
    assert set(calls.values()) == {TOOLS} and set(calls) == set(invocations)
    # online scores complete: one job per invocation, done, one score per metric, on the whole run
    jobs = wait_scored(store, len(invocations))
    assert sorted(jobs) == sorted(invocations) and set(jobs.values()) == {"done"}
    with store.engine.connect() as conn:
        scores = [(r.invocation_id, r.metric, r.score) for r in conn.execute(select(t.online_results))]
    assert sorted((i, m) for i, m, _ in scores) == sorted((i, m) for i in invocations for m in METRICS)
    assert {s for _, m, s in scores if m == "tool_call_count"} == {float(TOOLS)}
    store.close()
