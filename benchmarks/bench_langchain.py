"""Cost toolpath's LangChain handler adds to one LangChain tool call, side by side in one run.

    python benchmarks/bench_langchain.py [--calls 5000] [--repeats 5]

Rows (µs per ``tool.invoke``, median of repeats), all in one process with an SDK ``TracerProvider`` that has no
processors, as the peers below are measured:

- the plain call, no callbacks;
- two floors: a do-nothing inline handler (LangChain's own dispatch of callback events), and a minimal handler
  that makes one hand-written SDK span per tool run with the same attributes toolpath records (what any
  OpenTelemetry handler must at least spend);
- toolpath's handler (``execute_tool`` spans with arguments, result and call id, made current while the tool
  runs; an ``invoke_agent`` span per outer run) — the row the goal is about;
- toolpath's handler with ``toolpath.init(store=False)``: the in-process collector attached, whose worker
  thread rebuilds every run on this process's GIL.

Calls are made in outer chain runs of 10, as tools run inside agent runs; the outer run's own cost is spread
over its calls in every row. Goal: at most 60 µs added per call.

OpenInference and OpenLLMetry's LangChain instrumentations are measured only where installed, each in a fresh
process (one of them cannot be uninstrumented in-process); they are not project dependencies.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    trace.set_tracer_provider(TracerProvider())
    import toolpath
    from toolpath.adapters import langchain as tp_langchain

    slot = _HookSlot()
    register_configure_hook(slot, True, BaseCallbackHandler)  # type: ignore[arg-type]

    def with_handler(handler: BaseCallbackHandler) -> float:
        slot.handler = handler
        try:
            return per_call_us(args.calls, args.repeats)
        finally:
            slot.handler = None

    plain = per_call_us(args.calls, args.repeats)

    class Nothing(BaseCallbackHandler):
        run_inline = True

    dispatch = with_handler(Nothing())
    floor = with_handler(_Floor())
    tp_langchain.instrument()
    ours = per_call_us(args.calls, args.repeats)
    toolpath.init(store=False, max_queue=10 * args.calls)
    collected = per_call_us(args.calls, args.repeats)
    tp_langchain.uninstrument()
    toolpath.shutdown()

    def row(label: str, value: float, note: str = "") -> None:
        print(f"{label:44}{value:>8.1f}   +{value - plain:6.1f} µs ({value / plain:.2f}x)   {note}")

    print(f"{args.calls} tool calls x {args.repeats} repeats, median µs per call")
    print(f"{'plain tool.invoke':44}{plain:>8.1f}")
    row("floor: do-nothing handler (dispatch)", dispatch)
    row("floor: one hand-written SDK span per tool", floor)
    row("toolpath handler", ours, "goal: +60 µs")
    row("toolpath handler + in-process collector", collected)
    for name in PEERS:
        value = peer(name, args.calls, args.repeats)
        if value is None:
            print(f"{name + ' handler':44}{'not installed here':>8}")
        else:
            row(name + " handler", value)


if __name__ == "__main__":
    main()
