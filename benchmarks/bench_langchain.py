"""Cost toolpath's LangChain handler adds to one LangChain tool call, side by side in one run.

    python benchmarks/bench_langchain.py [--calls 5000] [--repeats 5]

Rows (µs per ``tool.invoke``, median of repeats): the plain call with no callbacks; the call with toolpath
instrumented (its ``execute_tool`` span, arguments, result and call id, with the in-process collector
attached as in production). Calls are made in outer chain runs of 10, as tools run inside agent runs, so the
collector keeps and rebuilds them; the outer run's own cost is spread over its calls in both rows.
Target (issue 4): at most 60 µs added per call.

OpenInference and OpenLLMetry's LangChain instrumentations are measured only where installed, each in a fresh
process (one of them cannot be uninstrumented in-process); they are not project dependencies.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time

from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider


@tool
def get_temp(room: str, unit: str = "C") -> dict:
    """Read a room's thermostat."""
    return {"room": room, "unit": unit, "temperature": 20.5}


CALLS_PER_RUN = 10


def per_call_us(calls: int, repeats: int) -> float:
    """µs per tool call, made as outer runs of CALLS_PER_RUN calls each (as an agent run makes them)."""

    def run(_: object) -> None:
        for _ in range(CALLS_PER_RUN):
            get_temp.invoke({"room": "living", "unit": "C"})

    outer = RunnableLambda(run, name="bench_agent")
    runs = max(1, calls // CALLS_PER_RUN)
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        for _ in range(runs):
            outer.invoke("go")
        times.append((time.perf_counter() - start) / (runs * CALLS_PER_RUN) * 1e6)
    return statistics.median(times)


PEERS = {
    "OpenInference": "from openinference.instrumentation.langchain import LangChainInstrumentor",
    "OpenLLMetry": "from opentelemetry.instrumentation.langchain import LangchainInstrumentor as LangChainInstrumentor",
}


def peer(name: str, calls: int, repeats: int) -> float | None:
    code = f"""
import sys
sys.path.insert(0, {sys.path[0]!r})
{PEERS[name]}
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
LangChainInstrumentor().instrument()
from bench_langchain import per_call_us
print(per_call_us({calls}, {repeats}))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return None
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    trace.set_tracer_provider(TracerProvider())
    import toolpath
    from toolpath.adapters import langchain as tp_langchain

    plain = per_call_us(args.calls, args.repeats)
    toolpath.init(store=False, max_queue=10 * args.calls)
    tp_langchain.instrument()
    traced = per_call_us(args.calls, args.repeats)
    tp_langchain.uninstrument()
    toolpath.shutdown()

    print(f"{args.calls} tool calls x {args.repeats} repeats, median µs per call")
    print(f"{'plain tool.invoke':32}{plain:>10.1f}")
    print(f"{'toolpath handler':32}{traced:>10.1f}   +{traced - plain:.1f} µs ({traced / plain:.2f}x)   target: +60 µs")
    for name in PEERS:
        value = peer(name, args.calls, args.repeats)
        if value is None:
            print(f"{name + ' handler':32}{'not installed here':>10}")
        else:
            print(f"{name + ' handler':32}{value:>10.1f}   +{value - plain:.1f} µs ({value / plain:.2f}x)")


if __name__ == "__main__":
    main()
