"""The multi-node layout's throughput with a collector killed and a database failover, beside one collector's.

    python benchmarks/bench_layout.py                      # 6 agents × 500 runs of 4 spans: a couple of minutes
    python benchmarks/bench_layout.py --max-batch 8        # small exports: bound by requests, not spans

Both rows send the same load: ``--agents`` agent threads, each exporting its runs' spans (an agent span and three
tool spans per run, made by the OpenTelemetry SDK, in the order they ended) in batches of ``--max-batch`` / 2
to ``--max-batch`` spans with the SDK's OTLP/HTTP exporter, each batch sent again until acknowledged
(tests/helpers/layout.py).

1. **Floor: one collector** — ``toolpath collect --workers 2 --online online.toml`` straight on one PostgreSQL
   (fsync off, as in the layout), no balancer, nothing killed.
2. **The layout** (docs/deploy.md, as tests/collector/test_layout.py runs it): HAProxy with the documented
   configuration in front of three such collectors, whose store is HAProxy's PostgreSQL frontend over a primary
   with a synchronous streaming replica. A quarter of the way in one collector is killed (``kill -9``) and
   started again; halfway the primary dies and the replica is promoted.

Printed: spans/s acknowledged (first export to last acknowledgement), the longest time without an
acknowledgement (the failover's stall), exports the exporter gave up on and that were sent again, and the seconds
until the online scores were complete after the last acknowledgement. Everything shares this machine's cores:
on a 2-core machine three collectors, two PostgreSQL servers and HAProxy contend with the load itself, so the
layout's row says what failover and a restart cost, not what three machines would carry.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.layout import ONLINE, Load, LoggedCollector, layout, wait_scored
from tests.helpers.pgserver import PostgresServer
from toolpath.store.store import Store


def single(server: PostgresServer, folder: Path, agents: int, runs: int, batch: int) -> tuple[Load, float]:
    folder.mkdir()
    (folder / "online.toml").write_text(ONLINE)
    with server.running() as url:
        Store(url).close()
        (folder / "one").mkdir()
        collector = LoggedCollector(folder / "one", url, "--workers", "2", "--online", str(folder / "online.toml"))
        collector.start()
        try:
            load = Load(collector.url, agents, runs, batch)
            load.run()
            return load, _scored_after(Store(url, create=False), agents * runs)
        finally:
            collector.stop()


def layered(server: PostgresServer, folder: Path, agents: int, runs: int, batch: int) -> tuple[Load, float, list[str]]:
    folder.mkdir()
    with layout(server, folder) as running:
        load = Load(running.front, agents, runs, batch)
        fired: dict[str, threading.Thread] = {}
        lock = threading.Lock()

        def events(acknowledged: int) -> None:
            with lock:
                if acknowledged >= load.total_spans // 4 and "kill" not in fired:
                    fired["kill"] = threading.Thread(target=running.kill_and_restart, args=(running.collectors[1],))
                    fired["kill"].start()
                if acknowledged >= load.total_spans // 2 and "failover" not in fired:
                    fired["failover"] = threading.Thread(target=running.failover)
                    fired["failover"].start()

        load.on_acknowledged = events
        load.run()
        for thread in fired.values():
            thread.join(60)
        return load, _scored_after(running.store(), agents * runs), running.events


def _scored_after(store: Store, invocations: int) -> float:
    start = time.perf_counter()
    jobs = wait_scored(store, invocations, timeout=300)
    store.close()
    assert len(jobs) == invocations and set(jobs.values()) == {"done"}, "online scores incomplete"
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--runs", type=int, default=500, help="Agent runs per agent (4 spans each).")
    parser.add_argument("--max-batch", type=int, default=128, help="Most spans in one export.")
    args = parser.parse_args()
    server = PostgresServer.find()
    if server is None:
        raise SystemExit("PostgreSQL binaries not found (apt-get install -y postgresql)")
    spans = args.agents * args.runs * 4
    batches = f"batches of {args.max_batch // 2}-{args.max_batch}"
    print(f"{args.agents} agents × {args.runs} runs = {spans:,} spans, {batches}, OTLP/HTTP exporter", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        one, one_scored = single(server, Path(tmp) / "single", args.agents, args.runs, args.max_batch)
        print(
            f"  floor  one collector (--workers 2 --online), PostgreSQL:       {_figures(one, one_scored)}", flush=True
        )
        three, three_scored, events = layered(server, Path(tmp) / "layout", args.agents, args.runs, args.max_batch)
        assert len(set(three.acknowledged)) == spans
        print(
            f"  layout HAProxy + 3 collectors, kill -9 + restart, failover: {_figures(three, three_scored)}", flush=True
        )
        print(f"         events: {', '.join(events)}", flush=True)


def _figures(load: Load, scored: float) -> str:
    return (
        f"{load.total_spans / load.seconds:7,.0f} spans/s  ({load.seconds:.1f} s; longest without an ack "
        f"{load.longest_gap:.1f} s; {load.given_up} exports given up and sent again; scores complete {scored:.1f} s "
        "after)"
    )


if __name__ == "__main__":
    main()
