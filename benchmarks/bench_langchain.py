"""Cost toolpath's LangChain handler adds to one LangChain tool call, side by side in one run.

    python benchmarks/bench_langchain.py [--rounds 15] [--calls 500]

Rows (µs per ``tool.invoke``), all in one process with an SDK ``TracerProvider`` that has no processors, as the
peers below are measured:

- the plain call, no callbacks;
- two floors: a do-nothing inline handler (LangChain's own dispatch of callback events), and a minimal handler
  that makes one hand-written SDK span per tool run with the same attributes toolpath records (what any
  OpenTelemetry handler must at least spend);
- toolpath's handler (``execute_tool`` spans with arguments, result and call id, made current while the tool
  runs; an ``invoke_agent`` span per outer run) — the row the goal is about;
- toolpath's handler with ``toolpath.init(store=False)``: the in-process collector attached, whose worker
  thread rebuilds every run on this process's GIL (its CPU time counts: the collector is flushed inside each
  round).

Timed as CPU time of this process (``time.process_time``), not wall time: on a shared machine the wall clock
also counts the time other processes held the cores. The rows run in alternating rounds (``--rounds`` rounds of
``--calls`` calls per row, the order reversed every other round), so a change in the machine's load falls on
every row alike; each row's figure is the median over rounds, and "added" is the median of its per-round
difference from the plain call. Calls are made in outer chain runs of 10, as tools run inside agent runs; the
outer run's own cost is spread over its calls in every row. Goal: at most 60 µs added per call.

OpenInference and OpenLLMetry's LangChain instrumentations are measured only where installed, each in a fresh
process (one of them cannot be uninstrumented in-process), against the plain call timed in that process before
instrumenting; they are not project dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_core.tracers.context import register_configure_hook
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider


@tool
def get_temp(room: str, unit: str = "C") -> dict:
    """Read a room's thermostat."""
    return {"room": room, "unit": unit, "temperature": 20.5}


CALLS_PER_RUN = 10


