"""The agent-side queue's memory is bounded by its size setting: when the store cannot keep up (its writer is
stuck), an agent making many tool calls with large arguments holds at most ``max_queue`` spans, each with values
cut to ``max_value_length``, and drops (and counts) the rest — its memory follows the settings, not the traffic."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, sys, threading, tracemalloc
    import toolpath
    from toolpath.collector.in_process import InProcessCollector

    stuck = threading.Event()
    InProcessCollector._drain = lambda self: stuck.wait()  # the store's writer never gets through

    max_queue, calls = int(sys.argv[1]), int(sys.argv[2])
    toolpath.init(store=sys.argv[3], max_queue=max_queue, max_value_length=4096)
    big = "x" * 1_000_000

    @toolpath.tool
    def lookup(query: str) -> str:
        return query

    @toolpath.agent(name="busy")
    def busy(prompt: str, n: int) -> int:
        return sum(len(lookup(big)) for _ in range(n))

    busy("warm up", 1)  # imports, caches and the first spans, before the baseline
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    busy("go", calls)
    grown = tracemalloc.get_traced_memory()[0] - before
    print(json.dumps({"grown": grown, "dropped": toolpath.stats()["spans_dropped"]}))
    sys.stdout.flush()
    import os; os._exit(0)  # the writer is stuck on purpose: no flush at exit
    """
)


def held(tmp_path, max_queue: int, calls: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(max_queue), str(calls), f"sqlite:///{tmp_path / f'q{max_queue}.db'}"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("max_queue", [100, 1000])
def test_a_stuck_store_costs_at_most_max_queue_cut_spans(tmp_path, max_queue: int) -> None:
    calls = 5_000
    result = held(tmp_path, max_queue, calls)
    per_span = 3 * 4096 + 16_384  # two cut values (argument, result) and the span's own objects, generously
    assert result["grown"] < max_queue * per_span, result  # 5,000 uncut spans would hold 10 GB
    assert result["grown"] > max_queue * 2 * 4096, result  # the queue did fill: it holds the cut values
    assert result["dropped"] >= calls + 1 - max_queue
