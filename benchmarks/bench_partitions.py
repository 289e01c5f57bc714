"""Retention by the partition against batch deletes: prune half of a PostgreSQL store of 10,000,000 spans while a
``toolpath collect`` keeps ingesting into it, on a store whose spans are partitioned by day (dropped whole, and
exact: ``toolpath db prune --exact``) and on one table.

    python benchmarks/bench_partitions.py [--spans 10000000] [--days 20] [--store all|both|partitioned|exact|one-table]

One throw-away PostgreSQL server (fsync on, as PostgreSQL runs by default), databases filled alike with SQL
(``generate_series``, not through the collector): traces of 10 spans (an agent span and 9 tool spans) spread
evenly over ``--days`` days up to now. ``partitioned``: spans partitioned by day (migration 0013 as it makes a
store, made ``--days`` ago); ``one table``: the schema at 0013 with spans left one table (today's store before
this migration); ``partitioned, exact``: a third store partitioned alike, pruned with ``--exact``. For each: a
collector serves the store and a sender posts one trace of 10 spans at a time, back to back, timing each request;
15 s of ingest alone (the floor: its latency without a prune), then a prune of the spans older than half the days
(``toolpath db prune --spans-only``: partitions dropped whole where the spans are partitioned, the older part of the
cutoff's day then deleted by batches of 1,000 with ``--exact``, timed apart; batches of 1,000 on one table).
Printed: the prune's time and the ingest latencies before and during it (median, p99, max). Last, migration 0013
is timed on the
one-table store (what it holds after its prune). ``--store``: ``all`` (the default) the three, ``both`` the
partitioned and one-table stores (without the exact one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_collector import wait_healthy
from benchmarks.bench_retention import SENDER, free_port, percentile

DAY_NS = 86_400 * 10**9
SPANS_PER_TRACE = 10
BASELINE_S = 15
"""Seconds of ingest alone before the prune: the floor."""
CHUNK = 100_000
"""Traces a filling statement inserts (a million spans), each its own transaction."""

VARIANTS = (
    ("partitioned", "partitioned", True, False),
    ("partitioned, exact", "exact", True, True),
    ("one table", "one-table", False, False),
)
"""Each store measured: its name, its ``--store`` choice, whether its spans are partitioned, whether pruned exact."""

_ARGS = json.dumps({"device_id": "thermostat-living_room", "updates": {"brightness": 30}})
_RESULT = json.dumps({"ok": True, "temperature": 21.5})
_FILL = """
INSERT INTO spans (trace_id, span_id, parent_span_id, name, kind, start_time, end_time, status_code, status_message,
                   attributes, events, resource, scope)
SELECT lpad(to_hex(t), 32, '0'),
       CASE WHEN i = 0 THEN lpad(to_hex(t), 16, '0') ELSE lpad(to_hex(i), 4, '0') || lpad(to_hex(t), 12, '0') END,
       CASE WHEN i = 0 THEN NULL ELSE lpad(to_hex(t), 16, '0') END,
       CASE WHEN i = 0 THEN 'invoke_agent bench' ELSE 'execute_tool tool_' || i END,
       1, s.at + i, s.at + i + 10000000, 0, NULL,
       CASE WHEN i = 0 THEN jsonb_build_object('gen_ai.operation.name', 'invoke_agent', 'gen_ai.agent.name', 'bench',
                                               'gen_ai.conversation.id', 's-' || (t / 10))
            ELSE jsonb_build_object('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', 'tool_' || i,
                                    'gen_ai.tool.call.arguments', %(args)s::text,
                                    'gen_ai.tool.call.result', %(result)s::text) END,
       '[]', '{}', 'bench'
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint - 1) AS t, generate_series(0, 9) AS i,
     LATERAL (SELECT %(first)s::bigint + t * %(step)s::bigint AS at) AS s
