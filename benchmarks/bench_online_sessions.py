"""Whole sessions scored online under live traffic: do quiet sessions close on time, within the judge's budget,
without slowing ingest?

    python benchmarks/bench_online_sessions.py                         # 10,000 sessions, SQLite
    python benchmarks/bench_online_sessions.py --sessions 500          # a couple of minutes
    python benchmarks/bench_online_sessions.py --sessions 2000 --store postgresql

``toolpath collect --online online.toml`` runs with two evaluators: ``turns`` (computed turn metrics, every turn)
and ``conversations`` (``multi_turn_task_success_v1`` over whole sessions, ``idle_seconds`` = ``--idle``, a tenth
of the sessions sampled, a judge token budget per day that runs out part-way). The judge is a fake Gemini API on
127.0.0.1 (tests/helpers/fake_gemini.py) answering each request after 200 ms.

1. **Ingest** (printed first): the same session traffic as OTLP/protobuf bodies of 512 spans in the order the
   spans end (as the OTel SDK's ``BatchSpanProcessor`` exports them: a turn's spans straddle bodies), posted as
   fast as bench_collector's sender goes, into a null receiver (the sender's ceiling), then into the collector
   without ``--online`` and with it, alternately for ``--rounds``. The floor of the online row is the row without
   online; the target is at least 90% of it. The online rows' judged sessions give the judge tokens a session
   costs, from which the budget of the run below is set (``--budget-share`` of what the sampled sessions would
   cost).
2. **Sessions**: an agent process traces ``--sessions`` sessions of 1-8 turns (1-4 tool calls each) with the real
   OTel SDK (``BatchSpanProcessor``, 1 s schedule, OTLP/HTTP exporter), ``--live`` sessions going on at once, a
   turn of each in turn, ``--rate`` turns a second, so every session's turns are interleaved with others' and
   come well within ``--idle`` of each other. This process samples the store every second: turn jobs waiting,
   sessions open (not yet quiet) and due (quiet, not yet closed). Once the traffic ends and every session is
   closed, it prints sessions closed per second beside the rate sampled sessions arrived at; the close delay
   (a session's results stored, or its job skipped, after its last turn was stored — ``session_jobs.due_at``
   less the idle time — and after its last turn ended) beside the floor ``idle_seconds`` and the target
   ``idle_seconds + 2 s``; the backlog over the run; the judge's calls and tokens (``judge_spend``,
   ``online_usage``, the fake's own count) beside the budget; and what was skipped, by reason, from the store
   and from ``/metrics``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_collector import FINISH_BODY_SPANS, ROOT, _attrs, ceiling, collector, send, write_bodies

from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply

TURN_METRICS = ["tool_error_rate", "tool_call_count", "latency_in_seconds", "redundant_tool_calls",
                "tool_loop_detected"]  # fmt: skip
SESSION_METRIC = "multi_turn_task_success_v1"
SAMPLE = 0.1
JUDGE_SECONDS = 0.2
CYCLE_SESSIONS = 200
"""Sessions in one cycle of the ingest bodies (the sender gives each cycle new trace and session ids)."""
ASKED: list[float] = []
"""When the fake judge was asked (``time.monotonic()``), each request."""
SLACK_SECONDS = 2.0
"""The close-delay target: at most this long past ``idle_seconds``."""

_ARGS = json.dumps({"device_id": "thermostat-living_room", "updates": {"brightness": 30}})
_RESULT = json.dumps({"device_id": "thermostat-living_room", "ok": True, "temperature": 21.5})


# --- the traffic ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    session: int
    number: int
    tools: int

    def prompt(self) -> str:
        return f"Turn {self.number + 1} of conversation {self.session}: set the living room to {18 + self.number} C"

    def messages(self) -> tuple[str, str]:
        asked = [{"role": "user", "parts": [{"type": "text", "content": self.prompt()}]}]
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"Done: {18 + self.number} C."}],
                   "finish_reason": "stop"}]  # fmt: skip
        return json.dumps(asked), json.dumps(answer)


def plan(sessions: int, live: int, seed: int) -> list[Turn]:
    """The turns of ``sessions`` sessions of 1-8 turns in the order they happen: ``live`` sessions go on at once,
    a turn of each in turn; a session that has had its last turn gives its place to the next."""
    rng = random.Random(seed)
    lengths = [rng.randint(1, 8) for _ in range(sessions)]
    slots: list[list[int]] = []  # [session, turns had]
    begun, out = 0, []
    while begun < sessions or slots:
        while begun < sessions and len(slots) < live:
            slots.append([begun, 0])
            begun += 1
        for slot in list(slots):
            session, had = slot
            out.append(Turn(session, had, rng.randint(1, 4)))
            slot[1] += 1
            if slot[1] == lengths[session]:
                slots.remove(slot)
    return out


def agent_process(endpoint: str, sessions: int, live: int, rate: float, seed: int) -> None:
    """The agent's side of the sessions run (its own process): each turn traced with the OTel SDK as it happens,
    paced to ``rate`` turns a second; prints what it sent as one JSON line."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), max_queue_size=2_000_000, schedule_delay_millis=1000)
    )
    tracer = provider.get_tracer("bench")
    turns, spans, behind = plan(sessions, live, seed), 0, 0.0
    start = time.perf_counter()
    for k, turn in enumerate(turns):
        wait = start + k / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        else:
            behind = max(behind, -wait)
        asked, answer = turn.messages()
        with tracer.start_as_current_span("invoke_agent bench", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench",
            "gen_ai.conversation.id": f"conversation-{turn.session}", "gen_ai.input.messages": asked,
        }) as root:  # fmt: skip
            for i in range(turn.tools):
                with tracer.start_as_current_span(f"execute_tool tool_{i}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"tool_{i}",
                    "gen_ai.tool.type": "function", "gen_ai.tool.call.id": f"call_{turn.session}_{turn.number}_{i}",
                    "gen_ai.tool.call.arguments": _ARGS, "gen_ai.tool.call.result": _RESULT,
                }):  # fmt: skip
                    pass
            root.set_attribute("gen_ai.output.messages", answer)
        spans += 1 + turn.tools
    seconds = time.perf_counter() - start
    provider.force_flush(timeout_millis=600_000)
    provider.shutdown()
    print(json.dumps({"turns": len(turns), "spans": spans, "seconds": seconds, "behind": behind}), flush=True)


