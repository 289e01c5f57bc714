"""The store of issue 48's debugging day, built the way production builds one: OTLP/HTTP protobuf exports sent to
a real ``toolpath collect`` on 127.0.0.1 (spans in the order they end, 32 turns going on at once, so most requests
end traces begun in earlier ones; one or more sender processes), online scoring on in the collector, then two eval
runs a day apart where the newer regressed.

The traffic (every figure follows from the turn's number, so a test knows what each page must say):

- sessions of 5 turns over six days: the newest :func:`Day.recent` sessions in the last half hour, the others
  between six days and two hours ago (nothing in between, so "the last hour" is the same set however long a run
  takes); agent ``agent-{s % 3}``, user ``user-{s % 40}`` (``user.id`` on the agent span);
- each turn an agent span, a model call (one of three models, tokens, every seventh reporting its cost) and tool
  spans: ``tool-{n % 6}`` (20–70 ms); every third turn ``charge_card``, half of whose calls fail with a
  ``TimeoutError`` exception; every fourth ``fetch_report`` (about 0.9 s: the slowest); every 25th ``send_mail``,
  failing with a ``ValueError``; every 20th turn fails itself (``RuntimeError``);
- four turns of their own sessions, the newest of all: a turn of 80 tool calls (the collector keeps
  :data:`KEPT`), a trace of 313 spans (10 steps of 30 spans, one failed, one holding :data:`NEEDLE`), a turn that
  reported a cost of 50 (the most expensive session) and a turn whose tool result holds :data:`SEARCHED`.
"""

from __future__ import annotations

import http.client
import random
import struct
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.collector import TOKEN, Collector
from toolpath.store.store import Store

MS = 1_000_000
SECOND = 1000 * MS
HOUR = 3600 * SECOND
MODELS = ("gpt-4o", "model-a", "model-b")
CAPPED, BIG, COSTLY, SEARCH = "capped-turn", "big-trace", "costly-turn", "searched-turn"
SPECIAL = (CAPPED, BIG, COSTLY, SEARCH)
"""The sessions of one turn each, newest last."""
SENT, KEPT = 80, 50
"""The capped turn's tool calls, and the collector's ``--max-tool-calls``."""
STEPS, CHILDREN = 10, 30
FAILED_STEP, FAILED_CHILD = 6, 17
FOUND_STEP, FOUND_CHILD = 3, 11
NEEDLE = "needle-7731"
SEARCHED = "quokka-ledger"
COST = 50.0
TIMEOUT = "TimeoutError: the card service did not answer"
BASELINE, NEWER = "v1-baseline", "v2-newer"
CASES, REGRESSED = 12, 5
SPANS_PER_BODY = 512
"""The OTel SDK's BatchSpanProcessor exports up to 512 spans at a time."""


@dataclass(frozen=True)
class Tool:
    name: str
    took_ms: int
    error: tuple[str, str] | None = None
    result: str = '{"ok": true}'


@dataclass
class Span:
    span_id: int
    parent: int | None
    name: str
    start: int
    end: int
    attributes: dict[str, Any] = field(default_factory=dict)
    error: tuple[str, str] | None = None


