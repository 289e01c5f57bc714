"""Ingest rate of ``toolpath collect``, measured against the ceiling of the sender that feeds it.

    python benchmarks/bench_collector.py                      # CI-size: 50,000 spans per row
    python benchmarks/bench_collector.py --spans 200000 --workers 1,2 --store both
    python benchmarks/bench_collector.py --seconds 300 --store sqlite   # the long run: RSS printed as it goes

The OTLP/protobuf bodies are encoded once, before anything is timed: 51 traces of 10 spans each (an
``invoke_agent`` span and 9 ``execute_tool`` spans with JSON arguments and results, as ``@toolpath.tool`` records
them), 510 spans a body, 5 sessions of 10 or 11 invocations. The sender (its own process, 4 keep-alive
connections by default) only swaps a counter into the trace ids and session ids of a body before posting it, so
every body is new spans of new sessions; it posts the next body as
soon as the last one is acknowledged, and posts again a body answered 503 (busy). In the same run it feeds:

1. a null receiver that reads each body and answers 200 (the ceiling: no collector can be timed faster with
   this sender; when a collector gets close to it, the sender is the bottleneck and the output says so);
2. ``toolpath collect`` into SQLite, then into PostgreSQL (a throw-away local server, default durability:
   fsync on), once per ``--workers`` value;
3. end to end: the real OTel SDK exporter (BatchSpanProcessor, 512-span batches) into ``toolpath collect``
   on SQLite, as it is and with ``--spool``, timed until every invocation is queryable.

A 2xx means the spans and their invocations are committed, so the time to the last 2xx is the time to store
them; the store is then counted (spans, invocations, tool calls) and must hold every one. Printed per row:
spans/s, the ratio to the ceiling, the collector's CPU (its process and its workers, in cores) and the machine's
busy share per core (from /proc/stat: other processes count too), and the collector's peak RSS (all its
processes together).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shlex
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRACES_PER_BODY = 51
SPANS_PER_TRACE = 10
SPANS_PER_BODY = TRACES_PER_BODY * SPANS_PER_TRACE
FINISH_BODY_SPANS = 512
"""The OTel SDK's ``BatchSpanProcessor`` exports batches of up to 512 spans."""
CYCLE_BODIES = 10
WINDOW = 100_000
"""Spans per window of the rates printed as a run goes."""

FAST_SENDER = r"""
import http.client, json, struct, sys, threading, time
bodies_path, port, marker_hex, limit, seconds, connections, window, time_hex = sys.argv[1:9]
data, frames = open(bodies_path, "rb").read(), []
while data:
    (size,), data = struct.unpack(">I", data[:4]), data[4:]
    frames.append(data[:size])
    data = data[size:]
marker = bytes.fromhex(marker_hex)
time_marker = bytes.fromhex(time_hex)  # the high half of every timestamp of a cycle (empty: leave them)
time_base = struct.unpack("<I", time_marker)[0] if time_marker else 0
session_marker = marker.hex().encode()
cycle = len(frames)  # a cycle's bodies hold whole traces between them: each cycle gets its own ids
spans_in = [frame.count(marker) for frame in frames]
limit, seconds, connections, window = int(limit), float(seconds), int(connections), int(window)
handed, acked, spans, retries, failures, partial = [0], [0], [0], [0], [], [0]
stop_at = [limit or None]
lock = threading.Lock()
start = time.perf_counter()
deadline = start + seconds if seconds else None

def take():
    with lock:
        n = handed[0]
        if stop_at[0] is None and deadline and time.perf_counter() >= deadline:
            stop_at[0] = -(-n // cycle) * cycle  # time is up: finish the cycle begun, so every trace is whole
        if stop_at[0] is not None and n >= stop_at[0]:
            return None
        handed[0] += 1
        return n

def worker():
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
    headers = {"Content-Type": "application/x-protobuf"}
    while (n := take()) is not None:
        k, piece = divmod(n, cycle)
        ids = (k + 1) * 0x9E3779B97F4A7C15 % 2**64  # distinct per cycle, and scattered as random trace ids are
        body = frames[piece].replace(marker, struct.pack(">Q", ids)).replace(session_marker, b"%016x" % ids)
        if time_marker:  # each cycle 2**32 ns (4.3 s) after the last: times go forward, as real spans' do
            body = body.replace(time_marker, struct.pack("<I", time_base + k))
        while True:
            try:
                conn.request("POST", "/v1/traces", body, headers)
                reply = conn.getresponse()
                data = reply.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
                with lock:
                    retries[0] += 1
                continue
            if reply.status == 503:
                with lock:
                    retries[0] += 1
                time.sleep(0.01)
                continue
            if reply.status != 200:
                failures.append(f"{reply.status}: {data[:200]!r}")
                return
            with lock:
                acked[0] += 1
                partial[0] += bool(data)
                before, spans[0] = spans[0], spans[0] + spans_in[piece]
                if window and before // window != spans[0] // window:
                    print(f"W {spans[0]} {time.perf_counter() - start:.6f}", flush=True)
            break

threads = [threading.Thread(target=worker) for _ in range(connections)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print(json.dumps({"bodies": acked[0], "spans": spans[0], "seconds": time.perf_counter() - start,
                  "retries": retries[0], "failures": failures[:3], "partial": partial[0]}), flush=True)
"""

