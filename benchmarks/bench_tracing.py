"""Cost of tracing one tool call, side by side in one run (µs per call, median of repeats).

    python benchmarks/bench_tracing.py [--calls 20000] [--repeats 7]

Rows:
  bare function              the tool with no tracing at all
  OTel SDK span (floor)      the same function inside `start_as_current_span` with the same attributes
                             (operation, name, type, description, call id, JSON arguments, JSON result)
  @toolpath.tool             the decorated function
  @toolpath.tool, no init    the decorated function before `toolpath.init()` (OpenTelemetry no-op API)

Both traced rows run on the same SDK provider with toolpath's collector attached, as agent runs of
CALLS_PER_RUN tool calls each (the agent span's cost is spread over its calls, the same for both rows), so
they pay the same processor cost; the ratio isolates what the decorator adds over a hand-written span.
Goal: ratio <= 1.3.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

import toolpath
from toolpath.tracer import semconv as sc


def get_weather(city: str, unit: str = "C") -> dict:
    """Current weather for a city."""
    return {"city": city, "unit": unit, "temperature": 21.5, "sky": "clear"}


traced_get_weather = toolpath.tool(get_weather)
_rand = random.Random()


def make_floor() -> Callable[..., dict]:
    tracer = trace.get_tracer("bench.floor")
    static = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "get_weather",
        sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
        sc.GEN_AI_TOOL_DESCRIPTION: "Current weather for a city.",
    }

    def floor(city: str, unit: str = "C") -> dict:
        attrs = dict(static)
        attrs[sc.GEN_AI_TOOL_CALL_ID] = f"call_{_rand.getrandbits(96):024x}"
        attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps({"city": city, "unit": unit})
        with tracer.start_as_current_span("execute_tool get_weather", attributes=attrs) as span:
            result = get_weather(city, unit=unit)
            span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, json.dumps(result))
            return result

    return floor


CALLS_PER_RUN = 10


def per_call_us(fn: Callable[..., dict], calls: int, inside_agent: bool) -> float:
    def run(prompt: str) -> None:
        for _ in range(CALLS_PER_RUN):
            fn("Paris", unit="C")

    runs = max(1, calls // CALLS_PER_RUN)
    agent_run = toolpath.agent(name="bench")(run) if inside_agent else run
    start = time.perf_counter()
    for _ in range(runs):
        agent_run("benchmark")
    return (time.perf_counter() - start) / (runs * CALLS_PER_RUN) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    untraced = {"bare function": [], "@toolpath.tool, no init": []}
    for _ in range(args.repeats):
        untraced["bare function"].append(per_call_us(get_weather, args.calls, inside_agent=False))
        untraced["@toolpath.tool, no init"].append(per_call_us(traced_get_weather, args.calls, inside_agent=False))

    trace.set_tracer_provider(TracerProvider())
    with tempfile.TemporaryDirectory() as folder:
        toolpath.init(store=f"sqlite:///{Path(folder) / 'bench.db'}", max_queue=10 * args.calls)
        floor = make_floor()
        traced = {"OTel SDK span (floor)": [], "@toolpath.tool": []}
        for _ in range(args.repeats):  # interleaved, so drift hits both alike
            traced["OTel SDK span (floor)"].append(per_call_us(floor, args.calls, inside_agent=True))
            toolpath.flush(60)
            traced["@toolpath.tool"].append(per_call_us(traced_get_weather, args.calls, inside_agent=True))
            toolpath.flush(60)
        stats = toolpath.stats()
        toolpath.shutdown()

    rows = {**untraced, **traced}
    medians = {name: statistics.median(values) for name, values in rows.items()}
    print(f"Python {sys.version.split()[0]}, {args.calls} calls x {args.repeats} repeats, median µs per call")
    print(f"{'':28}{'median':>10}{'min':>10}{'max':>10}")
    order = ["bare function", "@toolpath.tool, no init", "OTel SDK span (floor)", "@toolpath.tool"]
    for name in order:
        print(f"{name:28}{medians[name]:>10.2f}{min(rows[name]):>10.2f}{max(rows[name]):>10.2f}")
    ratio = medians["@toolpath.tool"] / medians["OTel SDK span (floor)"]
    print(f"\n@toolpath.tool / floor = {ratio:.2f}x  (goal <= 1.30x)")
    print(f"collector: {stats}")


if __name__ == "__main__":
    main()
