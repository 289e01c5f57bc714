"""Retention at scale: prune a store of 1,000,000 spans while a collector keeps ingesting into it.

    python benchmarks/bench_retention.py [--spans 1000000] [--old 0.5] [--store sqlite|postgresql|both]

The store is filled with bulk inserts (not through the collector): traces of 10 spans (an agent span and 9 tool
spans), each with its invocation and 9 tool calls, 10 traces per session; a share ``--old`` of the traces is 40
days old, the rest a day old. Then a ``toolpath collect`` process serves the store and a sender process posts one
trace of 10 spans at a time, back to back, measuring each request's latency, while this process prunes what is
older than 30 days as ``toolpath db prune --older-than 30d`` does. Printed: the prune's time, the longest batch
transaction, and the ingest latencies before and during the prune (median, 99th percentile, max).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DAY_NS = 86_400 * 10**9
SPANS_PER_TRACE = 10

SENDER = r"""
import json, os, sys, time, urllib.request
url, stop_file = sys.argv[1], sys.argv[2]
def attr(k, v): return {"key": k, "value": {"stringValue": v}}
n, out = 0, []
while not os.path.exists(stop_file):
    now = time.time_ns()
    trace = f"{0xfeed0000 + n:032x}"
    root = f"{0xfeed0000 + n:016x}"
    spans = [{"traceId": trace, "spanId": root, "name": "invoke_agent live", "kind": 1,
              "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 10**7),
              "attributes": [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "live"),
                             attr("gen_ai.conversation.id", f"live-{n % 10}")]}]
    for i in range(9):
        spans.append({"traceId": trace, "spanId": f"{i + 1:04x}{0xfeed0000 + n:012x}", "parentSpanId": root,
                      "name": "execute_tool t", "kind": 1, "startTimeUnixNano": str(now + i + 1),
                      "endTimeUnixNano": str(now + i + 2),
                      "attributes": [attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "t"),
                                     attr("gen_ai.tool.call.arguments", json.dumps({"i": i}))]})
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    started = time.time()
    with urllib.request.urlopen(request, timeout=120) as reply:
        assert reply.status == 200
    out.append((started, time.time() - started))
    n += 1
