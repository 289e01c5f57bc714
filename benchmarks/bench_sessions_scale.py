"""The sessions list and its neighbours at 100,000 turns, the store built through the write path: each page's
server time beside a floor.

    python benchmarks/bench_sessions_scale.py [--turns 100000] [--repeats 3] [--store sqlite|postgresql|both]

The store is written with ``Store.write`` (what the collector's ingest transaction ends in: invocations, their tool
calls, and each turn's usage and user kept from its spans), 500 turns a transaction: sessions of 5 turns, each turn
an agent span with a model-call span below it (input and output tokens, one of three models, every seventh call
reporting its cost) and one tool call, every tenth turn failed, 40 users named on the agent spans (``user.id``).
The write rate is printed.

Each page is asked ``--repeats`` times through the app (Starlette's test client, no network) and its median time
printed, beside the floor: one pass over the turns (``SELECT COUNT(*), SUM(input_tokens) FROM invocations``),
timed the same way. The cost order prices two of the models by a price typed on the Prices page and the third by
genai-prices'.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolpath.model import Invocation, ToolCall, invocation_key
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store

PAGES = (
    "/sessions",
    "/sessions?agent=agent-1&failures=1",
    "/sessions?sort=cost&order=desc",
    "/sessions?sort=tokens&order=desc",
    "/sessions?q=garage",
    "/sessions?user=user-7",
    "/sessions?user=user-7&sort=cost&order=desc",
    "/tools",
    "/errors",
)
MODELS = ("gpt-4o", "model-a", "model-b")
BATCH = 500


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def turn(n: int, start_ns: int) -> tuple[Invocation, list[SpanRecord]]:
    trace, agent, call = f"{n + 1:032x}", f"{n + 1:016x}", f"{n + 1 + 10**9:016x}"
    begin = start_ns + n * 10**9
    usage: dict[str, object] = {"gen_ai.request.model": MODELS[n % 3], "gen_ai.usage.input_tokens": n % 997,
                                "gen_ai.usage.output_tokens": n % 89}  # fmt: skip
    if n % 7 == 0:
        usage["gen_ai.usage.cost.total"] = n % 13 / 1000
    spans = [
        SpanRecord(trace, agent, None, "invoke_agent", 1, begin, begin + 5 * 10**8,
                   attributes={"user.id": f"user-{n // 5 % 40}"}),
        SpanRecord(trace, call, agent, "chat", 3, begin + 1, begin + 10**8, attributes=usage),
    ]  # fmt: skip
    failed = n % 10 == 0
    invocation = Invocation(
        invocation_id=invocation_key(trace, agent), session_id=f"s{n // 5:06d}", trace_id=trace,
        agent_name=f"agent-{n // 5 % 3}", prompt=f"request {n} about the {'kitchen' if n % 7 else 'garage'}",
        response=f"done {n}", latency_seconds=0.5, failure=int(failed), error="ValueError: no" if failed else None,
        started_at=datetime.fromtimestamp(begin / 1e9, tz=UTC),
        tool_calls=[ToolCall(name=f"tool-{n % 8}", args={"n": n}, result={"ok": True},
                             error="KeyError: id" if n % 50 == 0 else None, start_time=begin, end_time=begin + 10**7)],
    )  # fmt: skip
    return invocation, spans


def fill(url: str, turns: int) -> Store:
    store = Store(url)
    start_ns = time.time_ns() - turns * 10**9
    for first in range(0, turns, BATCH):
        made = [turn(n, start_ns) for n in range(first, min(turns, first + BATCH))]
        store.write([inv for inv, _ in made], [span for _, spans in made for span in spans])
    if store.dialect == "postgresql":
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
    return store


def measure(label: str, url: str, turns: int, repeats: int, folder: Path) -> None:
    from sqlalchemy import text
    from starlette.testclient import TestClient

    from toolpath.store.usage import set_price
    from toolpath.ui import create_app

    began = time.perf_counter()
    store = fill(url, turns)
    took = time.perf_counter() - began
    print(f"{label}: {turns:,} turns ({2 * turns:,} spans) written in {took:.1f} s, {turns / took:,.0f} turns/s")
    set_price(store, "model-a", 1.0, 4.0)
    set_price(store, "model-b", 3.0, 15.0)
    client = TestClient(create_app(store, evalsets=folder / "e", agents={}), base_url="http://127.0.0.1:8765")

    def scan() -> object:
        with store.engine.connect() as conn:
            return conn.execute(text("SELECT COUNT(*), SUM(input_tokens) FROM invocations")).all()

    print(f"  {'floor: one pass over the turns':<48}{median_ms(scan, repeats):>8.0f} ms")
    for path in PAGES:

        def get(path: str = path) -> None:
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])

        print(f"  {path:<48}{median_ms(get, repeats):>8.0f} ms")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if args.store in ("sqlite", "both"):
            measure("SQLite", f"sqlite:///{folder / 'bench.db'}", args.turns, args.repeats, folder)
        if args.store in ("postgresql", "both"):
            from tests.helpers.pgserver import PostgresServer

            server = PostgresServer.find()
            if server is None:
                print("PostgreSQL: not installed here (apt-get install -y postgresql)")
                return
            with server.running() as url:
                measure("PostgreSQL", url, args.turns, args.repeats, folder)


if __name__ == "__main__":
    main()