def ingest_bodies(seed: int) -> tuple[list[bytes], bytes]:
    """A cycle of :data:`CYCLE_SESSIONS` sessions' spans as OTLP/protobuf bodies of 512 spans, in the order they
    end with 32 turns going on at once (a turn's tools, then its root), and the 8-byte marker that begins every
    trace id (bench_collector's sender swaps a counter in, and into the session ids, which hold its hex)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    rng = random.Random(seed)
    marker = rng.randbytes(8)
    turns = plan(CYCLE_SESSIONS, 100, seed)
    waiting = list(enumerate(turns))
    running: list[list[tuple[int, int]]] = []
    order: list[tuple[int, int]] = []  # (turn, span: 0 the root, 1.. its tools)
    while waiting or running:
        while waiting and len(running) < 32:
            t, turn = waiting.pop(0)
            running.append([(t, i) for i in range(turn.tools + 1)])  # popped from the end: tools, then the root
        run = running[rng.randrange(len(running))]
        order.append(run.pop())
        if not run:
            running.remove(run)
    start = time.time_ns()
    bodies = []
    for first in range(0, len(order), FINISH_BODY_SPANS):
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(_attrs(service__name="bench-agent"))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = "bench"
        chunk = order[first : first + FINISH_BODY_SPANS]
        for t, i in chunk:
            turn, t0 = turns[t], start + t * 2_000_000
            trace_id, root_id = marker + struct.pack(">Q", t + 1), struct.pack(">Q", (t + 1) << 8)
            if i == 0:
                span = scope_spans.spans.add(trace_id=trace_id, span_id=root_id, name="invoke_agent bench", kind=1,
                                             start_time_unix_nano=t0, end_time_unix_nano=t0 + 1_500_000)  # fmt: skip
                asked, answer = turn.messages()
                span.attributes.extend(_attrs(
                    gen_ai__operation__name="invoke_agent", gen_ai__agent__name="bench",
                    gen_ai__conversation__id=f"conversation-{marker.hex()}-{turn.session}",
                    gen_ai__input__messages=asked, gen_ai__output__messages=answer,
                ))  # fmt: skip
                continue
            span = scope_spans.spans.add(
                trace_id=trace_id, span_id=struct.pack(">Q", ((t + 1) << 8) + i), parent_span_id=root_id,
                name=f"execute_tool tool_{i - 1}", kind=1, start_time_unix_nano=t0 + i * 200_000,
                end_time_unix_nano=t0 + i * 200_000 + 100_000,
            )  # fmt: skip
            span.attributes.extend(_attrs(
                gen_ai__operation__name="execute_tool", gen_ai__tool__name=f"tool_{i - 1}",
                gen_ai__tool__type="function", gen_ai__tool__call__id=f"call_{t}_{i - 1}",
                gen_ai__tool__call__arguments=_ARGS, gen_ai__tool__call__result=_RESULT,
            ))  # fmt: skip
        body = request.SerializeToString()
        assert body.count(marker) == len(chunk), "the marker must occur only in the trace ids"
        bodies.append(body)
    return bodies, marker


# --- the collector's configuration and store ------------------------------------------------------------------


def online_toml(args: argparse.Namespace, tokens_per_day: int | None, turns: bool = True, sessions: bool = True) -> str:
    """The collector's ``online.toml``: the ``turns`` evaluator, the ``conversations`` one, or both."""
    budget = f"budget = {{ tokens_per_day = {tokens_per_day} }}\n" if tokens_per_day else ""
    batch = f"batch_size = {args.batch_size}\n" if args.batch_size else ""
    text = (
        f"workers = 2\npoll_seconds = 0.1\n{batch}max_backlog = 1000000\n\n"
        '[judge]\nmodel = "gemini-2.5-flash"\ntimeout = 60\nmax_attempts = 1\nconcurrency = 8\n'
        "max_output_tokens = 1024\n\n"  # each call held against the budget at its most: its reply, well above
    )
    if turns:
        text += f'[[evaluator]]\nname = "turns"\nmetrics = {TURN_METRICS!r}\n\n'
    if sessions:
        text += (
            f'[[evaluator]]\nname = "conversations"\ntarget = "session"\nidle_seconds = {args.idle}\n'
            f'metrics = ["{SESSION_METRIC}"]\nsample_rate = {SAMPLE}\n{budget}'
        )
    return text


