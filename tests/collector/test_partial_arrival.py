"""Recorded exports sent to the receiver whole, in two requests and in many, in different orders, with online
evaluation on: the stored state is the same every time, and no rebuild leaves an empty session, a job or a
score of an invocation that is gone, or a score of an invocation's partial version."""

from __future__ import annotations

import json
import random
import time

import pytest
from sqlalchemy import select

from tests.helpers import SPANS
from tests.helpers.builders import span_count, split_export
from toolpath.collector.ingestor import Ingestor
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.store import schema as t
from toolpath.store.spanrecord import SpanRecord

SOURCES = [
    "adk-v2",
    "adk-v2-legacy",
    "adk-v1",
    "otel-genai-langchain",
    "openinference-langchain",
    "openllmetry-langchain",
    "pydantic-ai-v2",
    "openinference-openai-agents",
]


def splits(n: int, seed: int) -> dict[str, list[list[int]]]:
    """Ways to cut an export of ``n`` spans (numbered in end order, as an exporter sends them) into requests."""
    rng = random.Random(seed)
    ordered = list(range(n))
    halves = [ordered[: n // 2], ordered[n // 2 :]]
    shuffled = rng.sample(ordered, n)
    chunks = [shuffled[i::5] for i in range(5)]
    batches = [ordered[i : i + 4] for i in range(0, n, 4)]  # a small export batch size, in end order
    return {
        "whole": [ordered],
        "halves": halves,
        "halves reversed": halves[::-1],
        "five random parts": chunks,
        "batches of four": batches,
        "batches of four, newest first": batches[::-1],
    }


def stored_state(store) -> dict:
    with store.engine.connect() as conn:

        def rows(table, *order):
            return [tuple(r) for r in conn.execute(select(table).order_by(*order))]

        state = {
            "sessions": rows(t.sessions, t.sessions.c.session_id),
            "invocations": rows(t.invocations, t.invocations.c.invocation_id),
            "tool_calls": rows(t.tool_calls, t.tool_calls.c.invocation_id, t.tool_calls.c.position),
            "spans": [(r.trace_id, r.span_id) for r in conn.execute(select(t.spans).order_by("trace_id", "span_id"))],
            "jobs": [(r.invocation_id, r.status) for r in conn.execute(select(t.eval_jobs).order_by("invocation_id"))],
            "scores": [
                (r.invocation_id, r.metric, r.score, r.label)
                for r in conn.execute(select(t.online_results).order_by("invocation_id", "metric"))
            ],
        }
    return state


def send_all(store, bodies: list[bytes]) -> dict:
    ingestor = Ingestor(store)
    online = OnlineEvaluator(store, {"metrics": ["tool_error_rate", "tool_call_count"], "poll_seconds": 0.01,
                                     "workers": 1, "batch_size": 4}).start()  # fmt: skip
    try:
        for body in bodies:
            headers = {"Content-Type": "application/x-protobuf", "Content-Length": str(len(body))}
            reply = ingestor.handle_http("/v1/traces", headers, lambda _n, body=body: body)
            assert reply.status == 200, reply.body
        assert online.drain(60)
    finally:
        online.stop()
    return stored_state(store)


def clear(store) -> None:
    with store.engine.begin() as conn:
        for table in reversed(t.metadata.sorted_tables):
            conn.execute(table.delete())


@pytest.mark.parametrize(
    ("store", "source"),
    [*(("sqlite", s) for s in SOURCES), ("postgresql", "adk-v2"), ("postgresql", "otel-genai-langchain")],
    indirect=["store"],
)
def test_any_split_of_the_export_stores_the_same_state(store, source):
    body = (SPANS / f"{source}.scenarios.otlp.pb").read_bytes()
    states = {}
    ways = splits(span_count(body), seed=len(source))
    if len(body) > 1_000_000:  # the long LangGraph threads: the cuts that make inner runs stand alone, to keep time
        ways = {name: ways[name] for name in ("whole", "halves reversed", "batches of four, newest first")}
    for name, parts in ways.items():
        clear(store)
        states[name] = send_all(store, split_export(body, parts))
    whole = states.pop("whole")
    want = json.loads((SPANS / f"{source}.scenarios.expected.json").read_text(encoding="utf-8"))
    turns = len(want["invocations"])
    assert len(whole["invocations"]) == turns
    sessions = {w.get("session_id", want["session_id"]) for w in want["invocations"]}
    assert {row[0] for row in whole["sessions"]} == sessions
    assert [status for _, status in whole["jobs"]] == ["done"] * turns
    assert {i for i, *_ in whole["scores"]} == {row[0] for row in whole["invocations"]}
    for name, state in states.items():
        for key in whole:
            assert state[key] == whole[key], (name, key, set(state[key]) ^ set(whole[key]))


def test_a_wrapper_span_arriving_last_leaves_no_session_and_no_job_behind(store):
    """OpenLLMetry's ``invoke_agent`` → ``*.workflow`` and ADK's AgentTool ``invoke_workflow`` nested in a tool:
    the inner run is an invocation of its own until its outer run arrives."""
    body = (SPANS / "adk-v2.scenarios.otlp.pb").read_bytes()
    from toolpath.collector.otlp import decode

    records: list[SpanRecord] = decode(body, "application/x-protobuf")
    roots = [i for i, r in enumerate(records) if r.parent_span_id is None]
    others = [i for i in range(len(records)) if i not in roots]
    first, second = split_export(body, [others, roots])
    clear(store)
    ingestor = Ingestor(store)
    for part in (first, second):
        headers = {"Content-Type": "application/x-protobuf", "Content-Length": str(len(part))}
        reply = ingestor.handle_http("/v1/traces", headers, lambda _n, part=part: part)
        assert reply.status == 200
    sessions = store.list_sessions()
    assert sorted((s["session_id"], s["invocations"]) for s in sessions) == [
        ("home-session-0002", 8),
        ("home-session-0003", 1),
    ]
    assert store.counts()["invocations"] == 9


def test_the_collector_service_with_online_evaluation_after_small_batches_newest_first(tmp_path):
    """The real ``toolpath collect`` process, fed over HTTP the way a small-batch exporter of a slow agent would."""
    from tests.helpers.collector import Collector

    online = tmp_path / "online.toml"
    online.write_text('metrics = ["tool_call_count"]\npoll_seconds = 0.05\n')
    collector = Collector(tmp_path, None, "--online", str(online)).start()
    try:
        body = (SPANS / "adk-v2.scenarios.otlp.pb").read_bytes()
        batches = splits(span_count(body), seed=1)["batches of four, newest first"]
        for part in split_export(body, batches):
            assert collector.post(part)[0] == 200
        store = collector.store()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.counts()["online_results"] < 9:
            time.sleep(0.1)
        state = stored_state(store)
    finally:
        collector.stop()
    assert sorted((s["session_id"], s["invocations"]) for s in store.list_sessions()) == [
        ("home-session-0002", 8),
        ("home-session-0003", 1),
    ]
    assert sorted(i for i, _ in state["jobs"]) == sorted(row[0] for row in state["invocations"])
    assert {status for _, status in state["jobs"]} == {"done"}
    want = json.loads((SPANS / "adk-v2.scenarios.expected.json").read_text(encoding="utf-8"))
    counts = {i.trace_id: len(i.tool_calls) for i in store.list_invocations()}
    scores = {row[0]: row[2] for row in state["scores"]}
    by_trace = {row[2]: row[0] for row in state["invocations"]}  # trace id -> invocation id
    assert {w["trace_id"]: len(w["tool_calls"]) for w in want["invocations"]} == counts
    assert {trace: scores[by_trace[trace]] for trace in counts} == counts  # scored on the whole invocation