NULL_RECEIVER = r"""
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

OTEL_SENDER = """
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
start = time.perf_counter()
print(json.dumps({"started": time.monotonic()}), flush=True)  # the system-wide clock: the harness times from here
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
print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
"""


# --- the bodies ---------------------------------------------------------------------------------------------


def _attrs(**values: str) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    out = []
    for key, value in values.items():
        kv = KeyValue(key=key.replace("__", "."))
        kv.value.string_value = value
        out.append(kv)
    return out


_ARGS = json.dumps({"device_id": "thermostat-living_room", "updates": {"brightness": 30, "color": {"hue": 30}}})
_RESULT = json.dumps({"device_id": "thermostat-living_room", "ok": True, "temperature": 21.5})
_OUTPUT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}])


def _add_span(scope_spans: Any, marker: bytes, t: int, i: int, start: int, sessions: int) -> None:
    """Span ``i`` of trace ``t`` (0: the ``invoke_agent`` root; 1-9: its tools) into ``scope_spans``."""
    trace_id = marker + struct.pack(">Q", t + 1)
    root_id = struct.pack(">Q", (t + 1) << 8)
    t0 = start + t * 5_000_000
    if i == 0:
        root = scope_spans.spans.add(
            trace_id=trace_id, span_id=root_id, name="invoke_agent bench", kind=1,
            start_time_unix_nano=t0, end_time_unix_nano=t0 + 9_000_000,
        )  # fmt: skip
        messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"request {t}"}]}])
        root.attributes.extend(
            _attrs(
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name="bench",
                gen_ai__conversation__id=f"s-{marker.hex()}-{t % sessions}",  # new sessions in each body or cycle
                gen_ai__input__messages=messages,
                gen_ai__output__messages=_OUTPUT,
            )
        )
        return
    tool = scope_spans.spans.add(
        trace_id=trace_id, span_id=struct.pack(">Q", ((t + 1) << 8) + i), parent_span_id=root_id,
        name=f"execute_tool tool_{i - 1}", kind=1,
        start_time_unix_nano=t0 + i * 500_000, end_time_unix_nano=t0 + i * 500_000 + 400_000,
    )  # fmt: skip
    tool.attributes.extend(
        _attrs(
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name=f"tool_{i - 1}",
            gen_ai__tool__type="function",
            gen_ai__tool__call__id=f"call_{t}_{i - 1}",
            gen_ai__tool__call__arguments=_ARGS,
            gen_ai__tool__call__result=_RESULT,
        )
    )


def _encode(marker: bytes, spans: list[tuple[int, int]], start: int, sessions: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(_attrs(service__name="bench-agent"))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "bench"
    for t, i in spans:
        _add_span(scope_spans, marker, t, i, start, sessions)
    body = request.SerializeToString()
    assert body.count(marker) == len(spans), "the marker must occur only in the trace ids"
    return body


def template_body() -> tuple[bytes, bytes]:
    """One OTLP/protobuf body of 51 whole traces (root first) and the 8-byte marker that starts each of its trace
    ids (the sender swaps a counter in)."""
    marker = random.Random(7).randbytes(8)
    spans = [(t, i) for t in range(TRACES_PER_BODY) for i in range(SPANS_PER_TRACE)]
    body = _encode(marker, spans, time.time_ns(), 5)  # 5 sessions a body, new in each
    assert body.count(marker.hex().encode()) == TRACES_PER_BODY, "and its hex only in the session ids"
    return body, marker


def finish_order_bodies(concurrent_runs: int = 32, seed: int = 7) -> tuple[list[bytes], bytes, bytes]:
    """A cycle of :data:`CYCLE_BODIES` bodies of 512 spans, as the OTel SDK's ``BatchSpanProcessor`` exports them
    from an agent service running ``concurrent_runs`` agent runs at once: spans in the order they end (a run's
    tools, then its ``invoke_agent`` root), so a run's spans straddle bodies and most bodies complete runs begun
    in earlier ones. The cycle's runs all end within it (the sender swaps a counter into each cycle's ids), and
    its bodies carry 50 sessions of about 10 runs, new in each cycle."""
    marker = random.Random(seed).randbytes(8)
    rng = random.Random(seed)
    traces = CYCLE_BODIES * FINISH_BODY_SPANS // SPANS_PER_TRACE
    waiting = list(range(traces))
    running: list[list[tuple[int, int]]] = []
    order: list[tuple[int, int]] = []
    while waiting or running:
        while waiting and len(running) < concurrent_runs:
            t = waiting.pop(0)
            running.append([(t, i) for i in range(SPANS_PER_TRACE)])  # popped from the end: tools, then the root
        run = running[rng.randrange(len(running))]
        order.append(run.pop())
        if not run:
            running.remove(run)
    high = time.time_ns() >> 32
    while True:  # every timestamp is high << 32 plus less than 2**32 ns: the sender moves each cycle's forward
        time_marker = struct.pack("<I", high)
        chunks = [order[i : i + FINISH_BODY_SPANS] for i in range(0, len(order), FINISH_BODY_SPANS)]
        bodies = [_encode(marker, chunk, high << 32, 50) for chunk in chunks]
        if all(body.count(time_marker) == 2 * len(chunk) for body, chunk in zip(bodies, chunks, strict=True)):
            return bodies, marker, time_marker
        high += 1  # the pattern also occurs elsewhere in a body: another one


def write_bodies(path: Path, bodies: list[bytes]) -> Path:
    """``bodies`` into one file, each after its length (the sender's format)."""
    path.write_bytes(b"".join(struct.pack(">I", len(b)) + b for b in bodies))
    return path


# --- the collector's process tree: CPU and memory from /proc ------------------------------------------------


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError), open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (children's are their own entries)
    return total / os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(pid: int) -> float:
    """The CPU seconds of a database server: its processes' own, and those of its processes that have exited (the
    postmaster's reaped children: PostgreSQL's autovacuum workers come and go, and their work counts)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return cpu_seconds(tree(pid)) + (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime


def rss_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        with contextlib.suppress(OSError), open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def core_times() -> list[tuple[int, int]]:
    """(busy, total) jiffies per core."""
    out = []
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]
                out.append((sum(v[:8]) - idle, sum(v[:8])))
    return out


@dataclass
class Watch:
    """Samples a process tree's RSS and CPU while a run goes on."""

    pid: int
    every: float = 0.5
    report_every: float | None = None
    peak_mb: float = 0.0
    timeline: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Watch:
        self.cores0, self.cpu0, self.t0 = core_times(), cpu_seconds(tree(self.pid)), time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        last_report = time.perf_counter()
        while not self._stop.wait(self.every):
            mb = rss_mb(tree(self.pid))
            self.peak_mb = max(self.peak_mb, mb)
            now = time.perf_counter()
            self.timeline.append((now - self.t0, mb))
            if self.report_every and now - last_report >= self.report_every:
                last_report = now
                print(f"    t={now - self.t0:6.0f} s  collector RSS {mb:6.0f} MB", flush=True)

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.t0
        self.cpu = cpu_seconds(tree(self.pid)) - self.cpu0
        cores1 = core_times()
        self.core_busy = [(b1 - b0) / max(t1 - t0, 1) for (b0, t0), (b1, t1) in zip(self.cores0, cores1, strict=True)]
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, rss_mb(tree(self.pid)))

    def describe(self) -> str:
        busy = " ".join(f"{b:.0%}" for b in self.core_busy)
        return f"collector {self.cpu / self.elapsed:.2f} cores, machine per core {busy}, peak RSS {self.peak_mb:.0f} MB"