@contextlib.contextmanager
def fresh_store(kind: str, folder: Path, name: str) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / f'{name}.db'}"
        return
    from tests.helpers.pgserver import PostgresServer

    server = PostgresServer.find()
    if server is None:
        raise SystemExit("PostgreSQL is not installed here (apt-get install -y postgresql)")
    with server.running(durable=True) as url:
        yield url


def query(store: Any, sql: str) -> list[Any]:
    from sqlalchemy import text

    with store.engine.connect() as conn:
        return list(conn.execute(text(sql)))


def wait_ready(port: int, timeout: float = 120.0) -> None:
    """Wait until the collector's ``/readyz`` says ready."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("the collector was not ready in time") from None
            time.sleep(0.1)


def settle(pid: int, timeout: float = 60.0) -> None:
    """Wait until process ``pid`` (a collector just started) and its worker processes have stopped working on
    their own: their CPU over half a second under 5% of a core (or ``timeout``)."""

    def cpu() -> float:
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if stat.parent.name == str(pid) or fields[1] == str(pid):  # the process, or one of its children
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu()
        time.sleep(0.5)
        if cpu() - before < 0.025:
            return


def judge_tokens(store: Any) -> tuple[int, int]:
    """The session evaluator's judge calls sent and tokens spent, from ``judge_spend``."""
    rows = query(store, "SELECT outcome, sum(calls), sum(input_tokens + output_tokens) FROM judge_spend "
                        "WHERE evaluator = 'conversations' GROUP BY outcome")  # fmt: skip
    return sum(int(r[1]) for r in rows if r[0] in ("ok", "error")), sum(int(r[2]) for r in rows)


