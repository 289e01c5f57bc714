"""The agent's per-call latency with online evaluation on and off, side by side in one run.

    python benchmarks/bench_online.py [--calls 300] [--rounds 3] [--model-ms 20]

A traced ``@toolpath.agent`` makes 4 ``@toolpath.tool`` calls around a simulated model wait (``--model-ms``, as a
real agent waits on its LLM), storing to SQLite. Off: ``toolpath.init(store=...)``. On: the same plus
``online=`` with trajectory, behaviour and response metrics and a golden dataset, every invocation sampled, two
workers scoring while the agent runs. Rounds alternate off / on so drift on the machine hits both alike; the
median per-call latency of each is printed with the ratio. Goal: on within 5% of off.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import toolpath

MODEL_SECONDS = 0.02


@toolpath.tool
def get_device_info(device_id: str) -> dict:
    return {"device_id": device_id, "temperature": 20.5}


@toolpath.tool
def set_temperature(location: str, temperature: float) -> dict:
    return {"location": location, "temperature": temperature}


@toolpath.agent(name="bench_agent")
def agent(prompt: str) -> str:
    time.sleep(MODEL_SECONDS)  # the model decides
    info = get_device_info("thermostat-office")
    get_device_info("thermostat-bedroom")
    set_temperature("office", info["temperature"] + 1)
    time.sleep(MODEL_SECONDS)  # the model answers
    set_temperature("bedroom", 19.0)
    return f"Set the office to {info['temperature'] + 1} °C."


def one_round(folder: Path, index: int, calls: int, online: dict | None) -> tuple[list[float], dict]:
    tracing = toolpath.init(store=f"sqlite:///{folder / f'round{index}.db'}", online=online)
    latencies = []
    for i in range(calls):
        start = time.perf_counter()
        agent(f"Raise the office by one degree ({i % 10})")
        latencies.append(time.perf_counter() - start)
    stats = {}
    if tracing.online is not None:
        toolpath.flush()
        tracing.online.drain(120)
        stats = {**tracing.online.stats.to_dict(), **tracing.online.queue.counts()}
    toolpath.shutdown()
    return latencies, stats


def main() -> None:
    global MODEL_SECONDS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-ms", type=float, default=20.0)
    args = parser.parse_args()
    MODEL_SECONDS = args.model_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        golden = folder / "golden.jsonl"
        golden.write_text(
            "".join(
                json.dumps(
                    {
                        "prompt": f"Raise the office by one degree ({i})",
                        "reference_trajectory": [
                            {"tool_name": "get_device_info", "tool_input": {"device_id": "thermostat-office"}},
                            {"tool_name": "set_temperature", "tool_input": {"location": "office", "temperature": 21.5}},
                        ],
                        "reference": "Set the office to 21.5 °C.",
                    }
                )
                + "\n"
                for i in range(10)
            )
        )
        online = {
            "metrics": [
                "trajectory_exact_match",
                "trajectory_precision",
                "trajectory_recall",
                "tool_argument_similarity",
                "redundant_tool_calls",
                "response_match_score",
            ],
            "reference_dataset": str(golden),
            "workers": 2,
            "poll_seconds": 0.05,
        }
        off: list[float] = []
        on: list[float] = []
        stats: dict = {}
        for r in range(args.rounds):
            off += one_round(folder, 2 * r, args.calls, None)[0]
            latencies, stats = one_round(folder, 2 * r + 1, args.calls, online)
            on += latencies
    median_off, median_on = statistics.median(off), statistics.median(on)
    print(f"{args.rounds} rounds x {args.calls} agent calls (4 tools, 2 model waits of {args.model_ms:g} ms), SQLite")
    print(f"  online evaluation off   median {median_off * 1000:8.2f} ms per call")
    print(f"  online evaluation on    median {median_on * 1000:8.2f} ms per call   ({median_on / median_off:.3f}x)")
    print("  goal: on within 5% of off (<= 1.050x)")
    print(f"  last round's online work: {stats}")


if __name__ == "__main__":
    main()