# --- runs ---------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Window:
    """One window of a run: its spans, wall seconds, the collector's CPU seconds and its RSS at its end."""

    spans: int
    seconds: float
    cpu: float
    rss_mb: float
    server_cpu: float | None = None
    """The database server's CPU seconds (PostgreSQL: the postmaster and its processes)."""

    def describe(self, first: int) -> str:
        server = "" if self.server_cpu is None else f"   server CPU {self.server_cpu / self.spans * 1e6:5.1f} µs/span"
        return (f"spans {first:>9,}-{first + self.spans:<9,} {self.spans / self.seconds:>8,.0f} spans/s   collector "
                f"CPU {self.cpu / self.spans * 1e6:5.1f} µs/span ({self.cpu / self.seconds:.2f} cores)   "
                f"RSS {self.rss_mb:4.0f} MB{server}")  # fmt: skip


@dataclass
class Sent:
    spans: int
    seconds: float
    retries: int
    watch: Watch
    windows: list[Window] = field(default_factory=list)
    lost: bool = False

    @property
    def rate(self) -> float:
        return self.spans / self.seconds

    @property
    def cpu_per_span(self) -> float:
        """The collector's CPU microseconds per span (noise on a shared machine moves this less than spans/s)."""
        return self.watch.cpu / self.spans * 1e6