# --- 1. ingest, online off and on ---------------------------------------------------------------------------


def ingest(args: argparse.Namespace, folder: Path) -> float:
    """Print the ingest rows; return the judge tokens one judged session cost in them."""
    from toolpath.store.store import Store

    bodies, marker = ingest_bodies(args.seed)
    template = write_bodies(folder / "bodies.pb", bodies)
    spans_per_cycle = sum(body.count(marker) for body in bodies)
    print(f"1. ingest: {args.ingest_spans:,} spans a row (cycles of {CYCLE_SESSIONS} sessions, {spans_per_cycle:,} "
          f"spans in {len(bodies)} bodies of up to {FINISH_BODY_SPANS} in finish order), {args.store}, "
          f"{args.connections} connections", flush=True)  # fmt: skip
    sender = argparse.Namespace(spans=args.ingest_spans, seconds=0, connections=args.connections)
    top = ceiling(template, marker, sender)
    print(f"   {'null receiver (ceiling)':<36}{top.rate:>9,.0f} spans/s", flush=True)
    configs = {"on": (True, True), "on, turns only": (True, False), "on, sessions only": (False, True)}
    modes = ["off", "on", *(["on, turns only", "on, sessions only"] if args.split else [])]
    for mode in modes[1:]:
        (folder / f"{modes.index(mode)}.toml").write_text(online_toml(args, None, *configs[mode]))
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    cost: list[float] = []
    for r in range(args.rounds):
        for mode in modes:
            with fresh_store(args.store, folder, f"ingest-{modes.index(mode)}-{r}") as url:
                extra = ("--online", str(folder / f"{modes.index(mode)}.toml")) if mode != "off" else ()
                with collector(url, *extra, *args.collect_args) as (port, process):
                    settle(process.pid)  # what it loads as it starts (online: google-adk's evaluation) is not ingest
                    sent = send(template, marker, port, process.pid, sender)
                    store = Store(url)
                    if mode == "on":  # its sessions close idle_seconds after they were stored: their judge cost
                        deadline = time.monotonic() + args.idle + 60
                        while time.monotonic() < deadline and judge_tokens(store)[0] < 10:
                            time.sleep(0.5)
                        calls, tokens = judge_tokens(store)
                        if calls:
                            cost.append(tokens / calls)
                    stored = store.counts()["spans"]
                    store.close()
            rates[mode].append(sent.rate)
            label = f"collector, online {mode}"
            lost = "" if stored == sent.spans else f"   STORED {stored:,} OF {sent.spans:,}"
            print(
                f"   {label:<36}{sent.rate:>9,.0f} spans/s   {sent.cpu_per_span:5.1f} µs CPU/span   "
                f"{sent.watch.describe()}{lost}",
                flush=True,
            )
    off, on = statistics.mean(rates["off"]), statistics.mean(rates["on"])
    verdict = "reached" if on >= 0.9 * off else "NOT reached"
    for mode in modes[2:]:
        mean = statistics.mean(rates[mode])
        print(f"   online {mode}: {mean:,.0f} spans/s, {mean / off:.1%} of off", flush=True)
    print(f"   target: online on >= 90% of off: {verdict} ({on:,.0f} vs {off:,.0f} spans/s: {on / off:.1%}; "
          f"mean of {args.rounds} round(s), alternated)", flush=True)  # fmt: skip
    if not cost:
        raise SystemExit("no session was judged in the ingest rows: is the judge reachable?")
    return statistics.mean(cost)


