"""Online scoring under ingest: does ``toolpath collect --online … --workers N`` keep up with what it stores?

    python benchmarks/bench_online_throughput.py                         # 100,000 spans, SQLite and PostgreSQL
    python benchmarks/bench_online_throughput.py --spans 300000 --store sqlite --workers 2
    python benchmarks/bench_online_throughput.py --seconds 300 --store sqlite --no-alone   # RSS over 5 minutes

bench_collector's sender (its bodies, its process, its keep-alive connections) feeds ``toolpath collect`` with
online evaluation of six computation metrics (every invocation sampled), while this process reads the job
backlog from the store every half second. Printed per row: ingest spans/s (to the last 2xx), invocations scored
per second while the spans arrived and until the backlog was empty, and the backlog (pending jobs) over the run:
*flat* when it ends no higher than it stood a quarter of the way in (plus one batch per worker), else *growing*.
Every invocation must be scored exactly once. Printed first, with the same sender in the same run: the null
receiver (the sender's ceiling) and, per store, the collector with online scoring off (what scoring costs ingest).
The last lines compare each store's row with its target: 20,000 spans/s in on SQLite, 10,000 on PostgreSQL, the
backlog flat.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from bench_collector import (
    SPANS_PER_TRACE,
    Sent,
    ceiling,
    collect_row,
    collector,
    rss_over_the_run,
    send,
    template_body,
    write_bodies,
)

METRICS = ["tool_error_rate", "tool_call_count", "latency_in_seconds", "failure", "redundant_tool_calls",
           "tool_loop_detected"]  # fmt: skip
BATCH = 100
TARGETS = {"SQLite": 20_000, "PostgreSQL": 10_000}


class Backlog(threading.Thread):
    """Samples the store's jobs by status until stopped: ``(seconds, pending, claimed, done)``."""

    def __init__(self, store_url: str) -> None:
        super().__init__(daemon=True)
        from toolpath.store.store import Store

        self.store = Store(store_url)
        self.samples: list[tuple[float, int, int, int]] = []
        self.start_time = time.perf_counter()
        self.halt = threading.Event()

    def read(self) -> tuple[float, int, int, int]:
        from toolpath.store.job_queue import JobQueue

        counts = JobQueue(self.store).counts()
        sample = (time.perf_counter() - self.start_time, counts.get("pending", 0), counts.get("claimed", 0),
                  counts.get("done", 0))  # fmt: skip
        self.samples.append(sample)
        return sample

    def run(self) -> None:
        while not self.halt.wait(0.5):
            self.read()


def alone(label: str, store_url: str, template: Path, marker: bytes, args: argparse.Namespace, top: Sent) -> None:
    """The same collector with online scoring off, into a store of its own (bench_collector's row: every span
    counted in the store afterwards)."""
    collect_row(f"{label}, scoring off", store_url, template, marker, args, top, "--workers", str(args.workers))


def row(label: str, store_url: str, online: Path, template: Path, marker: bytes, args: argparse.Namespace,
        top: Sent) -> tuple[float, str]:  # fmt: skip
    with collector(store_url, "--online", str(online), "--workers", str(args.workers)) as (port, process):
        backlog = Backlog(store_url)
        backlog.start()
        sent = send(template, marker, port, process.pid, args)
        _, pending, claimed, done_at_last_ack = backlog.read()
        ingest_seconds = backlog.samples[-1][0]
        while pending or claimed:
            time.sleep(0.2)
            _, pending, claimed, done = backlog.read()
        drained = backlog.samples[-1][0]
        backlog.halt.set()
        backlog.join()
    invocations = sent.spans // SPANS_PER_TRACE
    done = backlog.samples[-1][3]
    during = [s for s in backlog.samples if s[0] <= ingest_seconds]
    quarter = during[len(during) // 4][1] if during else 0
    peak = max((s[1] for s in during), default=0)
    end = during[-1][1] if during else 0
    shape = "flat" if end <= quarter + BATCH * args.workers * 2 else "growing"
    lost = "" if done == invocations else f"   SCORED {done:,} OF {invocations:,}"
    print(
        f"{label:<30}{sent.rate:>8,.0f} spans/s in   {sent.rate / top.rate:5.1%} of the ceiling   "
        f"{done_at_last_ack / ingest_seconds:>7,.0f} inv/s scored while ingesting, "
        f"{done / drained:>7,.0f} inv/s until drained ({drained - ingest_seconds:.1f} s after the last 2xx)"
        f"   backlog {shape}: {quarter:,} pending at a quarter, {end:,} at the end, peak {peak:,}"
        f"   ({invocations:,} invocations){lost}",
        flush=True,
    )
    print(f"{'':30}{sent.watch.describe()}", flush=True)
    if args.seconds:
        print(f"{'':30}{rss_over_the_run(sent)}", flush=True)
    return sent.rate, shape if not lost else "lost"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=100_000, help="spans per row (rounded up to whole bodies)")
    parser.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--workers", type=int, default=2, help="collector worker processes (each ingests and scores)")
    parser.add_argument("--connections", type=int, default=4, help="the sender's keep-alive connections")
    parser.add_argument("--no-alone", action="store_true", help="skip the rows with online scoring off")
    parser.add_argument("--seconds", type=float, default=0, help="send for this long instead (the RSS-flat check)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        body, marker = template_body()
        template = folder / "body.pb"
        write_bodies(template, [body])
        online = folder / "online.toml"
        online.write_text(f"metrics = {METRICS!r}\nbatch_size = {BATCH}\npoll_seconds = 0.1\nmax_backlog = 1000000\n")
        print(f"toolpath collect --online ({', '.join(METRICS)}) --workers {args.workers}; {args.spans:,} spans a row")
        top = ceiling(template, marker, args)
        print(f"{'null receiver (ceiling)':<30}{top.rate:>8,.0f} spans/s", flush=True)
        reached: dict[str, tuple[float, str]] = {}
        if args.store in ("sqlite", "both"):
            if not args.no_alone:
                alone("SQLite", f"sqlite:///{folder / 'alone.db'}", template, marker, args, top)
            reached["SQLite"] = row("SQLite", f"sqlite:///{folder / 'online.db'}", online, template, marker, args, top)
        if args.store in ("postgresql", "both"):
            from tests.helpers.pgserver import PostgresServer

            server = PostgresServer.find()
            if server is None:
                print("PostgreSQL not installed here (apt-get install -y postgresql)")
            else:
                if not args.no_alone:
                    with server.running(durable=True) as url:
                        alone("PostgreSQL", url, template, marker, args, top)
                with server.running(durable=True) as url:
                    reached["PostgreSQL"] = row("PostgreSQL", url, online, template, marker, args, top)
        for label, (rate, shape) in reached.items():
            verdict = "reached" if rate >= TARGETS[label] and shape == "flat" else "NOT reached"
            print(f"target {label}: >= {TARGETS[label]:,} spans/s in, backlog flat: {verdict} ({rate:,.0f}, {shape})")


if __name__ == "__main__":
    main()
