"""The session page of a turn of 5,001 spans in headless Chromium: the time from asking for the page to its
waterfall's first row drawn, beside a floor, the same page of a turn of 5 spans.

    python benchmarks/bench_trace_page.py [--repeats 5]

The big turn is the UI tests' (tests/ui/test_big_traces.py: an agent span, 40 steps, 124 tool spans under each).
Each page is opened ``--repeats`` times in a fresh tab of one Chromium and the median printed, with the server's
own time for the HTML (asked over HTTP on 127.0.0.1) and the elements the page holds once drawn.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.ui import browser, serve_ui
from tests.ui.test_big_traces import SESSION, big_trace
from toolpath.model import Invocation
from toolpath.store.spanrecord import STATUS_OK, SpanRecord
from toolpath.store.store import Store

SMALL = "small-trace"
DRAWN = ".wf-row"
"""A row of a waterfall, once the page has drawn it."""


def small_trace() -> tuple[Invocation, list[SpanRecord]]:
    trace, root, t0 = f"{77:032x}", f"{77:016x}", 1_780_000_000 * 10**9
    spans = [SpanRecord(trace, root, None, "invoke_agent planner", 1, t0, t0 + 10**7, STATUS_OK, None, {})]
    spans += [
        SpanRecord(trace, f"{780 + n:016x}", root, f"execute_tool t{n}", 1, t0 + n * 10**6, t0 + (n + 1) * 10**6,
                   STATUS_OK, None, {})
        for n in range(4)
    ]  # fmt: skip
    turn = Invocation(invocation_id=f"{trace}-{root}", session_id=SMALL, trace_id=trace, agent_name="planner",
                      prompt="hi", response="ok", latency_seconds=0.01,
                      started_at=datetime.fromtimestamp(t0 / 1e9, UTC))  # fmt: skip
    return turn, spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        store = Store(f"sqlite:///{folder / 'trace.db'}")
        big, big_spans = big_trace()
        small, small_spans = small_trace()
        store.write([big, small], [*big_spans, *small_spans])
        with serve_ui(store, folder / "evalsets") as url, browser() as chromium:
            for label, session, spans in (("floor: a turn of", SMALL, small_spans), ("a turn of", SESSION, big_spans)):
                address = f"{url}/session?id={session}"
                server, drawn, size, elements = [], [], 0, 0
                for _ in range(args.repeats):
                    began = time.perf_counter()
                    with urllib.request.urlopen(address) as answer:  # 127.0.0.1
                        size = len(answer.read())
                    server.append(time.perf_counter() - began)
                    page = chromium.new_page(viewport={"width": 1280, "height": 900})
                    began = time.perf_counter()
                    page.goto(address)
                    page.wait_for_selector(DRAWN)
                    drawn.append(time.perf_counter() - began)
                    elements = page.evaluate("() => document.getElementsByTagName('*').length")
                    page.close()
                print(
                    f"{label + f' {len(spans):,} spans':<28} drawn in {statistics.median(drawn) * 1000:6.0f} ms "
                    f"(server {statistics.median(server) * 1000:5.0f} ms, {size / 1024:6.0f} KB, {elements:,} elements)"
                )
        store.close()


if __name__ == "__main__":
    main()