# --- 2. the sessions run ------------------------------------------------------------------------------------


class Backlog(threading.Thread):
    """Samples the store every second until stopped: (seconds, turn jobs pending, sessions open, sessions due or
    being closed, sessions closed)."""

    def __init__(self, store: Any) -> None:
        super().__init__(daemon=True)
        self.store, self.halt = store, threading.Event()
        self.samples: list[tuple[float, int, int, int, int]] = []
        self.start_time = time.monotonic()

    def read(self) -> tuple[float, int, int, int, int]:
        now = time.time_ns()
        turns = query(self.store, "SELECT count(*) FROM eval_jobs WHERE status IN ('pending', 'claimed')")[0][0]
        rows = query(self.store, f"SELECT sum(CASE WHEN status = 'pending' AND due_at > {now} THEN 1 ELSE 0 END), "
                                 f"sum(CASE WHEN status = 'claimed' OR (status = 'pending' AND due_at <= {now}) "
                                 "THEN 1 ELSE 0 END), sum(CASE WHEN status IN ('done', 'skipped', 'failed') "
                                 "THEN 1 ELSE 0 END) FROM session_jobs")[0]  # fmt: skip
        open_, due, closed = (int(v or 0) for v in rows)
        sample = (time.monotonic() - self.start_time, int(turns), open_, due, closed)
        self.samples.append(sample)
        return sample

    def run(self) -> None:
        while not self.halt.wait(1.0):
            self.read()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return (f"p50 {percentile(values, 0.5):5.2f} s  p99 {percentile(values, 0.99):5.2f} s  "
            f"max {max(values):5.2f} s  ({len(values):,} sessions)")  # fmt: skip


def sessions_run(args: argparse.Namespace, folder: Path, fake: FakeGemini, tokens_per_session: float) -> None:
    from toolpath.store.store import Store

    expected = args.sessions * SAMPLE
    budget = max(1, int(args.budget_share * expected * tokens_per_session))
    toml = folder / "online.toml"
    toml.write_text(online_toml(args, budget))
    turns = plan(args.sessions, args.live, args.seed)
    source = "--session-tokens" if args.session_tokens else "from the ingest rows"
    print(f"\n2. sessions: {args.sessions:,} sessions, {len(turns):,} turns at {args.rate:g} turns/s, {args.live} at "
          f"once; idle_seconds {args.idle:g}; judge {SESSION_METRIC} on {SAMPLE:.0%} of them, 200 ms a call, "
          f"budget {budget:,} tokens a day ({args.budget_share:.0%} of ~{expected:,.0f} sessions x "
          f"{tokens_per_session:,.0f} tokens, {source})", flush=True)  # fmt: skip
    requests_before = fake.requests
    with (
        fresh_store(args.store, folder, "sessions") as url,
        collector(url, "--online", str(toml), *args.collect_args) as (port, _),
    ):
        wait_ready(port)  # as a load balancer routes by /readyz: once the judge's modules are loaded
        store = Store(url)
        backlog = Backlog(store)
        backlog.start()
        agent = subprocess.run(
            [sys.executable, "-c", f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}]; "
             "import bench_online_sessions as b; b.agent_process(*sys.argv[1:2], *map(int, sys.argv[2:4]), "
             "float(sys.argv[4]), int(sys.argv[5]))", f"http://127.0.0.1:{port}/v1/traces", str(args.sessions),
             str(args.live), str(args.rate), str(args.seed)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if agent.returncode:
            raise SystemExit(f"the agent process failed: {agent.stderr[-2000:]}")
        sent = json.loads(agent.stdout.splitlines()[-1])
        traffic_end = backlog.read()[0]
        deadline = time.monotonic() + args.idle + 300
        while time.monotonic() < deadline:
            _, pending, open_, due, _ = backlog.read()
            if not (pending or open_ or due):
                break
            time.sleep(0.5)
        backlog.halt.set()
        backlog.join()
        time.sleep(1.0)  # the workers publish their counters to /metrics as they go round: let them
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            metrics = reply.read().decode()
        report(args, store, backlog, sent, traffic_end, budget, fake.requests - requests_before, metrics)
        store.close()