@dataclass(frozen=True)
class Day:
    """A debugging day's traffic of :attr:`sessions` sessions of 5 turns, and :data:`SPECIAL`'s four, ending at
    :attr:`now_ns`."""

    sessions: int
    now_ns: int

    @classmethod
    def of(cls, turns: int, now_ns: int | None = None) -> Day:
        return cls(max(12, (turns - len(SPECIAL)) // 5), now_ns or time.time_ns())

    @property
    def turns(self) -> int:
        return 5 * self.sessions + len(SPECIAL)

    @property
    def recent(self) -> int:
        """The newest sessions, all in the last half hour."""
        return max(6, self.sessions // 200)

    def session(self, n: int) -> str:
        return SPECIAL[n - 5 * self.sessions] if n >= 5 * self.sessions else f"s{n // 5:06d}"

    def agent(self, n: int) -> str:
        return "agent-0" if n >= 5 * self.sessions else f"agent-{n // 5 % 3}"

    def user(self, n: int) -> str:
        return "user-0" if n >= 5 * self.sessions else f"user-{n // 5 % 40}"

    def started(self, n: int) -> int:
        s, old = n // 5, self.sessions - self.recent
        if n >= 5 * self.sessions:  # the special turns: the last five minutes
            base = self.now_ns - (5 - (n - 5 * self.sessions)) * 60 * SECOND
        elif s >= old:  # the last half hour
            base = self.now_ns - 30 * 60 * SECOND + (s - old) * (25 * 60 * SECOND // self.recent)
        else:  # six days ago to two hours ago
            base = self.now_ns - 6 * 24 * HOUR + s * ((6 * 24 - 2) * HOUR // max(1, old))
        return base + n % 5 * 2 * SECOND

    def tools(self, n: int) -> list[Tool]:
        if n >= 5 * self.sessions:
            kind = self.session(n)
            if kind == CAPPED:
                return [Tool("poll_status", 5) for _ in range(SENT)]
            return [Tool("lookup", 30, result=f'"the ledger says {SEARCHED} is settled"' if kind == SEARCH else "{}")]
        tools = [Tool(f"tool-{n % 6}", 20 + n % 6 * 10, result=f'{{"ok": true, "n": {n}}}')]
        if n % 3 == 0:
            tools.append(Tool("charge_card", 60, ("TimeoutError", TIMEOUT.partition(": ")[2]) if n % 6 == 0 else None))
        if n % 4 == 0:
            tools.append(Tool("fetch_report", 900 + n % 50))
        if n % 25 == 0:
            tools.append(Tool("send_mail", 40, ("ValueError", "no such address")))
        return tools

    def failed(self, n: int) -> bool:
        return n < 5 * self.sessions and n % 20 == 7

    def ids(self, n: int) -> tuple[bytes, int]:
        """The trace id of turn ``n`` and the first of its span numbers (its agent span's)."""
        return b"\x7d\xa1" + bytes(6) + struct.pack(">Q", n + 1), (n + 1) << 12

    def spans(self, n: int) -> list[Span]:
        """Turn ``n``'s spans, its agent span first."""
        _, root = self.ids(n)
        begin, tools = self.started(n), self.tools(n)
        took = sum(t.took_ms for t in tools) * MS + 20 * MS
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": self.agent(n),
                      "gen_ai.conversation.id": self.session(n), "user.id": self.user(n),
                      "gen_ai.input.messages": _message("user", f"request {n}: settle the {_topic(n)} account"),
                      "gen_ai.output.messages": _message("assistant", f"done {n}")}  # fmt: skip
        error = ("RuntimeError", "the planner gave up") if self.failed(n) else None
        spans = [Span(root, None, f"invoke_agent {self.agent(n)}", begin, begin + took, attributes, error)]
        usage: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": MODELS[n % 3],
                                 "gen_ai.usage.input_tokens": 100 + n % 900, "gen_ai.usage.output_tokens": 10 + n % 90}  # fmt: skip
        if n % 7 == 0 or self.session(n) == COSTLY:
            usage["gen_ai.usage.cost.total"] = COST if self.session(n) == COSTLY else n % 13 / 1000
        spans.append(Span(root + 1, root, f"chat {MODELS[n % 3]}", begin + MS, begin + 10 * MS, usage))
        at = begin + 10 * MS
        for i, tool in enumerate(tools):
            call = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.name,
                    "gen_ai.tool.call.id": f"call-{n}-{i}", "gen_ai.tool.call.arguments": f'{{"n": {n}, "i": {i}}}',
                    "gen_ai.tool.call.result": tool.result}  # fmt: skip
            spans.append(Span(root + 2 + i, root, f"execute_tool {tool.name}", at, at + tool.took_ms * MS, call,
                              tool.error))  # fmt: skip
            at += tool.took_ms * MS
        if self.session(n) == BIG:
            spans += self._steps(n, begin)
        return spans

    def _steps(self, n: int, begin: int) -> list[Span]:
        _, root = self.ids(n)
        out = []
        for step in range(STEPS):
            at = begin + 100 * MS + step * 40 * MS
            out.append(Span(self.step_id(n, step), root, f"step {step}", at, at + 35 * MS))
            for child in range(CHILDREN):
                failed = (step, child) == (FAILED_STEP, FAILED_CHILD)
                found = {"app.chunk.ref": NEEDLE} if (step, child) == (FOUND_STEP, FOUND_CHILD) else {}
                out.append(Span(self.child_id(n, step, child), self.step_id(n, step),
                                "retrieve broken chunk" if failed else f"retrieve {step}.{child}", at + child * MS,
                                at + child * MS + MS // 2, found, ("IndexError", "chunk out of range") if failed else None))  # fmt: skip
        return out

    def step_id(self, n: int, step: int) -> int:
        return self.ids(n)[1] + 100 + step * (CHILDREN + 1)

    def child_id(self, n: int, step: int, child: int) -> int:
        return self.step_id(n, step) + 1 + child

    def tool_span(self, n: int, tool: str) -> int:
        """The span number of turn ``n``'s call of ``tool``."""
        return self.ids(n)[1] + 2 + [t.name for t in self.tools(n)].index(tool)

    def special(self, name: str) -> int:
        """The turn number of one of :data:`SPECIAL`."""
        return 5 * self.sessions + SPECIAL.index(name)

    def failing_charges(self, agent: str) -> list[int]:
        """The turns whose ``charge_card`` call failed, of ``agent``'s sessions, oldest first."""
        return [n for n in range(0, 5 * self.sessions, 6) if self.agent(n) == agent]

    def latest_failing_charge(self) -> int:
        return max(range(0, 5 * self.sessions, 6))

    def sessions_of(self, user: str) -> int:
        regular = sum(1 for s in range(self.sessions) if f"user-{s % 40}" == user)
        return regular + (len(SPECIAL) if user == "user-0" else 0)

    def last_hour(self) -> set[str]:
        return {f"s{s:06d}" for s in range(self.sessions - self.recent, self.sessions)} | set(SPECIAL)


def hex_id(number: int) -> str:
    return f"{number:016x}"


def _topic(n: int) -> str:
    return ("kitchen", "garage", "garden", "attic")[n % 4]


def _message(role: str, text: str) -> str:
    return f'[{{"role": "{role}", "parts": [{{"type": "text", "content": "{text}"}}]}}]'


def finish_order(day: Day, turns: range | list[int], seed: int) -> Iterator[tuple[int, Span]]:
    """The spans of ``turns`` in the order they end, 32 turns going on at once (a turn's spans from the last
    started to its agent span, which ends last)."""
    rng = random.Random(seed)
    waiting = iter(turns)
    running: list[tuple[int, list[Span]]] = []
    while True:
        while len(running) < 32 and (n := next(waiting, None)) is not None:
            running.append((n, day.spans(n)))
        if not running:
            return
        pick = rng.randrange(len(running))
        n, spans = running[pick]
        yield n, spans.pop()
        if not spans:
            running.pop(pick)


def bodies(day: Day, turns: range | list[int], seed: int = 0) -> Iterator[tuple[int, bytes]]:
    """OTLP/protobuf exports of up to :data:`SPANS_PER_BODY` spans in finish order: (spans, body)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    order = finish_order(day, turns, seed)
    while True:
        request = ExportTraceServiceRequest()
        resource = request.resource_spans.add()
        resource.resource.attributes.extend(_attributes({"service.name": "debugging-day"}))
        scope = resource.scope_spans.add()
        scope.scope.name = "toolpath.tests"
        count = 0
        for n, span in order:
            trace, _ = day.ids(n)
            added = scope.spans.add(trace_id=trace, span_id=struct.pack(">Q", span.span_id), name=span.name, kind=1,
                                    start_time_unix_nano=span.start, end_time_unix_nano=span.end)  # fmt: skip
            if span.parent is not None:
                added.parent_span_id = struct.pack(">Q", span.parent)
            added.attributes.extend(_attributes(span.attributes))
            if span.error is not None:
                added.status.code, added.status.message = 2, span.error[1]
                event = added.events.add(name="exception", time_unix_nano=span.end)
                event.attributes.extend(
                    _attributes({"exception.type": span.error[0], "exception.message": span.error[1]})
                )
            count += 1
            if count == SPANS_PER_BODY:
                break
        if count == 0:
            return
        yield count, request.SerializeToString()


def _attributes(values: dict[str, Any]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    out = []
    for key, value in values.items():
        if isinstance(value, str):
            out.append(KeyValue(key=key, value=AnyValue(string_value=value)))
        elif isinstance(value, int):
            out.append(KeyValue(key=key, value=AnyValue(int_value=value)))
        else:
            out.append(KeyValue(key=key, value=AnyValue(double_value=float(value))))
    return out


def send(url: str, day: Day, share: int, senders: int) -> int:
    """Post every ``senders``-th turn of ``day`` from ``share`` on, one export at a time over a kept-alive
    connection (an export answered 503 or 429 is posted again); the spans sent."""
    host, _, port = url.removeprefix("http://").partition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    headers = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}
    sent = 0
    for count, body in bodies(day, range(share, day.turns, senders), seed=share):
        for attempt in range(600):
            connection.request("POST", "/v1/traces", body, headers)
            reply = connection.getresponse()
            reply.read()
            if reply.status < 300:
                break
            if reply.status not in (429, 503):
                raise RuntimeError(f"the collector answered {reply.status} to an export")
            time.sleep(min(1.0, 0.05 * (attempt + 1)))
        else:
            raise RuntimeError("the collector stayed busy for minutes")
        sent += count
    connection.close()
    return sent


@dataclass(frozen=True)
class Built:
    store_url: str
    day: Day
    spans: int
    seconds: float
    """From the first export to the last one answered (each answer: its spans and turns committed)."""
    scores: int


ONLINE = 'metrics = ["tool_error_rate", "tool_call_count"]\nsample_rate = {rate}\npoll_seconds = 0.1\n'


def build(folder: Path, day: Day, store_url: str | None = None, senders: int = 1, sample_rate: float = 1.0) -> Built:
    """:func:`send` ``day`` to a ``toolpath collect`` over ``store_url`` (SQLite in ``folder`` by default) with
    online scoring of a ``sample_rate`` of the turns; wait for the scores; then write the two eval runs."""
    (folder / "online.toml").write_text(ONLINE.format(rate=sample_rate))
    collector = Collector(folder, store_url, "--max-tool-calls", str(KEPT), "--online", str(folder / "online.toml"))
    collector.start()
    try:
        began = time.perf_counter()
        if senders == 1:
            spans = send(collector.url, day, 0, 1)
        else:
            with ProcessPoolExecutor(senders) as pool:
                shares = pool.map(send, [collector.url] * senders, [day] * senders, range(senders), [senders] * senders)
                spans = sum(shares)
        took = time.perf_counter() - began
        store = collector.store()
        try:
            scores = _scored(store)
            write_eval_runs(store, day)
        finally:
            store.close()
    finally:
        collector.stop()
    return Built(collector.store_url, day, spans, took, scores)


def _scored(store: Store, timeout: float = 600.0) -> int:
    """Wait until no online job is pending or claimed; the results stored."""
    from sqlalchemy import func, select

    from toolpath.store import schema as t
    from toolpath.store.job_status import UNFINISHED

    deadline = time.monotonic() + timeout
    with store.engine.connect() as conn:
        while time.monotonic() < deadline:
            left = conn.execute(select(func.count()).where(t.eval_jobs.c.status.in_([s.value for s in UNFINISHED])))
            done = conn.execute(select(func.count()).select_from(t.online_results)).scalar_one()
            conn.rollback()
            if left.scalar_one() == 0 and done:
                return int(done)
            time.sleep(0.5)
    raise RuntimeError("the online jobs did not finish")


def write_eval_runs(store: Store, day: Day) -> None:
    """:data:`BASELINE` (every case passes) and, a day later, :data:`NEWER` (the first :data:`REGRESSED` cases
    fail: exact match 0)."""
    for age, (run_id, broken) in enumerate([(BASELINE, 0), (NEWER, REGRESSED)]):
        started = day.now_ns - (2 - age) * 24 * HOUR
        scores = [{"trajectory_exact_match": float(case >= broken)} for case in range(CASES)]
        run = {"run_id": run_id, "kind": "dataset", "dataset": "checkout.jsonl", "agent": "shop:agent",
               "started_at": started, "finished_at": started + SECOND, "row_count": CASES, "failed_count": broken,
               "metrics": {"names": ["trajectory_exact_match"],
                           "rules": {"trajectory_exact_match": {"threshold": 1.0, "lower_is_better": False, "best": None}}},
               "summary": {"trajectory_exact_match/mean": (CASES - broken) / CASES}}  # fmt: skip
        rows = [{"run_id": run_id, "position": case, "case_id": f"checkout-{case:02d}", "invocation_id": None,
                 "status": None, "scores": score, "row": {"prompt": f"checkout {case}"}}
                for case, score in enumerate(scores)]  # fmt: skip
        store.write_eval_run(run, rows)
