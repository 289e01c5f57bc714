"""The collector rebuilds only the runs new spans change: for any arrival order the stored invocations are the
ones a rebuild of the whole trace makes, and a request's work (span rows read, statements run) follows the spans
it brings, not the size of the trace they join."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from tests.helpers import SPANS
from toolpath.collector.ingestor import Ingestor, rebuild
from toolpath.collector.otlp import decode
from toolpath.collector.reconstruct import is_run_span
from toolpath.model import invocation_key
from toolpath.store import ingest as store_rebuild
from toolpath.store import schema as t
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store

SOURCES = ["adk-v2", "adk-v2-legacy", "openllmetry-langchain", "openinference-openai-agents", "pydantic-ai-v2"]
ORDERS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def scenario(source: str) -> list[SpanRecord]:
    return decode((SPANS / f"{source}.scenarios.otlp.pb").read_bytes(), "application/x-protobuf")


def span(trace: str, n: int, parent: int | None, op: str | None, start: int = 0) -> SpanRecord:
    attributes = {"gen_ai.operation.name": op, "gen_ai.tool.name": f"tool{n}", "gen_ai.agent.name": f"agent{n}"}
    return SpanRecord(trace_id=trace, span_id=f"{n:016x}", parent_span_id=None if parent is None else f"{parent:016x}",
                      name=f"{op} {n}", kind=1, start_time=start or n, end_time=(start or n) + 100,
                      attributes={k: v for k, v in attributes.items() if op is not None})  # fmt: skip


def tricky_trace() -> list[SpanRecord]:
    """Runs inside runs (an agent behind a tool), a plain span between an agent and its tools, a run whose parent
    never comes, a cycle of parents with a run in it, and one without."""
    trace = "5" * 32
    return [
        span(trace, 1, None, "invoke_agent"),
        span(trace, 2, 1, "execute_tool"),
        span(trace, 3, 2, "invoke_agent"),  # an agent called as a tool: part of run 1
        span(trace, 4, 3, "execute_tool"),
        span(trace, 5, 1, None),  # a plain span (an HTTP call) with a tool below it
        span(trace, 6, 5, "execute_tool"),
        span(trace, 7, 99, "invoke_agent"),  # its parent (99) never arrives: a run of its own
        span(trace, 8, 7, "execute_tool"),
        span(trace, 9, 10, "invoke_agent"),  # 9 <-> 10: a cycle holding a run: no invocation
        span(trace, 10, 9, None),
        span(trace, 11, 12, None),  # 11 <-> 12: a cycle without a run, above run 13
        span(trace, 12, 11, None),
        span(trace, 13, 11, "invoke_agent"),
        span(trace, 14, 13, "execute_tool"),
    ]


def stored_invocations(store: Store) -> list[tuple]:
    return sorted(
        (i.invocation_id, i.session_id, i.agent_name, i.prompt, i.response, tuple(c.name for c in i.tool_calls),
         tuple(c.call_id for c in i.tool_calls), i.failure, i.latency_seconds)
        for i in store.list_invocations(limit=None)
    )  # fmt: skip


def as_rows(invocations) -> list[tuple]:
    return sorted(
        (i.invocation_id, i.session_id, i.agent_name, i.prompt, i.response, tuple(c.name for c in i.tool_calls),
         tuple(c.call_id for c in i.tool_calls), i.failure, i.latency_seconds)
        for i in invocations
    )  # fmt: skip


def clear(store: Store) -> None:
    with store.engine.begin() as conn:
        for table in reversed(t.metadata.sorted_tables):
            conn.execute(table.delete())


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory):
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('incremental') / 'store.db'}")
    yield store
    store.close()


@pytest.mark.parametrize("source", [*SOURCES, "tricky"])
@ORDERS
@given(data=st.data())
def test_any_arrival_order_stores_what_a_whole_rebuild_makes(sqlite_store, source, data):
    spans = tricky_trace() if source == "tricky" else scenario(source)
    order = data.draw(st.permutations(range(len(spans))), label="order")
    cuts = sorted(data.draw(st.sets(st.integers(1, len(spans) - 1), max_size=8), label="cuts"))
    clear(sqlite_store)
    ingestor = Ingestor(sqlite_store)
    for start, end in zip([0, *cuts], [*cuts, len(spans)], strict=True):
        ingestor.store_records([SpanRecord(**spans[i].to_row()) for i in order[start:end]])
    assert stored_invocations(sqlite_store) == as_rows(rebuild(spans))
    sessions = {(s["session_id"], s["invocations"]) for s in sqlite_store.list_sessions(limit=None)}
    assert sum(n for _, n in sessions) == len(rebuild(spans))  # no session left without its invocations


def test_the_tricky_trace_makes_the_runs_expected(sqlite_store):
    clear(sqlite_store)
    trace = "5" * 32
    Ingestor(sqlite_store).store_records(tricky_trace())
    calls = {i.invocation_id: [c.name for c in i.tool_calls] for i in sqlite_store.list_invocations()}
    assert calls == {
        invocation_key(trace, f"{1:016x}"): ["tool2", "tool4", "tool6"],
        invocation_key(trace, f"{7:016x}"): ["tool8"],
        invocation_key(trace, f"{13:016x}"): ["tool14"],
    }


def run_spans(trace: str, run: int) -> list[SpanRecord]:
    """Agent run ``run`` of a long trace: one agent span and four tool spans."""
    root = 1000 * (run + 1)
    return [span(trace, root, None, "invoke_agent", start=root),
            *(span(trace, root + k, root, "execute_tool", start=root + k) for k in range(1, 5))]  # fmt: skip


def work_of_one_request(store: Store, runs_before: int) -> tuple[int, int, int]:
    """(span rows read, statements run, spans rebuilt) for one request of 5 spans joining a trace of
    ``runs_before`` runs; the request brings the tools of a new run, and the next one its agent span."""
    trace = f"{runs_before:032x}"
    ingestor = Ingestor(store)
    for start in range(0, runs_before, 100):
        ingestor.store_records(
            [s for run in range(start, min(start + 100, runs_before)) for s in run_spans(trace, run)]
        )
    rows_read, statements, rebuilt = [], [], []

    class Counted(SpanRecord):
        def __init__(self, *args, **kwargs):
            rows_read.append(1)
            super().__init__(*args, **kwargs)

    def count(*_args):
        statements.append(1)

    *tools, agent = reversed(run_spans(trace, runs_before))
    extra = run_spans(trace, runs_before + 1)[1:]  # tools of yet another run, whose agent span never comes
    event.listen(store.engine, "before_cursor_execute", count)
    original = store_rebuild.SpanRecord
    store_rebuild.SpanRecord = Counted
    try:
        store.ingest([*tools, extra[0]], lambda spans: rebuilt.extend(spans) or rebuild(spans), is_run_span, None)
        store.ingest([agent], lambda spans: rebuilt.extend(spans) or rebuild(spans), is_run_span, None)
    finally:
        store_rebuild.SpanRecord = original
        event.remove(store.engine, "before_cursor_execute", count)
    [inv] = [i for i in store.list_invocations(limit=None) if i.span_id == agent.span_id]
    assert len(inv.tool_calls) == 4
    return len(rows_read), len(statements), len(rebuilt)


@pytest.mark.parametrize("store", ["sqlite", "postgresql"], indirect=True)
def test_a_request_reads_the_spans_it_changes_not_its_whole_trace(store):
    small = work_of_one_request(store, 10)
    large = work_of_one_request(store, 600)  # 3,000 spans already in the trace
    assert small == large
    rows_read, _, rebuilt = large
    assert rows_read <= 10 and rebuilt == 5  # the new run's spans, read back; never the 3,000 before them


def test_spans_sent_again_change_nothing_and_rebuild_nothing(sqlite_store):
    clear(sqlite_store)
    spans = scenario("adk-v2")
    ingestor = Ingestor(sqlite_store)
    ingestor.store_records(spans)
    before = stored_invocations(sqlite_store)
    rebuilt = []
    sqlite_store.ingest(
        random.Random(3).sample(spans, len(spans)), lambda s: rebuilt.extend(s) or rebuild(s), is_run_span
    )
    assert rebuilt == [] and stored_invocations(sqlite_store) == before
