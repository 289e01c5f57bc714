"""Metric throughput, side by side in one run: the kernels, ``toolpath.evaluate`` and the peers.

    python benchmarks/bench_metrics.py [--pairs 10000] [--repeats 3] [--memory-rows 100000]

Synthetic pairs, the same for every row: trajectories of 5 tool calls drawn from 20 tools with typed
arguments (strings, numbers, booleans, a nested object), predicted = reference for 40% of pairs and one
perturbation otherwise (an argument changed, two calls swapped, one dropped, one added, a tool replaced);
responses of 40 words.

Kernels (pairs/s): each metric function on records as the runner passes them (``Trajectory`` records, as
``parse_trajectory`` returns them; strings), built before timing; explanations are not read.
Goal: trajectory metrics >= 300,000 pairs/s; response_match_score >= 10,000 pairs/s.

Through ``toolpath.evaluate`` (row-metrics/s): what a user runs, on the same pairs as plain dict rows with
Vertex-form trajectory items — every row parsed, scored, explanations rendered, the table and summary built.
The floor is the five kernels' time on parsed records; the peers are google-adk's ``TrajectoryEvaluator`` and a
plain ``rouge_score`` loop (a fresh ``RougeScorer`` per pair, as ADK's evaluator does, and a reused one), with a
check that every score is identical. Goal: >= 100,000 row-metrics/s for five trajectory metrics;
``response_match_score`` >= 10x the plain ``rouge_score`` loop.

Memory: the peak RSS of a fresh process (above its imports) that scores ``--memory-rows`` rows of a JSONL file
with ``evaluate(path)`` (streamed), next to loading the rows first and passing the list.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rouge_score import rouge_scorer

import toolpath
from toolpath.metrics import text, trajectory_match
from toolpath.model import ToolCall
from toolpath.trajectory import Trajectory, parse_trajectory

TRAJECTORY_METRICS = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
]

WORDS = [
    "the",
    "thermostat",
    "living",
    "room",
    "kitchen",
    "light",
    "door",
    "locked",
    "weather",
    "sunny",
    "cloudy",
    "rain",
    "temperature",
    "degrees",
    "set",
    "raise",
    "lower",
    "dim",
    "bright",
    "warm",
    "cool",
    "device",
    "hallway",
    "bedroom",
    "office",
    "garage",
    "garden",
    "front",
    "back",
    "notify",
    "phone",
    "message",
    "schedule",
    "tomorrow",
    "morning",
    "evening",
    "running",
    "turned",
    "switched",
    "checking",
    "updated",
]
TOOLS = [f"tool_{i}" for i in range(20)]


def random_args(rng: random.Random) -> dict:
    args: dict = {"device_id": f"dev-{rng.randint(1, 50)}", "level": rng.randint(0, 100)}
    if rng.random() < 0.5:
        args["enabled"] = rng.random() < 0.5
    if rng.random() < 0.3:
        args["options"] = {"hue": rng.randint(0, 360), "saturation": round(rng.random(), 2)}
    return args


def make_items(rng: random.Random) -> tuple[list[dict], list[dict]]:
    """A (predicted, reference) pair of trajectories as a dataset holds them: Vertex-form items."""
    reference = [{"tool_name": name, "tool_input": random_args(rng)} for name in rng.sample(TOOLS, 5)]
    predicted = [{"tool_name": c["tool_name"], "tool_input": dict(c["tool_input"])} for c in reference]
    roll = rng.random()
    if roll < 0.4:
        pass
    elif roll < 0.55:
        predicted[rng.randrange(5)]["tool_input"]["level"] += 1
    elif roll < 0.7:
        i, j = rng.sample(range(5), 2)
        predicted[i], predicted[j] = predicted[j], predicted[i]
    elif roll < 0.8:
        del predicted[rng.randrange(5)]
    elif roll < 0.9:
        predicted.insert(rng.randrange(6), {"tool_name": rng.choice(TOOLS), "tool_input": random_args(rng)})
    else:
        predicted[rng.randrange(5)] = {"tool_name": rng.choice(TOOLS), "tool_input": random_args(rng)}
    return predicted, reference


def make_pair(rng: random.Random) -> tuple[Trajectory, Trajectory]:
    predicted, reference = make_items(rng)
    return parse_trajectory(predicted), parse_trajectory(reference)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(40)).capitalize() + "."


def rate(fn: Callable[[], object], count: int, repeats: int, *, gc_paused: bool = True) -> float:
    """Items per second, median of ``repeats``. For the kernels the garbage collector is paused while timing, as
    ``timeit`` does, so a collection walking the records built for the run does not land on one row by chance;
    ``evaluate`` is timed as a user runs it, collector on (it builds its records while it runs)."""
    times = []
    for _ in range(repeats):
        gc.collect()
        if gc_paused:
            gc.disable()
        try:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return count / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-rows", type=int, default=100_000, help="0: skip the memory rows")
    args = parser.parse_args()
    rng = random.Random(7)
    items = [make_items(rng) for _ in range(args.pairs)]
    pairs = [(parse_trajectory(p), parse_trajectory(q)) for p, q in items]
    texts = [(sentence(rng), sentence(rng)) for _ in range(args.pairs)]
    n, r = args.pairs, args.repeats

    kernels = kernel_rows(pairs, n, r)
    print(f"{n} pairs, median of {r} repeats (baselines: 1 run)")
    print(f"{'kernels, on parsed records':46}{'pairs/s':>12}   goal")
    for name, value, target in kernels:
        print(f"{name:46}{value:>12,.0f}   {target}")

    rows, same = evaluate_rows(items, texts, {name: value for name, value, _ in kernels}, r)
    adk = adk_rows(pairs, texts)
    print(f"\n{'through toolpath.evaluate, ' + str(n) + ' dict rows':46}{'row-metrics/s':>14} {'ratio':>9}   goal")
    for name, value, ratio, target in [*rows, *((name, value, "", "peer") for name, value in adk)]:
        print(f"{name:46}{value:>14,.0f} {ratio:>9}   {target}")
    print(f"\nevaluate's response_match_score identical to rouge_score on all {n} rows: {same}")
    if args.memory_rows:
        memory_rows(args.memory_rows)


def kernel_rows(pairs: list, n: int, r: int) -> list[tuple[str, float, str]]:
    rows = [
        (
            "(ceiling: bare loop, cached keys ==)",
            rate(lambda: [p.match_keys == q.match_keys for p, q in pairs], n, r),
            "this machine's limit",
        )
    ]
    for name, fn in [
        ("trajectory_exact_match", trajectory_match.exact_match),
        ("trajectory_in_order_match", trajectory_match.in_order_match),
        ("trajectory_any_order_match", trajectory_match.any_order_match),
        ("trajectory_precision", trajectory_match.precision),
        ("trajectory_recall", trajectory_match.recall),
    ]:
        rows.append((name, rate(lambda fn=fn: [fn(p, q) for p, q in pairs], n, r), ">= 300,000"))
    rows.append(
        (
            "tool_trajectory_avg_score",
            rate(lambda: [trajectory_match.tool_trajectory_avg_score([p], [q]) for p, q in pairs], n, r),
            ">= 300,000",
        )
    )
    return rows


def evaluate_rows(
    items: list, texts: list, kernels: dict[str, float], r: int
) -> tuple[list[tuple[str, float, str, str]], bool]:
    """``evaluate`` on dict rows, next to its floor (the kernels' time on parsed records) and plain ROUGE."""
    n = len(items)
    rows = [{"prompt": "q", "predicted_trajectory": p, "reference_trajectory": q} for p, q in items]
    floor = len(TRAJECTORY_METRICS) / sum(1 / kernels[name] for name in TRAJECTORY_METRICS)
    through = rate(lambda: toolpath.evaluate(rows, TRAJECTORY_METRICS), n * len(TRAJECTORY_METRICS), r, gc_paused=False)

    text_rows = [{"prompt": "q", "response": resp, "reference": ref} for resp, ref in texts]
    kernel = rate(lambda: [text.response_match_score([resp], [ref]) for resp, ref in texts], n, r)
    ours = rate(lambda: toolpath.evaluate(text_rows, ["response_match_score"]), n, r, gc_paused=False)
    reused = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)

    def plain_fresh() -> list[float]:
        return [
            rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(ref, resp)["rouge1"].fmeasure
            for resp, ref in texts
        ]

    def plain_reused() -> list[float]:
        return [reused.score(ref, resp)["rouge1"].fmeasure for resp, ref in texts]

    fresh, plain = rate(plain_fresh, n, 1), rate(plain_reused, n, 1)
    best = max(fresh, plain)
    table = toolpath.evaluate(text_rows, ["response_match_score"]).metrics_table
    same = [row["response_match_score/score"] for row in table] == plain_reused()
    return (
        [
            ("floor: the 5 kernels on parsed records", floor, "", "floor"),
            ("toolpath.evaluate, 5 trajectory metrics", through, f"{through / floor:.2f}x", ">= 100,000"),
            ("response_match_score kernel", kernel, f"{kernel / best:.1f}x", ""),
            ("toolpath.evaluate, response_match_score", ours, f"{ours / best:.1f}x", ">= 10x plain rouge_score"),
            ("  plain rouge_score, scorer per pair (ADK)", fresh, "", "peer"),
            ("  plain rouge_score, one scorer reused", plain, "", "peer (the ratios: to the faster plain loop)"),
        ],
        same,
    )


