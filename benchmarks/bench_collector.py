"""End-to-end ingest rate of ``toolpath collect``: spans/s from the sender's first span until every invocation
is queryable in the store.

    python benchmarks/bench_collector.py [--spans 100000] [--store sqlite|postgresql|both]

A sender process makes traces of 10 spans (an ``invoke_agent`` span and 9 ``execute_tool`` spans with JSON
arguments and results, as ``@toolpath.tool`` records them) and ships them with the real OTLP/HTTP protobuf
exporter (BatchSpanProcessor, 512-span batches) to a collector process on 127.0.0.1. Goal:
>= 10,000 spans/s into SQLite on these 2-core machines.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SENDER = """
import json, sys, time
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

endpoint, traces = sys.argv[1], int(sys.argv[2])
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(
    OTLPSpanExporter(endpoint=endpoint), max_queue_size=traces * 10 + 1, max_export_batch_size=512,
    schedule_delay_millis=50,
))
tracer = provider.get_tracer("bench")
args = json.dumps({"device_id": "thermostat-living_room", "updates": {"brightness": 30, "color": {"hue": 30}}})
result = json.dumps({"device_id": "thermostat-living_room", "ok": True, "temperature": 21.5})
for t in range(traces):
    with tracer.start_as_current_span("invoke_agent bench", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench", "gen_ai.conversation.id": f"s-{t % 100}",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"request {t}"}]}]),
    }) as agent:
        for i in range(9):
            with tracer.start_as_current_span(f"execute_tool tool_{i}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"tool_{i}",
                "gen_ai.tool.type": "function", "gen_ai.tool.call.id": f"call_{t}_{i}",
                "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": result,
            }):
                pass
        agent.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}]))
provider.force_flush(timeout_millis=900_000)  # shutdown alone gives up after 30 s and drops the rest
provider.shutdown()
"""


NULL_RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def sender_ceiling(spans: int) -> float:
    """Spans/s the sender reaches against a receiver that stores nothing: no collector can be timed faster."""
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", NULL_RECEIVER, str(port)])
    try:
        time.sleep(1.0)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", SENDER, f"http://127.0.0.1:{port}/v1/traces", str(spans // 10)], check=True
        )
        return spans / (time.perf_counter() - start)
    finally:
        receiver.terminate()
        receiver.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def measure(store_url: str, spans: int, *extra: str) -> tuple[float, int]:
    from toolpath.store.store import Store

    traces = spans // 10
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below, after the collector stops
    collector = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolpath.cli",
            "collect",
            "--store",
            store_url,
            "--http-port",
            str(port),
            "--grpc-port",
            "0",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,  # a file, not a pipe: a pipe nobody reads would block the collector once full
    )
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        store = Store(store_url)
        start = time.perf_counter()
        sender = subprocess.Popen([sys.executable, "-c", SENDER, f"http://127.0.0.1:{port}/v1/traces", str(traces)])
        stalled_since, last = time.monotonic(), -1
        while (done := store.counts()["invocations"]) < traces:
            time.sleep(0.05)
            if sender.poll() not in (None, 0):
                raise RuntimeError("the sender failed")
            if done != last:
                stalled_since, last = time.monotonic(), done
            elif time.monotonic() - stalled_since > 60:
                raise RuntimeError(f"no progress for 60 s at {done:,} of {traces:,} invocations (spans dropped?)")
        elapsed = time.perf_counter() - start
        sender.wait(timeout=60)
        return spans / elapsed, store.counts()["tool_calls"]
    except RuntimeError:
        log.seek(0)
        print(log.read().decode(errors="replace")[-6000:], file=sys.stderr)
        raise
    finally:
        collector.terminate()
        collector.wait(timeout=60)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--no-redact", action="store_true", help="also measure SQLite with redaction off")
    args = parser.parse_args()
    print(f"sender alone  {sender_ceiling(args.spans):>8,.0f} spans/s to a receiver that stores nothing (the ceiling)")
    with tempfile.TemporaryDirectory() as folder:
        if args.store in ("sqlite", "both"):
            rate, calls = measure(f"sqlite:///{Path(folder) / 'bench.db'}", args.spans)
            print(f"SQLite        {rate:>8,.0f} spans/s end to end ({calls:,} tool calls stored)   goal >= 10,000")
            if args.no_redact:
                rate, calls = measure(f"sqlite:///{Path(folder) / 'plain.db'}", args.spans, "--no-redact")
                print(f"  --no-redact {rate:>8,.0f} spans/s end to end ({calls:,} tool calls stored)")
    if args.store in ("postgresql", "both"):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.pgserver import PostgresServer

        server = PostgresServer.find()
        if server is None:
            print("PostgreSQL    not installed here (apt-get install -y postgresql)")
            return
        with server.running() as url:
            rate, calls = measure(url, args.spans)
            print(f"PostgreSQL    {rate:>8,.0f} spans/s end to end ({calls:,} tool calls stored)")


if __name__ == "__main__":
    main()