"""


def make_store(admin_url: str, name: str, *, partitioned: bool, first_ns: int) -> str:
    """A new database ``name`` at the schema's head: spans partitioned by day from ``first_ns``, or one table."""
    from alembic import command
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from toolpath.store import migrate, partitions

    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    engine = create_engine(url)
    migrate.upgrade(engine, "0012")
    with engine.begin() as conn:
        if partitioned:
            partitions.partition_spans(conn, first_ns, ahead=(time.time_ns() - first_ns) // DAY_NS + partitions.AHEAD)
        else:
            command.stamp(migrate.alembic_config(conn), "0013")  # at the head, its spans one table
    engine.dispose()
    return url


def fill(url: str, spans: int, first_ns: int, last_ns: int) -> None:
    """``spans`` spans, 10 a trace, their traces' starts spread evenly over ``[first_ns, last_ns)``."""
    import psycopg

    traces = spans // SPANS_PER_TRACE
    step = (last_ns - first_ns) // traces
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        for lo in range(0, traces, CHUNK):
            values = {"first": first_ns, "step": step, "lo": lo, "hi": min(lo + CHUNK, traces)}
            conn.execute(_FILL, {**values, "args": _ARGS, "result": _RESULT})
        conn.execute("VACUUM ANALYZE spans")


def measure(url: str, cutoff_age_s: float, folder: Path, *, exact: bool = False) -> dict[str, Any]:
    """Ingest alone for :data:`BASELINE_S`, then the prune with ingest going on; the figures."""
    from toolpath.store.retention import prune
    from toolpath.store.store import Store

    port, stop_file = free_port(), folder / "stop"
    stop_file.unlink(missing_ok=True)
    collector = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--store", url, "--http-port", str(port), "--grpc-port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    store = Store(url)
    try:
        wait_healthy(port, collector)
        sender = subprocess.Popen(
            [sys.executable, "-c", SENDER, f"http://127.0.0.1:{port}/v1/traces", str(stop_file)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(BASELINE_S)
        prune_from = time.time()
        counts = prune(store, spans_older_than=cutoff_age_s, invocations_older_than=None, batch_size=1000, pause=0.01)
        dropped_at = time.time()
        if exact:  # the same work as one exact prune, timed in its two parts: the drop above, the batches here
            counts.add(
                prune(
                    store,
                    spans_older_than=cutoff_age_s,
                    invocations_older_than=None,
                    batch_size=1000,
                    pause=0.01,
                    exact=True,
                )
            )
        prune_to = time.time()
        time.sleep(1)
        stop_file.touch()
        latencies = json.loads(sender.communicate(timeout=600)[0])
        left = store.counts()["spans"]
    finally:
        collector.terminate()
        collector.wait(timeout=60)
        store.close()
    return {
        "counts": counts,
        "seconds": prune_to - prune_from,
        "batches": prune_to - dropped_at,
        "before": [took for at, took in latencies if at < prune_from],
        "during": [took for at, took in latencies if prune_from <= at <= prune_to],
        "sent": len(latencies),
        "left": left,
    }


def latency(values: list[float]) -> str:
    if not values:
        return "no request"
    ms = [v * 1000 for v in values]
    median, p99 = percentile(ms, 0.5), percentile(ms, 0.99)
    return f"{len(ms)} requests, median {median:.0f} ms, p99 {p99:.0f} ms, max {max(ms):.0f} ms"


def time_migration(url: str) -> tuple[float, int]:
    """Migration 0013's change on a store of one table: seconds, and the spans it held."""
    from sqlalchemy import create_engine

    from toolpath.store import partitions

    engine = create_engine(url)
    with engine.begin() as conn:
        held = int(conn.exec_driver_sql("SELECT count(*) FROM spans").scalar_one())
        started = time.perf_counter()
        partitions.partition_spans(conn, time.time_ns())
    took = time.perf_counter() - started
    engine.dispose()
    return took, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=20, help="days the spans spread over; the older half is pruned")
    parser.add_argument("--store", choices=["partitioned", "exact", "one-table", "both", "all"], default="all")
    args = parser.parse_args()
    from tests.helpers.pgserver import PostgresServer

    server = PostgresServer.find()
    if server is None:
        print("PostgreSQL: not installed here (apt-get install -y postgresql)")
        return
    now = time.time_ns()
    first = (now - args.days * DAY_NS) // DAY_NS * DAY_NS
    cutoff_age_s = (now - (first + now) // 2) / 10**9  # half the days' traces are older than the cutoff
    print(f"{args.spans:,} spans over {args.days} days; prune what is older than {cutoff_age_s / 86_400:.1f} days")
    with tempfile.TemporaryDirectory() as folder, server.running(durable=True) as admin_url:
        results = {}
        for name, key, partitioned, exact in VARIANTS:
            if args.store not in ("all", key) and not (args.store == "both" and not exact):
                continue
            url = make_store(admin_url, key.replace("-", "_"), partitioned=partitioned, first_ns=first)
            started = time.perf_counter()
            fill(url, args.spans, first, now)
            print(f"{name}: filled in {time.perf_counter() - started:.0f} s")
            result = results[name] = measure(url, cutoff_age_s, Path(folder), exact=exact)
            parts = f" (its batches inside the cutoff's day: {result['batches']:.1f} s)" if exact else ""
            print(f"  pruned {result['counts']} in {result['seconds']:.1f} s{parts}")
            print(f"  ingest alone (the floor): {latency(result['before'])}")
            print(f"  ingest during the prune:  {latency(result['during'])}")
            expected = args.spans // 2 + result["sent"] * SPANS_PER_TRACE
            also = "; also the older part of the cutoff's day" if partitioned and not exact else ""
            print(f"  spans left {result['left']:,} (the newer half and the ingested ones: {expected:,}{also})")
        if "one table" in results:
            took, held = time_migration(url)
            print(f"migration 0013 of the one-table store ({held:,} spans): {took:.1f} s")


if __name__ == "__main__":
    main()