MEMORY_CHILD = """
import json, resource, sys
import toolpath
from toolpath.datasets import load_rows
metrics = json.loads(sys.argv[3])
toolpath.evaluate([{"predicted_trajectory": [], "reference_trajectory": []}], metrics)  # imports done
def rss_kb():  # the resident set now (Linux), else the peak so far
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base = rss_kb()
if sys.argv[1] == "stream":
    result = toolpath.evaluate(sys.argv[2], metrics)
elif sys.argv[1] == "list":
    result = toolpath.evaluate(load_rows(sys.argv[2]), metrics)
else:
    rows = load_rows(sys.argv[2])
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)  # peak above the resident set
"""


def memory_rows(count: int) -> None:
    """Peak RSS growth of fresh processes scoring ``count`` JSONL rows with the five trajectory metrics."""
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for _ in range(count):
                p, q = make_items(rng)
                handle.write(json.dumps({"prompt": "q", "predicted_trajectory": p, "reference_trajectory": q}) + "\n")
        size = path.stat().st_size / 2**20
        print(f"\npeak memory, {count} JSONL rows ({size:.0f} MB file), 5 trajectory metrics, fresh process each")
        print(f"{'':46}{'MB above imports':>18}")
        for mode, label in [
            ("rows", "load_rows(path) alone (the dataset in memory)"),
            ("stream", "toolpath.evaluate(path), streamed"),
            ("list", "toolpath.evaluate(load_rows(path))"),
        ]:
            argv = [sys.executable, "-c", MEMORY_CHILD, mode, str(path), json.dumps(TRAJECTORY_METRICS)]
            out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
            print(f"{label:46}{float(out.split()[-1]):>18,.0f}")