def bodies_per_run(args: argparse.Namespace, bodies: Path) -> int:
    """``--spans`` as whole bodies, and whole cycles of them (every trace complete)."""
    cycle = len(read_frames(bodies))
    per_cycle = sum(frame.count(bytes.fromhex(args.marker)) for frame in read_frames(bodies))
    return -(-args.spans // per_cycle) * cycle


def read_frames(path: Path) -> list[bytes]:
    data, frames = path.read_bytes(), []
    while data:
        (size,), data = struct.unpack(">I", data[:4]), data[4:]
        frames.append(data[:size])
        data = data[size:]
    return frames


def send(template: Path, marker: bytes, port: int, pid: int, args: argparse.Namespace, seconds: float = 0,
         windows: bool = False, server: int | None = None,
         on_window: Callable[[], object] | None = None) -> Sent:  # fmt: skip
    """Post ``template``'s bodies (a cycle of them, :func:`write_bodies`) to ``port`` and time it; ``windows``:
    print the rates of each window of :data:`WINDOW` spans as they end (``on_window`` called at the start and at
    the end of each)."""
    seconds = seconds or args.seconds
    args.marker = marker.hex()
    bodies = 0 if seconds else bodies_per_run(args, template)
    command = [sys.executable, "-c", FAST_SENDER, str(template), str(port), marker.hex(), str(bodies),
               str(seconds), str(args.connections), str(WINDOW if windows else 0),
               getattr(args, "time_marker", "")]  # fmt: skip
    found: list[Window] = []
    with Watch(pid, report_every=None) as watch:
        if on_window is not None:
            on_window()
        sender = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert sender.stdout is not None
        last_spans, last_t, last_cpu = 0, 0.0, watch.cpu0
        last_server = server_cpu_seconds(server) if server else 0.0
        result: dict[str, Any] = {}
        for line in sender.stdout:
            if line.startswith("W "):
                cpu = cpu_seconds(tree(pid))
                _, spans, at = line.split()
                server_cpu = server_cpu_seconds(server) if server else None
                window = Window(int(spans) - last_spans, float(at) - last_t, cpu - last_cpu, rss_mb(tree(pid)),
                                None if server_cpu is None else server_cpu - last_server)  # fmt: skip
                last_server = server_cpu or 0.0
                found.append(window)
                print(f"{'':4}{window.describe(last_spans)}", flush=True)
                if on_window is not None:
                    on_window()
                last_spans, last_t, last_cpu = int(spans), float(at), cpu
            else:
                result = json.loads(line)
        if sender.wait() != 0:
            raise RuntimeError("the sender failed")
    if result["failures"] or result["partial"]:
        raise RuntimeError(f"the collector refused spans: {result}")
    return Sent(result["spans"], result["seconds"], result["retries"], watch, found)


def wait_healthy(port: int, process: subprocess.Popen) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError("the collector exited at start")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the collector did not answer")


@contextlib.contextmanager
def collector(store_url: str, *extra: str) -> Iterator[tuple[int, subprocess.Popen]]:
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below, after the collector stops
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--store", store_url, "--http-port", str(port),
         "--grpc-port", "0", *extra],
        stdout=subprocess.DEVNULL, stderr=log,  # a file, not a pipe nobody reads
    )  # fmt: skip
    try:
        wait_healthy(port, process)
        yield port, process
    except BaseException:
        log.seek(0)
        print(log.read().decode(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        process.terminate()
        process.wait(timeout=120)
        log.close()


def ceiling(template: Path, marker: bytes, args: argparse.Namespace) -> Sent:
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", NULL_RECEIVER, str(port)])
    try:
        time.sleep(1.0)
        return send(template, marker, port, receiver.pid, args, min(args.seconds, 15.0))  # a long run's: 15 s
    finally:
        receiver.terminate()
        receiver.wait(timeout=30)


def counted(store_url: str) -> dict[str, int]:
    from toolpath.store.store import Store

    store = Store(store_url)
    try:
        return store.counts()
    finally:
        store.close()


def postmaster(store_url: str) -> int | None:
    """The process id of the local PostgreSQL server a URL names (by its port), to count its CPU; else ``None``."""
    if not store_url.startswith("postgresql"):
        return None
    from sqlalchemy.engine import make_url

    port = str(make_url(store_url).port)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as f:
                words = f.read().decode(errors="replace").split("\0")
                if Path(words[0]).name == "postgres" and "-p" in words and words[words.index("-p") + 1] == port:
                    return int(entry)
    return None


def collect_row(label: str, store_url: str, template: Path, marker: bytes, args: argparse.Namespace,
                top: Sent, *extra: str, on_window: Callable[[], object] | None = None) -> Sent:  # fmt: skip
    print(f"{label}:", flush=True)
    with collector(store_url, *extra) as (port, process):
        sent = send(template, marker, port, process.pid, args, windows=True, server=postmaster(store_url),
                    on_window=on_window)  # fmt: skip
    counts = counted(store_url)
    traces = sent.spans // SPANS_PER_TRACE
    lost = ""
    if (counts["spans"], counts["invocations"], counts["tool_calls"]) != (sent.spans, traces, traces * 9):
        lost = f"   LOST: stored {counts} of {sent.spans} spans acknowledged"
    ratio = sent.rate / top.rate
    print(
        f"{label:<26}{sent.rate:>9,.0f} spans/s  {ratio:5.1%} of the ceiling   {sent.cpu_per_span:5.1f} µs CPU/span  "
        f"{sent.watch.describe()}   ({sent.spans:,} spans, {sent.retries} busy retries){lost}",
        flush=True,
    )
    if ratio > 0.5:
        print(f"{'':26}the sender is near its ceiling: the collector may be faster than this", flush=True)
    if args.seconds:
        print(f"{'':26}{rss_over_the_run(sent)}")
    sent.lost = bool(lost)
    return sent


def verdict(label: str, sent: Sent, floor: int) -> str:
    """A row's target: ``floor`` spans/s over the whole run, and its last full window within 20% of its first."""
    full = [w for w in sent.windows if w.spans >= WINDOW * 0.9]
    first, last = (full[0].spans / full[0].seconds, full[-1].spans / full[-1].seconds) if full else (0.0, 0.0)
    flat = len(full) >= 2 and last >= 0.8 * first
    shape = f"first window {first:,.0f}, last {last:,.0f} spans/s ({len(full)} windows)" if full else "no window"
    cpu = ""
    if len(full) >= 2:
        cpu = f"; CPU {full[0].cpu / full[0].spans * 1e6:.1f} -> {full[-1].cpu / full[-1].spans * 1e6:.1f} µs/span"
    ok = sent.rate >= floor and flat and not sent.lost
    return (f"target {label}: >= {floor:,} spans/s, last window within 20% of the first, nothing lost: "
            f"{'reached' if ok else 'NOT reached'} ({sent.rate:,.0f} spans/s; {shape}{cpu})")  # fmt: skip


def rss_over_the_run(sent: Sent) -> str:
    """The collector's RSS after the first tenth of a timed run and in its last tenth (flat: about the same)."""
    samples = [mb for _, mb in sent.watch.timeline]
    tenth = max(len(samples) // 10, 1)
    first, last = max(samples[tenth : 2 * tenth] or samples), max(samples[-tenth:])
    return f"RSS over the run: {first:.0f} MB after the first tenth, {last:.0f} MB in the last tenth"


def exporter_ceiling(spans: int) -> float:
    """The OTel SDK exporter's own rate into a null receiver: spans made, batched and posted per second."""
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", NULL_RECEIVER, str(port)])
    try:
        time.sleep(1.0)
        out = subprocess.run([sys.executable, "-c", OTEL_SENDER, f"http://127.0.0.1:{port}/v1/traces",
                              str(spans // SPANS_PER_TRACE)], check=True, capture_output=True, text=True)  # fmt: skip
        return spans / json.loads(out.stdout.splitlines()[-1])["seconds"]
    finally:
        receiver.terminate()
        receiver.wait(timeout=30)


def end_to_end(store_url: str, spans: int, *extra: str) -> tuple[float, dict[str, int]]:
    """The real OTel exporter into ``toolpath collect``: spans/s until every invocation is queryable.

    Timed from the sender's first span, as its ceiling is (the interpreter's start and imports left out of both)."""
    from toolpath.store.store import Store

    traces = spans // SPANS_PER_TRACE
    with collector(store_url, *extra) as (port, _):
        store = Store(store_url)
        sender = subprocess.Popen(
            [sys.executable, "-c", OTEL_SENDER, f"http://127.0.0.1:{port}/v1/traces", str(traces)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert sender.stdout is not None
        first = sender.stdout.readline()
        if not first:
            raise RuntimeError(f"the sender failed (exit {sender.wait()})")
        start = json.loads(first)["started"]
        stalled_since, last = time.monotonic(), -1
        while (done := store.counts()["invocations"]) < traces:
            time.sleep(0.05)
            if sender.poll() not in (None, 0):
                raise RuntimeError("the sender failed")
            if done != last:
                stalled_since, last = time.monotonic(), done
            elif time.monotonic() - stalled_since > 60:
                raise RuntimeError(f"no progress for 60 s at {done:,} of {traces:,} invocations (spans dropped?)")
        elapsed = time.monotonic() - start
        sender.communicate(timeout=60)
        counts = store.counts()
        store.close()
        return spans / elapsed, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=50_000, help="spans per row (rounded up to whole bodies)")
    parser.add_argument("--seconds", type=float, default=0, help="send for this long instead (the RSS-flat check)")
    parser.add_argument(
        "--store",
        choices=["sqlite", "postgresql", "both", "none"],
        default="both",
        help="the stores of the ingest rows (none: only the exporter's ceiling and the end-to-end rows)",
    )
    parser.add_argument("--workers", default="", help="comma-separated --workers values to time (default: as is)")
    parser.add_argument("--connections", type=int, default=4, help="the sender's keep-alive connections")
    parser.add_argument("--no-redact", action="store_true", help="also time SQLite with redaction off")
    parser.add_argument("--otel-spans", type=int, default=50_000, help="spans of the end-to-end row (0: skip it)")
    parser.add_argument("--mode", choices=["finish", "whole"], default="finish",
                        help="finish: 512-span bodies in the order spans end, as exporters send (default); whole: "
                        "51 whole traces a body, root first")  # fmt: skip
    parser.add_argument("--concurrent-runs", type=int, default=32, help="finish mode: agent runs going on at once")
    parser.add_argument("--collect-args", default="", help="more `toolpath collect` flags for every row")
    parser.add_argument("--pg-statements", action="store_true",
                        help="PostgreSQL rows: load pg_stat_statements and print the statements that took the server's "
                        "time in the first and the last window (benchmarks/pg_statements.py)")  # fmt: skip
    args = parser.parse_args()
    more = shlex.split(args.collect_args)
    worker_runs = [["--workers", w.strip(), *more] for w in args.workers.split(",") if w.strip()] or [more]

    targets: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        if args.mode == "whole":
            body, marker = template_body()
            template = write_bodies(Path(folder) / "bodies.pb", [body])
            shape = f"bodies of {SPANS_PER_BODY} spans, whole traces, root first, {len(body):,} bytes"
        else:
            bodies, marker, time_marker = finish_order_bodies(args.concurrent_runs)
            args.time_marker = time_marker.hex()
            template = write_bodies(Path(folder) / "bodies.pb", bodies)
            shape = (f"bodies of {FINISH_BODY_SPANS} spans in finish order ({args.concurrent_runs} runs at once: "
                     f"traces straddle bodies), {sum(map(len, bodies)) // len(bodies):,} bytes")  # fmt: skip
        if args.store != "none":
            print(f"{shape}; sender: {args.connections} connections; rates per window of {WINDOW:,} spans", flush=True)
            top = ceiling(template, marker, args)
            label = "null receiver (ceiling)"
            print(f"{label:<26}{top.rate:>9,.0f} spans/s             {top.watch.describe()}", flush=True)
        n = 0
        if args.store in ("sqlite", "both"):
            for extra in worker_runs:
                n += 1
                label = "SQLite " + " ".join(extra)
                url = f"sqlite:///{Path(folder) / f'bench{n}.db'}"
                targets.append(verdict(label, collect_row(label, url, template, marker, args, top, *extra), 20_000))
                if args.no_redact:
                    n += 1
                    url = f"sqlite:///{Path(folder) / f'bench{n}.db'}"
                    collect_row(label + " --no-redact", url, template, marker, args, top, *extra, "--no-redact")
        if args.store in ("postgresql", "both"):
            from tests.helpers.pgserver import PostgresServer

            server = PostgresServer.find()
            if server is None:
                print("PostgreSQL not installed here (apt-get install -y postgresql)")
            else:
                for extra in worker_runs:
                    label = "PostgreSQL " + " ".join(extra)
                    with server.controlled(durable=True) as cluster:
                        url, snapshots, hook = cluster.url, [], None
                        if args.pg_statements:
                            import pg_statements

                            pg_statements.enable(url, cluster.stop, cluster.start)
                            hook = lambda: snapshots.append(pg_statements.snapshot(url))  # noqa: E731, B023
                        sent = collect_row(label, url, template, marker, args, top, *extra, on_window=hook)
                        if args.pg_statements:
                            print("\n".join(pg_statements.report(snapshots, [w.spans for w in sent.windows])))
                    targets.append(verdict(label, sent, 15_000))
        if args.otel_spans and not args.seconds:
            own = exporter_ceiling(args.otel_spans)
            label = "OTel SDK exporter, null receiver (its ceiling)"
            print(f"{label:<56}{own:>9,.0f} spans/s", flush=True)
            traces = args.otel_spans // SPANS_PER_TRACE
            for name, spooled in (("", ()), (" --spool", ("--spool", str(Path(folder) / "spool")))):
                store_url = f"sqlite:///{Path(folder) / f'otel{len(spooled)}.db'}"
                rate, counts = end_to_end(store_url, args.otel_spans, *worker_runs[-1], *spooled)
                whole = (counts["spans"], counts["invocations"], counts["tool_calls"]) == (
                    traces * SPANS_PER_TRACE, traces, traces * 9)  # fmt: skip
                label = f"OTel SDK exporter -> toolpath collect{name}, SQLite"
                print(f"{label:<56}{rate:>9,.0f} spans/s end to end, until queryable ({counts['spans']:,} spans, "
                      f"{counts['tool_calls']:,} tool calls stored{'' if whole else ': SPANS DROPPED'})")  # fmt: skip
                targets.append(f"target end to end{name}: the exporter's own ceiling ({own:,.0f} spans/s), nothing "
                               f"dropped: {'reached' if whole and rate >= 0.8 * own else 'NOT reached'} ({rate:,.0f} "
                               f"spans/s, {rate / own:.0%} of it)")  # fmt: skip
    for line in targets:
        print(line)


if __name__ == "__main__":
    main()
