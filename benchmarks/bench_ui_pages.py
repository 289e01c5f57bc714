"""The UI's statistics pages over a large store: /errors, /tools (and a chosen tool's calls) and the sessions list,
all time and over the presets, each page's server time beside a floor.

    python benchmarks/bench_ui_pages.py [--invocations 100000] [--repeats 3] [--store sqlite|postgresql|both]

The store is the UI tests' large one (tests/helpers/ui.py ``bulk_store``: sessions of 5 turns, one tool call and
one model-call span a turn, every tenth turn failed), its calls then varied in one UPDATE: 8 tools, latencies from
0 to 999 ms, every 50th call failed with one of three errors. Its turns are a second apart, the newest an hour
before now, so that the presets take parts of it: 15 min and 1 h hold 900 and 3,600 turns, 24 h and 7 d all.

Each page is asked ``--repeats`` times through the app (Starlette's test client, no network) and its median time
printed. The floor is what any page over every call must do: one pass over the calls joined to their turns
(``SELECT COUNT(*), MAX(end_time - start_time)``), timed the same way.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolpath.store.store import Store

PAGES = (
    "/errors",
    "/errors?last=15m",
    "/errors?last=1h",
    "/errors?last=7d&hide_eval=1",
    "/tools",
    "/tools?last=1h",
    "/tools?tool=tool-3",
    "/tools?sort=p95&hide_eval=1",
    "/sessions",
    "/sessions?last=1h",
)


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def fill(url: str, invocations: int) -> Store:
    from sqlalchemy import text

    from tests.helpers.ui import bulk_store

    store = bulk_store(url, invocations, model_spans=True)
    newest = 1_780_000_000 * 10**9 + (invocations - 1) * 10**9
    shift = time.time_ns() - 60 * 10**9 - newest  # the newest turn a minute ago
    n = f"CAST(substr(invocation_id, 2) AS {'INTEGER' if store.dialect == 'sqlite' else 'BIGINT'})"
    with store.engine.begin() as conn:
        for table, column in (("invocations", "started_at"), ("sessions", "first_started_at"),
                              ("sessions", "last_started_at"), ("spans", "start_time"), ("spans", "end_time"),
                              ("online_results", "created_at"), ("tool_calls", "start_time")):  # fmt: skip
            conn.execute(text(f"UPDATE {table} SET {column} = {column} + :shift"), {"shift": shift})
        conn.execute(text(
            f"UPDATE tool_calls SET name = 'tool-' || CAST(({n} % 8) AS TEXT), "
            f"end_time = start_time + (({n} * 7919) % 1000) * 1000000, "
            f"error = CASE WHEN {n} % 50 = 0 THEN CASE {n} % 3 WHEN 0 THEN 'TimeoutError: slow' "
            f"WHEN 1 THEN 'ValueError: bad' ELSE 'KeyError: id' END END"
        ))  # fmt: skip
        if store.dialect == "postgresql":
            conn.execute(text("ANALYZE"))
    return store


def measure(label: str, url: str, invocations: int, repeats: int, folder: Path) -> None:
    from sqlalchemy import text
    from starlette.testclient import TestClient

    from toolpath.ui import create_app

    began = time.perf_counter()
    store = fill(url, invocations)
    print(f"{label}: {invocations:,} turns inserted and varied in {time.perf_counter() - began:.1f} s")
    client = TestClient(create_app(store, evalsets=folder / "e", agents={}), base_url="http://127.0.0.1:8765")

    def scan() -> object:
        with store.engine.connect() as conn:
            return conn.execute(text(
                "SELECT COUNT(*), MAX(tool_calls.end_time - tool_calls.start_time) FROM tool_calls "
                "JOIN invocations ON invocations.invocation_id = tool_calls.invocation_id")).all()  # fmt: skip

    print(f"  {'floor: one pass over the calls and their turns':<48}{median_ms(scan, repeats):>8.0f} ms")
    for path in PAGES:

        def get(path: str = path) -> None:
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])

        print(f"  {path:<48}{median_ms(get, repeats):>8.0f} ms")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invocations", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if args.store in ("sqlite", "both"):
            measure("SQLite", f"sqlite:///{folder / 'bench.db'}", args.invocations, args.repeats, folder)
        if args.store in ("postgresql", "both"):
            from tests.helpers.pgserver import PostgresServer

            server = PostgresServer.find()
            if server is None:
                print("PostgreSQL: not installed here (apt-get install -y postgresql)")
                return
            with server.running() as url:
                measure("PostgreSQL", url, args.invocations, args.repeats, folder)


if __name__ == "__main__":
    main()
