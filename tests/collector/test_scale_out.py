"""Scale-out as it runs in production: three `toolpath collect` processes on one PostgreSQL store, online
evaluation on in each, fed by a load balancer without trace affinity (the spans of every trace cut at random
across requests and collectors, sent at once from several threads). The store must end up exactly as one
collector makes it from the same spans on SQLite — no duplicate, no lost span — with every online job scored
once, on the whole invocation; and again when one collector is killed (`kill -9`) in the middle of the load while
the sender retries what it had not seen acknowledged on the survivors."""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import select, text

from tests.helpers import SPANS
from tests.helpers.collector import Collector
from toolpath.store import schema as t
from toolpath.store.store import Store

METRICS = ["tool_call_count", "tool_error_rate"]
ONLINE = 'metrics = ["tool_call_count", "tool_error_rate"]\nworkers = 2\npoll_seconds = 0.05\nlease_seconds = 2\n'


def requests_of(seed: int) -> list[bytes]:
    """Every span of every recorded export, shuffled and cut into OTLP requests of 1 to 24 spans (each under
    its own resource and scope), as a load balancer without trace affinity would pass them on."""
    flat = []
    for path in sorted(SPANS.glob("*.otlp.pb")):
        request = ExportTraceServiceRequest()
        request.ParseFromString(path.read_bytes())
        flat += [(rs, ss, span) for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    rng = random.Random(seed)
    rng.shuffle(flat)
    bodies, i = [], 0
    while i < len(flat):
        size = rng.randint(1, 24)
        part = ExportTraceServiceRequest()
        for rs, ss, span in flat[i : i + size]:
            out = part.resource_spans.add()
            out.resource.CopyFrom(rs.resource)
            scope_spans = out.scope_spans.add()
            scope_spans.scope.CopyFrom(ss.scope)
            scope_spans.spans.append(span)
        bodies.append(part.SerializeToString())
        i += size
    return bodies


def stored(store: Store) -> dict[str, list]:
    """Every derived row and every span key, in a fixed order."""
    with store.engine.connect() as conn:

        def rows(table, *order):
            return [tuple(r) for r in conn.execute(select(table).order_by(*order))]

        return {
            "sessions": rows(t.sessions, t.sessions.c.session_id),
            "invocations": rows(t.invocations, t.invocations.c.invocation_id),
            "tool_calls": rows(t.tool_calls, t.tool_calls.c.invocation_id, t.tool_calls.c.position),
            "spans": rows(select(t.spans.c.trace_id, t.spans.c.span_id).subquery(), "trace_id", "span_id"),
        }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_url) -> Iterator[tuple[dict[str, list], list[Collector]]]:
    """The reference — one collector on SQLite, fed the same requests one after the other — and three collectors
    with online evaluation on one PostgreSQL store, all four started side by side."""
    folder = tmp_path_factory.mktemp("scale")
    (folder / "online.toml").write_text(ONLINE)
    single = Collector(folder).launch()
    three = []
    for name in "abc":
        (folder / name).mkdir()
        three.append(Collector(folder / name, postgres_url, "--online", str(folder / "online.toml")).launch())
    try:
        for collector in (single, *three):
            collector.ready()
        for body in requests_of(seed=7):
            assert single.post(body)[0] == 200
        reference = stored(single.store())
        single.stop()
        assert len(reference["invocations"]) > 80 and len(reference["spans"]) > 900
        yield reference, three
    finally:
        for collector in (single, *three):
            collector.stop()


def empty(url: str) -> Store:
    store = Store(url)
    with store.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(t.metadata.tables)}"))
    return store


class Balancer:
    """Sends each request to a collector chosen at random; a request that is refused or whose collector died is
    sent again to another one, until one acknowledges it. ``kill_after``: acknowledged requests before
    ``victim`` is killed with SIGKILL."""

    def __init__(self, collectors: list[Collector], victim: Collector | None = None, kill_after: int = 0) -> None:
        self.live = list(collectors)
        self.victim, self.kill_after = victim, kill_after
        self.acknowledged = 0
        self.retries = 0
        self._lock = threading.Lock()
        self._rng = random.Random(3)

    def send(self, body: bytes) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with self._lock:
                collector = self._rng.choice(self.live)
            try:
                status = collector.post(body)[0]
            except OSError:  # connection refused or reset: the collector is gone
                status = 0
            if status == 200:
                with self._lock:
                    self.acknowledged += 1
                    if self.victim is not None and self.acknowledged == self.kill_after:
                        self.victim.process.send_signal(signal.SIGKILL)
                return
            with self._lock:
                self.retries += 1
                if collector.process.poll() is not None and collector in self.live:
                    self.live.remove(collector)
            time.sleep(0.02)
        raise AssertionError("a request was never acknowledged")


def scored_once(store: Store, invocations: list[tuple]) -> None:
    """Every invocation has one job, done, and one score per metric, computed on its final version."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with store.engine.connect() as conn:
            jobs = {r.invocation_id: r.status for r in conn.execute(select(t.eval_jobs))}
        if len(jobs) == len(invocations) and set(jobs.values()) == {"done"}:
            break
        time.sleep(0.2)
    assert sorted(jobs) == sorted(row[0] for row in invocations)
    assert set(jobs.values()) == {"done"}
    with store.engine.connect() as conn:
        scores = [(r.invocation_id, r.metric, r.score) for r in conn.execute(select(t.online_results))]
    assert sorted((i, m) for i, m, _ in scores) == sorted((row[0], m) for row in invocations for m in METRICS)
    calls = {i.invocation_id: len(i.tool_calls) for i in store.list_invocations(limit=None)}
    assert {i: s for i, m, s in scores if m == "tool_call_count"} == calls


def test_three_collectors_without_trace_affinity_store_what_one_does(cluster, postgres_url):
    reference, collectors = cluster
    store = empty(postgres_url)
    balancer = Balancer(collectors)
    bodies = requests_of(seed=7)
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(balancer.send, bodies))
    assert balancer.acknowledged == len(bodies)
    assert stored(store) == reference
    scored_once(store, reference["invocations"])


def test_a_collector_killed_mid_load_loses_nothing_acknowledged(cluster, postgres_url):
    reference, collectors = cluster
    store = empty(postgres_url)
    bodies = requests_of(seed=7)
    victim = collectors[1]
    balancer = Balancer(collectors, victim=victim, kill_after=len(bodies) // 3)
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(balancer.send, bodies))
    assert victim.process.wait(10) == -signal.SIGKILL
    assert balancer.retries > 0  # requests in flight on it, or sent to it after it died, went elsewhere
    assert balancer.acknowledged == len(bodies)
    assert stored(store) == reference
    scored_once(store, reference["invocations"])  # the dead collector's claims ran out and were scored again