def per_call_us(calls: int, after: Callable[[], object] | None = None) -> float:
    """CPU µs per tool call over ``calls`` calls, made as outer runs of CALLS_PER_RUN calls each (as an agent run
    makes them); ``after`` (a flush) runs inside the timing."""

    def run(_: object) -> None:
        for _ in range(CALLS_PER_RUN):
            get_temp.invoke({"room": "living", "unit": "C"})

    outer = RunnableLambda(run, name="bench_agent")
    runs = max(1, calls // CALLS_PER_RUN)
    start = time.process_time_ns()
    for _ in range(runs):
        outer.invoke("go")
    if after is not None:
        after()
    return (time.process_time_ns() - start) / (runs * CALLS_PER_RUN) / 1e3


def alternating(rows: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each row timed once per round, the order reversed every other round; one warm-up round first."""
    for timed in rows.values():
        timed()
    times: dict[str, list[float]] = {name: [] for name in rows}
    order = list(rows)
    for index in range(rounds):
        for name in order if index % 2 == 0 else reversed(order):
            times[name].append(rows[name]())
    return times


PEERS = {
    "OpenInference": "from openinference.instrumentation.langchain import LangChainInstrumentor",
    "OpenLLMetry": "from opentelemetry.instrumentation.langchain import LangchainInstrumentor as LangChainInstrumentor",
}


def peer(name: str, calls: int, rounds: int) -> tuple[float, float] | None:
    """(plain, instrumented) CPU µs per call in a fresh process, medians of ``rounds`` rounds each."""
    code = f"""
import statistics, sys
sys.path.insert(0, {sys.path[0]!r})
{PEERS[name]}
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
from bench_langchain import per_call_us
per_call_us({calls})
plain = statistics.median(per_call_us({calls}) for _ in range({rounds}))
LangChainInstrumentor().instrument()
per_call_us({calls})
print(plain, statistics.median(per_call_us({calls}) for _ in range({rounds})))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return None
    plain, instrumented = result.stdout.strip().splitlines()[-1].split()
    return float(plain), float(instrumented)


class _Floor(BaseCallbackHandler):
    """The least an OpenTelemetry LangChain handler does: one SDK span per tool run, same attributes."""

    run_inline = True

    def __init__(self) -> None:
        super().__init__()
        self.tracer = trace.get_tracer("floor")
        self.open: dict = {}

    def on_tool_start(self, serialized, input_str, *, run_id, inputs=None, tool_call_id=None, **kwargs):
        name = serialized["name"]
        self.open[run_id] = self.tracer.start_span(
            f"execute_tool {name}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.description": serialized.get("description") or "",
                "gen_ai.tool.call.id": tool_call_id or "call_0",
                "gen_ai.tool.call.arguments": json.dumps(inputs),
            },
        )

    def on_tool_end(self, output, *, run_id, **kwargs):
        span = self.open.pop(run_id)
        span.set_attribute("gen_ai.tool.call.result", json.dumps(output))
        span.end()


class _HookSlot:
    """What ``register_configure_hook`` reads: a handler attached to every run while set."""

    def __init__(self) -> None:
        self.handler: BaseCallbackHandler | None = None

    def get(self) -> BaseCallbackHandler | None:
        return self.handler


GOAL_ADDED_US = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    parser.add_argument("--calls", type=int, default=500, help="tool calls per row in each round (default 500)")
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < CALLS_PER_RUN:
        parser.error(f"--rounds must be at least 1 and --calls at least {CALLS_PER_RUN}")

    load_before = os.getloadavg()[0]
    trace.set_tracer_provider(TracerProvider())
    import toolpath
    from toolpath.adapters import langchain as tp_langchain

    slot = _HookSlot()
    register_configure_hook(slot, True, BaseCallbackHandler)  # type: ignore[arg-type]

    class Nothing(BaseCallbackHandler):
        run_inline = True

    def with_handler(handler: BaseCallbackHandler | None, after: Callable[[], object] | None = None) -> float:
        slot.handler = handler
        try:
            return per_call_us(args.calls, after)
        finally:
            slot.handler = None

    ours = tp_langchain.ToolpathCallbackHandler()
    handlers: dict[str, BaseCallbackHandler | None] = {
        "plain": None,
        "dispatch": Nothing(),
        "floor": _Floor(),
        "ours": ours,
    }
    times = alternating({name: (lambda h=h: with_handler(h)) for name, h in handlers.items()}, args.rounds)
    # the in-process collector, alternating with the plain call (a plain call makes no span for it to take)
    toolpath.init(store=False, max_queue=10 * args.calls)
    collected = alternating(
        {"plain": lambda: with_handler(None), "collected": lambda: with_handler(ours, toolpath.flush)}, args.rounds
    )
    toolpath.shutdown()

    def added(rows: dict[str, list[float]], name: str) -> float:
        return statistics.median(value - plain for value, plain in zip(rows[name], rows["plain"], strict=True))

    plain = statistics.median(times["plain"])
    load_after = os.getloadavg()[0]

    def row(label: str, value: float, extra: float, note: str = "") -> None:
        print(f"{label:44}{value:>8.1f}   {extra:+7.1f} µs   {note}")

    print(f"{args.rounds} alternating rounds x {args.calls} tool calls per row; CPU µs per call, medians")
    print(f"(load average {load_before:.2f} before, {load_after:.2f} after, {os.cpu_count()} cores)")
    print(f"{'':44}{'per call':>8}   {'added':>10}")
    print(f"{'plain tool.invoke':44}{plain:>8.1f}")
    row("floor: do-nothing handler (dispatch)", statistics.median(times["dispatch"]), added(times, "dispatch"))
    row("floor: one hand-written SDK span per tool", statistics.median(times["floor"]), added(times, "floor"))
    ours_added = added(times, "ours")
    verdict = "reached" if ours_added <= GOAL_ADDED_US else "NOT reached"
    row("toolpath handler", statistics.median(times["ours"]), ours_added, f"goal: ≤ +{GOAL_ADDED_US:.0f} µs, {verdict}")
    row(
        "toolpath handler + in-process collector",
        statistics.median(collected["collected"]),
        added(collected, "collected"),
    )
    for name in PEERS:
        measured = peer(name, args.calls, args.rounds)
        if measured is None:
            print(f"{name + ' handler':44}{'not installed here':>8}")
        else:
            row(name + " handler", measured[1], measured[1] - measured[0], "(its own process)")


if __name__ == "__main__":
    main()