def adk_rows(pairs: list, texts: list) -> list[tuple[str, float]]:
    try:
        from google.adk.evaluation.eval_case import IntermediateData, Invocation
        from google.adk.evaluation.eval_metrics import EvalMetric
        from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
        from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
        from google.genai import types
    except ImportError:
        print("google-adk is not installed here: its evaluators are not measured (pip install google-adk)")
        return []

    def invocation(calls: list[ToolCall] | None = None, response: str = "") -> Invocation:
        return Invocation(
            user_content=types.Content(parts=[types.Part(text="q")]),
            final_response=types.Content(parts=[types.Part(text=response)]),
            intermediate_data=IntermediateData(
                tool_uses=[types.FunctionCall(name=c.name, args=c.args) for c in calls or []]
            ),
        )

    actual = [invocation(p) for p, _ in pairs]
    expected = [invocation(q) for _, q in pairs]
    evaluator = TrajectoryEvaluator(threshold=1.0)
    traj = rate(
        lambda: [evaluator.evaluate_invocations([a], [e]) for a, e in zip(actual, expected, strict=True)], len(pairs), 1
    )
    resp_a = [invocation(response=resp) for resp, _ in texts]
    resp_e = [invocation(response=ref) for _, ref in texts]
    rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
    rouge_rate = rate(
        lambda: [rouge.evaluate_invocations([a], [e]) for a, e in zip(resp_a, resp_e, strict=True)], len(texts), 1
    )
    same_trajectory = all(
        evaluator.evaluate_invocations([a], [e]).overall_score
        == trajectory_match.tool_trajectory_avg_score([p], [q]).score
        for a, e, (p, q) in zip(actual, expected, pairs, strict=True)
    )
    same_rouge = all(
        rouge.evaluate_invocations([a], [e]).overall_score == text.response_match_score([resp], [ref]).score
        for a, e, (resp, ref) in zip(resp_a, resp_e, texts, strict=True)
    )
    print(f"ADK's scores equal toolpath's on all {len(pairs)} pairs: trajectory {same_trajectory}, ROUGE {same_rouge}")
    return [("  ADK TrajectoryEvaluator (one metric)", traj), ("  ADK RougeEvaluator", rouge_rate)]


if __name__ == "__main__":
    main()