print(json.dumps(out))
"""


def fill(store_url: str, spans: int, old_share: float, now_ns: int) -> tuple[int, int]:
    """Bulk-insert ``spans`` spans with their invocations, tool calls and sessions; returns (old, recent) traces."""
    from toolpath.store.store import Store

    store = Store(store_url)  # the schema
    traces = spans // SPANS_PER_TRACE
    old = int(traces * old_share)
    args = json.dumps({"device_id": "thermostat-living_room", "updates": {"brightness": 30}})
    result = json.dumps({"ok": True, "temperature": 21.5})

    def rows(first: int, last: int) -> tuple[list, list, list, dict]:
        span_rows, invocation_rows, call_rows, sessions = [], [], [], {}
        for n in range(first, last):
            start = (now_ns - 40 * DAY_NS if n < old else now_ns - DAY_NS) + n * 1_000_000
            trace, root, session = f"{n:032x}", f"{n:016x}", f"s-{n // 10}"
            agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench",
                     "gen_ai.conversation.id": session}  # fmt: skip
            span_rows.append((trace, root, None, "invoke_agent bench", 1, start, start + 10**7, 0, None,
                              json.dumps(agent), "[]", "{}", "bench"))  # fmt: skip
            invocation_rows.append((root, session, trace, "bench", f"request {n}", "done", "[]", 0.01, 0, None,
                                    start, "{}", None, 0, 0, None))  # fmt: skip
            sessions.setdefault(session, [start, start])[1] = start
            for i in range(SPANS_PER_TRACE - 1):
                tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"tool_{i}",
                        "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": result}  # fmt: skip
                span_rows.append((trace, f"{i + 1:04x}{n:012x}", root, f"execute_tool tool_{i}", 1, start + i + 1,
                                  start + i + 2, 0, None, json.dumps(tool), "[]", "{}", "bench"))  # fmt: skip
                call_rows.append((root, i, f"tool_{i}", args, result, None, None, start + i + 1, start + i + 2, None))
        return span_rows, invocation_rows, call_rows, sessions

    step = 20_000
    if store.dialect == "sqlite":
        import sqlite3

        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        conn.execute("PRAGMA synchronous=OFF")
        for first in range(0, traces, step):
            span_rows, invocation_rows, call_rows, sessions = rows(first, min(first + step, traces))
            conn.executemany(f"INSERT INTO spans VALUES ({', '.join('?' * 13)})", span_rows)
            conn.executemany("INSERT INTO sessions VALUES (?, 'bench', ?, ?)", [(s, *v) for s, v in sessions.items()])
            conn.executemany(f"INSERT INTO invocations VALUES ({', '.join('?' * 16)})", invocation_rows)
            conn.executemany(f"INSERT INTO tool_calls VALUES ({', '.join('?' * 10)})", call_rows)
            conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(store_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
            for first in range(0, traces, step):
                span_rows, invocation_rows, call_rows, sessions = rows(first, min(first + step, traces))
                with conn.cursor() as cur:
                    for table, data in (
                        ("spans", span_rows),
                        ("sessions", [(s, "bench", *v) for s, v in sessions.items()]),
                        ("invocations", invocation_rows),
                        ("tool_calls", call_rows),
                    ):
                        with cur.copy(f"COPY {table} FROM STDIN") as copy:
                            for row in data:
                                copy.write_row(row)
                conn.commit()
            conn.execute("ANALYZE")
    store.close()
    return old, traces - old


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(store_url: str, spans: int, old_share: float, batch_size: int, folder: Path) -> None:
    from toolpath.store.retention import Pruner
    from toolpath.store.store import Store

    now_ns = time.time_ns()
    started = time.perf_counter()
    old, recent = fill(store_url, spans, old_share, now_ns)
    print(f"  filled {spans:,} spans ({old:,} old traces, {recent:,} recent) in {time.perf_counter() - started:.0f} s")
    port, stop_file = free_port(), folder / "stop"
    stop_file.unlink(missing_ok=True)
    collector = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--store", store_url, "--http-port", str(port),
         "--grpc-port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        sender = subprocess.Popen(
            [sys.executable, "-c", SENDER, f"http://127.0.0.1:{port}/v1/traces", str(stop_file)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(5)  # ingest alone first: the baseline
        store = Store(store_url)
        pruner = Pruner(store, batch_size=batch_size, pause=0.01)
        prune_from = time.time()
        cutoff = now_ns - 30 * DAY_NS
        counts = pruner.prune_invocations(cutoff)
        counts.add(pruner.prune_spans(cutoff))
        prune_to = time.time()
        stop_file.touch()
        latencies = json.loads(sender.communicate(timeout=300)[0])
        left = store.counts()
    finally:
        collector.terminate()
        collector.wait(timeout=60)
    during = [took for at, took in latencies if prune_from <= at <= prune_to]
    before = [took for at, took in latencies if at < prune_from]
    longest = max(pruner.waits) * 1000
    print(f"  pruned {counts} in {prune_to - prune_from:.1f} s (batches of {batch_size}, longest {longest:.0f} ms)")
    for name, values in (("before", before), ("during", during)):
        median, p99 = percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000
        print(
            f"  ingest {name} the prune: {len(values)} requests of 10 spans, median {median:.0f} ms,"
            f" p99 {p99:.0f} ms, max {max(values, default=float('nan')) * 1000:.0f} ms"
        )
    assert left["invocations"] == recent + len(latencies), left
    assert left["spans"] == (recent + len(latencies)) * SPANS_PER_TRACE, left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--old", type=float, default=0.5, help="share of the traces older than the cutoff")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.store in ("sqlite", "both"):
            print("SQLite")
            measure(f"sqlite:///{Path(folder) / 'bench.db'}", args.spans, args.old, args.batch_size, Path(folder))
        if args.store in ("postgresql", "both"):
            from tests.helpers.pgserver import PostgresServer

            server = PostgresServer.find()
            if server is None:
                print("PostgreSQL: not installed here (apt-get install -y postgresql)")
                return
            with server.running() as url:
                print("PostgreSQL")
                measure(url, args.spans, args.old, args.batch_size, Path(folder))


if __name__ == "__main__":
    main()
