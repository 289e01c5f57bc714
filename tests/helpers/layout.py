"""The multi-node layout of docs/deploy.md on loopback: HAProxy (the documented configuration) in front of three
``toolpath collect --workers 2 --online`` processes on a PostgreSQL primary with a synchronous streaming replica,
behind HAProxy's database frontend; agents exporting through it with the OpenTelemetry SDK's OTLP/HTTP exporter.
Used by ``tests/collector/test_layout.py`` and ``benchmarks/bench_layout.py``."""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from tests.helpers.collector import TOKEN, Collector, free_port, free_ports
from tests.helpers.haproxy import documented_config, localized, running_haproxy
from tests.helpers.pgreplica import ReplicatedCluster, replicated, url_at
from tests.helpers.pgserver import PostgresServer
from toolpath.store import schema as t
from toolpath.store.store import Store

METRICS = ["tool_call_count", "tool_error_rate"]
ONLINE = 'metrics = ["tool_call_count", "tool_error_rate"]\nworkers = 2\npoll_seconds = 0.05\nlease_seconds = 2\n'
TOOLS = 3
"""Tool calls in each agent run (a run is 1 + TOOLS spans)."""


def agent_runs(agent: int, runs: int) -> list[ReadableSpan]:
    """The spans of ``runs`` GenAI agent runs of agent ``agent`` (one session), made by the OpenTelemetry SDK, in
    the order they ended (tool spans before their agent span), as a batch span processor would export them."""
    recorder = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"agent-{agent}"}))
    provider.add_span_processor(SimpleSpanProcessor(recorder))
    tracer = provider.get_tracer("layout-agents")
    for run in range(runs):
        prompt = json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"agent {agent} run {run}"}]}])
        answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
        attributes = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"agent-{agent}",
            "gen_ai.conversation.id": f"session-{agent}", "gen_ai.input.messages": prompt,
            "gen_ai.output.messages": answer,
        }  # fmt: skip
        with tracer.start_as_current_span("invoke_agent", attributes=attributes):
            for tool in range(TOOLS):
                with tracer.start_as_current_span(
                    f"execute_tool t{tool}",
                    attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{tool}",
                                "gen_ai.tool.call.arguments": json.dumps({"run": run, "tool": tool})},
                ):  # fmt: skip
                    pass
    provider.shutdown()
    return list(recorder.get_finished_spans())


def span_key(span: ReadableSpan) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