def report(args: argparse.Namespace, store: Any, backlog: Backlog, sent: dict[str, Any], traffic_end: float,
           budget: int, fake_requests: int, metrics: str) -> None:  # fmt: skip
    idle_ns = int(args.idle * 1e9)
    print(
        f"   agent: {sent['turns']:,} turns, {sent['spans']:,} spans in {sent['seconds']:.1f} s "
        f"({sent['spans'] / sent['seconds']:,.0f} spans/s; at most {sent['behind']:.2f} s behind its pace)"
    )
    stored = store.counts()
    lost = "" if stored["spans"] == sent["spans"] else f"   STORED {stored['spans']:,} OF {sent['spans']:,} SPANS"
    print(f"   stored: {stored['invocations']:,} turns, {stored['spans']:,} spans{lost}")
    jobs = query(store, "SELECT session_id, status, reason, revision, due_at, finished_at FROM session_jobs")
    created = {
        (r[0], r[1]): int(r[2])
        for r in query(
            store, "SELECT session_id, revision, min(created_at) FROM session_results GROUP BY session_id, revision"
        )
    }
    ends = {r[0]: int(r[1]) for r in query(
        store, "SELECT session_id, max(started_at + coalesce(latency_seconds, 0) * 1000000000) FROM invocations "
               "GROUP BY session_id")}  # fmt: skip
    closed = [j for j in jobs if j.status in ("done", "skipped", "failed")]
    unclosed = len(jobs) - len(closed)
    after_arrival, after_end, all_closed = [], [], []
    for j in closed:
        arrival = int(j.due_at) - idle_ns
        all_closed.append((int(j.finished_at) - arrival) / 1e9)
        at = created.get((j.session_id, j.revision))
        if at is not None:
            after_arrival.append((at - arrival) / 1e9)
            if j.session_id in ends:
                after_end.append((at - ends[j.session_id]) / 1e9)
    finished = sorted(int(j.finished_at) for j in closed)
    span = (finished[-1] - finished[0]) / 1e9 if len(finished) > 1 else 0.0
    arriving = len(jobs) / sent["seconds"]
    rate = len(closed) / span if span else 0.0
    missing = f"; {unclosed:,} NOT CLOSED" if unclosed else ""
    print(f"   sessions closed per second: {rate:6.2f}   floor (sampled sessions arriving): {arriving:6.2f}/s   "
          f"({len(closed):,} closed of {len(jobs):,} sampled over {span:.1f} s{missing})")  # fmt: skip
    revisions = sum(1 for j in jobs if j.revision > 1)
    if revisions:
        print(f"   {revisions:,} sessions reopened by a late turn (scored again as revision 2+)")
    print(f"   close delay after the last turn was stored, results stored:  {spread(after_arrival)}")
    print(f"   close delay after the last turn was stored, every closed job: {spread(all_closed)}")
    print(f"   close delay after the last turn ended (exporter's delay in):  {spread(after_end)}")
    warm_from = min(created.values(), default=0)  # the first results stored: the judge's modules were loaded
    warm = [
        (created[j.session_id, j.revision] - int(j.due_at) + idle_ns) / 1e9
        for j in closed
        if (j.session_id, j.revision) in created and int(j.finished_at) > warm_from
    ]
    print(f"   the same, leaving out the first batch closed (a cold judge):    {spread(warm)}")
    first = sorted(closed, key=lambda j: int(j.finished_at))[:3]
    print(
        "   the first sessions closed (the judge's modules load with the first): "
        + ", ".join(f"{(int(j.finished_at) - int(j.due_at) + idle_ns) / 1e9:.2f} s" for j in first)
    )
    target = args.idle + SLACK_SECONDS
    ok = bool(after_arrival) and percentile(after_arrival, 0.99) <= target and not unclosed
    print(
        f"   floor: idle_seconds {args.idle:g} s; target p50/p99 <= {target:g} s: {'reached' if ok else 'NOT reached'}"
    )
    during = [s for s in backlog.samples if s[0] <= traffic_end]
    step = max(1, len(backlog.samples) // 12)
    print(
        "   backlog (every second; shown every " + f"{step}): t  turn jobs waiting  sessions open  due/closing  closed"
    )
    for s in backlog.samples[::step] + ([backlog.samples[-1]] if (len(backlog.samples) - 1) % step else []):
        marker = "" if s[0] <= traffic_end else "  (traffic over)"
        print(f"      {s[0]:6.0f} s {s[1]:>10,} {s[2]:>14,} {s[3]:>12,} {s[4]:>8,}{marker}")
    if during:
        quarter, end = during[len(during) // 4], during[-1]
        flat = end[1] <= quarter[1] + 200 and end[3] <= quarter[3] + 16
        shape = "flat" if flat else "GROWING"
        print(f"   backlog while traffic came: {shape} (a quarter in: {quarter[1]:,} turn jobs, "
              f"{quarter[3]:,} due sessions; at its end: {end[1]:,}, {end[3]:,}; peak due "
              f"{max(s[3] for s in during):,})")  # fmt: skip
    calls, tokens = judge_tokens(store)
    used = query(store, "SELECT coalesce(sum(tokens), 0), coalesce(sum(targets), 0) FROM online_usage "
                        "WHERE evaluator = 'conversations'")[0]  # fmt: skip
    scored = len({s for s, _ in created})
    per_call = tokens / calls if calls else 0.0
    affordable = budget / per_call if per_call else 0.0
    print(f"   judge: {calls:,} calls made (judge_spend; the fake judge counted {fake_requests:,}), {tokens:,} tokens "
          f"(online_usage: {int(used[0]):,}, {int(used[1]):,} sessions taken); {scored:,} sessions judged")  # fmt: skip
    outcomes = query(store, "SELECT outcome, sum(calls), sum(input_tokens + output_tokens) FROM judge_spend "
                            "WHERE evaluator = 'conversations' GROUP BY outcome ORDER BY outcome")  # fmt: skip
    print("   judge_spend by outcome: " + ", ".join(f"{o} {int(c):,} calls {int(t):,} tokens" for o, c, t in outcomes))
    asked = [t - backlog.start_time for t in ASKED if t >= backlog.start_time]
    if len(asked) > 1:
        gaps = [b - a for a, b in itertools.pairwise(asked)]
        print(
            f"   judge requests from t={asked[0]:.1f} s to t={asked[-1]:.1f} s: "
            f"{len(asked) / (asked[-1] - asked[0]):.2f} a second, median gap {statistics.median(gaps):.2f} s "
            f"(the fake answers in {JUDGE_SECONDS:g} s)"
        )
    over = int(used[0]) - budget
    print(
        f"   budget {budget:,} tokens a day (~{affordable:,.0f} calls at {per_call:,.0f} tokens a call): "
        f"{'never above it' if over <= 0 else f'ABOVE IT by {over:,} tokens ({over / per_call:.1f} calls)'}"
    )
    skipped: dict[str, int] = {}
    for table in ("eval_jobs", "session_jobs"):
        sql = f"SELECT evaluator, reason, count(*) FROM {table} WHERE status = 'skipped' GROUP BY evaluator, reason"
        for evaluator, reason, count in query(store, sql):
            skipped[f"{evaluator}/{reason}"] = int(count)
    print(f"   skipped, in the store (jobs): {skipped or 'none'}")
    counted = {}
    for line in metrics.splitlines():
        if line.startswith("toolpath_online_skipped_total{"):
            labels, value = line.rsplit(" ", 1)
            if float(value):
                counted[labels.removeprefix("toolpath_online_skipped_total")] = int(float(value))
    print(f"   skipped, in /metrics (toolpath_online_skipped_total): {counted or 'none'}")
    not_sampled = args.sessions - len(jobs)
    print(f"   sessions outside the sample: {not_sampled:,} of {args.sessions:,} ({not_sampled / args.sessions:.1%}; "
          f"sample_rate {SAMPLE:g})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions of the sessions run")
    parser.add_argument("--rate", type=float, default=150.0, help="turns a second the agent process makes")
    parser.add_argument("--live", type=int, default=100, help="sessions going on at once")
    parser.add_argument("--idle", type=float, default=5.0, help="the session evaluator's idle_seconds")
    parser.add_argument("--budget-share", type=float, default=0.5,
                        help="the judge budget, as a share of what the sampled sessions would cost")  # fmt: skip
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--ingest-spans", type=int, default=50_000, help="spans a row of the ingest rows")
    parser.add_argument("--rounds", type=int, default=2, help="ingest rounds, online off and on alternately")
    parser.add_argument("--connections", type=int, default=4, help="the ingest sender's keep-alive connections")
    parser.add_argument("--batch-size", type=int, help="online.toml's batch_size (default: toolpath's)")
    parser.add_argument("--workers", type=int, default=1, help="toolpath collect --workers (processes)")
    parser.add_argument("--split", action="store_true",
                        help="ingest: also a row with each evaluator alone (what each costs)")  # fmt: skip
    parser.add_argument("--session-tokens", type=float, default=0,
                        help="judge tokens a session costs; given, the ingest rows are left out")  # fmt: skip
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.collect_args = ("--workers", str(args.workers)) if args.workers > 1 else ()
    for name, value in (
        ("--sessions", args.sessions),
        ("--rate", args.rate),
        ("--live", args.live),
        ("--idle", args.idle),
        ("--ingest-spans", args.ingest_spans),
        ("--rounds", args.rounds),
        ("--batch-size", 1 if args.batch_size is None else args.batch_size),
        ("--workers", args.workers),
    ):
        if value <= 0:
            parser.error(f"{name} must be above 0, not {value}")  # fmt: skip
    if not 0 < args.budget_share <= 1:
        parser.error(f"--budget-share must be in (0, 1], not {args.budget_share}")
    if args.live / args.rate >= args.idle:
        parser.error(f"--live / --rate ({args.live / args.rate:g} s between a session's turns) must be below --idle")

    def judge(prompt: str, seen: int) -> Reply:
        ASKED.append(time.monotonic())
        reply = json_reply(rubrics=[{"rubric": "the user's goal was met", "verdict": "yes"}])
        return Reply(reply.text, delay=JUDGE_SECONDS)

    fake = FakeGemini(judge)
    with fake.running(), tempfile.TemporaryDirectory() as tmp:
        os.environ.update(GOOGLE_API_KEY="bench-key", GOOGLE_GEMINI_BASE_URL=fake.url)
        for var in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
            os.environ.pop(var, None)
        cpus = os.cpu_count()
        print(f"toolpath collect --online: evaluators 'turns' ({', '.join(TURN_METRICS)}; every turn) and "
              f"'conversations' ({SESSION_METRIC}, sessions, sample {SAMPLE:g}); fake judge {JUDGE_SECONDS * 1000:.0f} "
              f"ms a call; {cpus} CPUs", flush=True)  # fmt: skip
        tokens_per_session = args.session_tokens or ingest(args, Path(tmp))
        sessions_run(args, Path(tmp), fake, tokens_per_session)


if __name__ == "__main__":
    main()
