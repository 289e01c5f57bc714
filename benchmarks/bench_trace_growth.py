"""Cost of one collector request as the trace it adds to grows: per-request milliseconds for requests of 5 spans
(one ``invoke_agent`` run with 4 ``execute_tool`` spans) sent to a trace that already holds 5, 1,000 and 10,000
spans (a long-lived trace: one conversation, many agent runs). The work of a request should follow the spans it
brings, not the size of the trace.

    python benchmarks/bench_trace_growth.py [--store sqlite|postgresql-url] [--requests 20]

The requests go through the collector's :class:`~toolpath.collector.ingestor.Ingestor` (decode, clean, store,
rebuild, commit), in-process, on a real SQLite file (or the PostgreSQL URL given).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import Limits
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store

TRACE = "7" * 32
SIZES = (5, 1_000, 10_000)


def run_spans(trace: str, run: int) -> list[SpanRecord]:
    """Agent run number ``run`` of the trace: its ``invoke_agent`` span and 4 tool spans (5 spans)."""
    root = f"a{run:015x}"
    start = 1_000_000 + run * 10_000
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"request {run}"}]}])
    agent = SpanRecord(
        trace_id=trace, span_id=root, parent_span_id=None, name="invoke_agent bench", kind=1,
        start_time=start, end_time=start + 9_000,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench",
                    "gen_ai.conversation.id": "bench-session", "gen_ai.input.messages": messages},
    )  # fmt: skip
    tools = [tool_span(trace, root, run, i, start) for i in range(4)]
    return [*tools, agent]  # children end first: an exporter sends them first


def tool_span(trace: str, root: str, run: int, i: int, start: int) -> SpanRecord:
    return SpanRecord(
        trace_id=trace, span_id=f"b{run:011x}{i:04x}", parent_span_id=root, name="execute_tool t", kind=1,
        start_time=start + 100 + i, end_time=start + 200 + i,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                    "gen_ai.tool.call.id": f"call-{run}-{i}",
                    "gen_ai.tool.call.arguments": json.dumps({"run": run, "i": i}),
                    "gen_ai.tool.call.result": json.dumps({"ok": True})},
    )  # fmt: skip


def measure(store: Store, requests: int) -> dict[int, float]:
    ingestor = Ingestor(store, limits=Limits(max_spans_per_trace=None))
    figures: dict[int, float] = {}
    run = 0
    for size in SIZES:
        batch: list[SpanRecord] = []
        while run * 5 < size:  # fill the trace up to ``size`` spans, in large requests
            batch.extend(run_spans(TRACE, run))
            run += 1
            if len(batch) >= 2_000:
                ingestor.store_records(batch)
                batch = []
        if batch:
            ingestor.store_records(batch)
        times = []
        for _ in range(requests):
            spans = run_spans(TRACE, run)
            run += 1
            started = time.perf_counter()
            ingestor.store_records(spans)
            times.append((time.perf_counter() - started) * 1000)
        figures[size] = statistics.median(times)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="sqlite", help="sqlite (a temporary file) or a PostgreSQL URL")
    parser.add_argument("--requests", type=int, default=20, help="timed requests at each trace size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}" if args.store == "sqlite" else args.store
        store = Store(url)
        try:
            figures = measure(store, args.requests)
        finally:
            store.close()
    print(f"store: {store.dialect}; median of {args.requests} requests of 5 spans each")
    for size, ms in figures.items():
        print(f"  trace of {size:>6,} spans: {ms:8.2f} ms per request")


if __name__ == "__main__":
    main()