@dataclass
class Load:
    """Agents in threads, each exporting its runs' spans in batches of ``max_batch`` / 2 to ``max_batch`` spans (a
    run's spans often split across batches, so across collectors) through ``endpoint`` with its own OTLP/HTTP exporter. An export the exporter
    gives up on (its retries ran out) is sent again, as a persistent queue would. ``on_acknowledged`` is called with
    the number of spans acknowledged so far after each acknowledged export."""

    endpoint: str
    agents: int
    runs: int
    max_batch: int = 8
    on_acknowledged: Callable[[int], None] = lambda n: None
    acknowledged: list[tuple[str, str]] = field(default_factory=list)
    given_up: int = 0
    seconds: float = 0.0
    acknowledged_at: list[float] = field(default_factory=list)
    """``time.perf_counter()`` at each acknowledgement."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def total_spans(self) -> int:
        return self.agents * self.runs * (1 + TOOLS)

    @property
    def longest_gap(self) -> float:
        """The longest time without any acknowledgement (a failover's stall)."""
        times = sorted(self.acknowledged_at)
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def run(self) -> None:
        spans = [agent_runs(agent, self.runs) for agent in range(self.agents)]
        threads = [threading.Thread(target=self._agent, args=(n, s)) for n, s in enumerate(spans)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.seconds = time.perf_counter() - start

    def _agent(self, agent: int, spans: list[ReadableSpan]) -> None:
        exporter = OTLPSpanExporter(
            endpoint=f"{self.endpoint}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        rng = random.Random(agent)
        i = 0
        while i < len(spans):
            batch = spans[i : i + rng.randint(max(1, self.max_batch // 2), self.max_batch)]
            deadline = time.monotonic() + 90
            while exporter.export(batch) != SpanExportResult.SUCCESS:
                assert time.monotonic() < deadline, "an export was never acknowledged"
                with self._lock:
                    self.given_up += 1
                time.sleep(0.2)
            with self._lock:
                self.acknowledged += [span_key(span) for span in batch]
                self.acknowledged_at.append(time.perf_counter())
                done = len(self.acknowledged)
            self.on_acknowledged(done)
            i += len(batch)
        exporter.shutdown()


class LoggedCollector(Collector):
    """A collector whose output goes to files (a pipe nobody reads would fill and stall it)."""

    def launch(self) -> LoggedCollector:
        folder = self.db.parent
        with open(folder / "collector.out", "a") as out, open(folder / "collector.err", "a") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "toolpath.cli", "collect", "--store", self.store_url,
                 "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port), "--token", TOKEN, *self.extra],
                stdout=out, stderr=err,
            )  # fmt: skip
        return self

    def restart(self) -> None:
        """After a ``kill -9``: the same ports again (the port may take a moment to be free)."""
        for _ in range(20):
            try:
                self.launch().ready()
                return
            except RuntimeError:
                time.sleep(0.5)
        raise RuntimeError("the killed collector did not start again")


@dataclass
class Layout:
    cluster: ReplicatedCluster
    collectors: list[LoggedCollector]
    front: str
    """The OTLP/HTTP endpoint agents export to: HAProxy's."""
    database_port: int
    """HAProxy's PostgreSQL frontend, the collectors' ``--store``."""
    events: list[str] = field(default_factory=list)

    def kill_and_restart(self, collector: LoggedCollector) -> None:
        assert collector.process is not None
        collector.process.send_signal(signal.SIGKILL)
        collector.process.wait(10)
        self.events.append("collector killed")
        collector.restart()
        self.events.append("collector restarted")

    def failover(self) -> None:
        self.cluster.stop_primary()
        self.events.append("primary stopped")
        self.cluster.promote()
        self.events.append("replica promoted")

    def store(self) -> Store:
        """The store as it is now: the replica, promoted or not (synchronous: it has every commit)."""
        return Store(self.cluster.replica_url, create=False)


@contextlib.contextmanager
def layout(server: PostgresServer, folder: Path, *, collectors: int = 3) -> Iterator[Layout]:
    """Everything started: PostgreSQL primary and replica (the schema made on the primary), HAProxy with the
    documented configuration, ``collectors`` collectors (``--workers 2 --online``) with their ``--store`` on
    HAProxy's database frontend."""
    (folder / "online.toml").write_text(ONLINE)
    with replicated(server) as cluster:
        Store(cluster.primary_url).close()  # the schema, once, before the collectors start
        otlp_port, db_port = free_ports(2)
        started = []
        for n in range(collectors):
            (folder / f"c{n}").mkdir()
            extra = ("--workers", "2", "--online", str(folder / "online.toml"))
            started.append(LoggedCollector(folder / f"c{n}", url_at(db_port), *extra))
        replacements = {
            "0.0.0.0:4318": f"127.0.0.1:{otlp_port}",
            "0.0.0.0:5433": f"127.0.0.1:{db_port}",
            "user toolpath": "user postgres",
            "db-primary:5432": f"127.0.0.1:{cluster.primary_port}",
            "db-replica:5432": f"127.0.0.1:{cluster.replica_port}",
        }
        for n in range(3):  # the documented three; fewer started ones stay down in HAProxy's eyes
            port = started[n].http_port if n < collectors else free_port()
            replacements[f"toolpath-{n + 1}:4318"] = f"127.0.0.1:{port}"
        config = localized(documented_config(), replacements)
        with running_haproxy(config, folder, [otlp_port, db_port]):
            try:
                for collector in started:
                    collector.launch()
                for collector in started:
                    collector.ready()
                _wait_up(f"http://127.0.0.1:{otlp_port}")
                yield Layout(cluster, started, f"http://127.0.0.1:{otlp_port}", db_port)
            finally:
                for collector in started:
                    collector.stop()


def _wait_up(front: str) -> None:
    """Until HAProxy passes a request to a collector (its health checks have seen one up)."""
    import urllib.request

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{front}/healthz", timeout=2) as reply:
            if reply.status == 200:
                return
        time.sleep(0.1)
    raise RuntimeError("HAProxy passes no request to the collectors")


def wait_scored(store: Store, invocations: int, timeout: float = 60) -> dict[str, str]:
    """The online jobs' statuses once there is one per invocation and all are done (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while True:
        with store.engine.connect() as conn:
            jobs = {r.invocation_id: r.status for r in conn.execute(select(t.eval_jobs))}
        if (len(jobs) == invocations and set(jobs.values()) == {"done"}) or time.monotonic() > deadline:
            return jobs
        time.sleep(0.2)
