"""Metric throughput, side by side in one run (pairs per second; higher is better).

    python benchmarks/bench_metrics.py [--pairs 10000] [--repeats 3]

Synthetic pairs, the same for every row: trajectories of 5 tool calls drawn from 20 tools with typed
arguments (strings, numbers, booleans, a nested object), predicted = reference for 40% of pairs and one
perturbation otherwise (an argument changed, two calls swapped, one dropped, one added, a tool replaced);
responses of 40 words. Metrics run on records as the runner passes them (``Trajectory`` tuples of
``ToolCall``, as ``parse_trajectory`` returns; strings), built before timing, as a dataset is loaded once;
explanations are rendered when read, and are not read here.

Rows: each trajectory metric; ADK's ``response_match_score`` through toolpath and through plain
``rouge_score`` (a fresh ``RougeScorer`` per pair, as ADK's evaluator does, and a reused one), with a check
that every score is identical; and, when google-adk is importable here, ADK's own evaluators.
Goal: trajectory metrics >= 300,000 pairs/s; response_match_score >= 10,000 pairs/s.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from collections.abc import Callable

from rouge_score import rouge_scorer

from toolpath.evaluators.metrics import text, trajectory
from toolpath.model import ToolCall, Trajectory

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


def make_pair(rng: random.Random) -> tuple[Trajectory, Trajectory]:
    reference = [ToolCall(name=name, args=random_args(rng)) for name in rng.sample(TOOLS, 5)]
    predicted = [ToolCall(name=c.name, args=dict(c.args)) for c in reference]
    roll = rng.random()
    if roll < 0.4:
        pass
    elif roll < 0.55:
        predicted[rng.randrange(5)].args["level"] += 1
    elif roll < 0.7:
        i, j = rng.sample(range(5), 2)
        predicted[i], predicted[j] = predicted[j], predicted[i]
    elif roll < 0.8:
        del predicted[rng.randrange(5)]
    elif roll < 0.9:
        predicted.insert(rng.randrange(6), ToolCall(name=rng.choice(TOOLS), args=random_args(rng)))
    else:
        predicted[rng.randrange(5)] = ToolCall(name=rng.choice(TOOLS), args=random_args(rng))
    return Trajectory(predicted), Trajectory(reference)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(40)).capitalize() + "."


def rate(fn: Callable[[], object], count: int, repeats: int) -> float:
    """Pairs per second, median of ``repeats``; the garbage collector is paused while timing, as ``timeit``
    does, so a collection walking the records built for the run does not land on one row by chance."""
    times = []
    for _ in range(repeats):
        gc.collect()
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
    args = parser.parse_args()
    rng = random.Random(7)
    pairs = [make_pair(rng) for _ in range(args.pairs)]
    texts = [(sentence(rng), sentence(rng)) for _ in range(args.pairs)]
    n, r = args.pairs, args.repeats
    rows: list[tuple[str, float, str]] = []

    rows.append(
        (
            "(ceiling: bare loop, cached keys ==)",
            rate(lambda: [p.match_keys == q.match_keys for p, q in pairs], n, r),
            "this machine's limit",
        )
    )
    for name, fn in [
        ("trajectory_exact_match", trajectory.exact_match),
        ("trajectory_in_order_match", trajectory.in_order_match),
        ("trajectory_any_order_match", trajectory.any_order_match),
        ("trajectory_precision", trajectory.precision),
        ("trajectory_recall", trajectory.recall),
    ]:
        rows.append((name, rate(lambda fn=fn: [fn(p, q) for p, q in pairs], n, r), ">= 300,000"))
    rows.append(
        (
            "tool_trajectory_avg_score",
            rate(lambda: [trajectory.tool_trajectory_avg_score([p], [q]) for p, q in pairs], n, r),
            ">= 300,000",
        )
    )

    def ours() -> list[float]:
        return [text.response_match_score([resp], [ref]).score for resp, ref in texts]

    def plain_fresh() -> list[float]:
        return [
            rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(ref, resp)["rouge1"].fmeasure
            for resp, ref in texts
        ]

    reused = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)

    def plain_reused() -> list[float]:
        return [reused.score(ref, resp)["rouge1"].fmeasure for resp, ref in texts]

    identical = ours() == plain_reused()
    rows.append(("response_match_score (toolpath)", rate(ours, n, r), ">= 10,000"))
    rows.append(("  rouge_score, scorer per pair (ADK)", rate(plain_fresh, n, 1), "baseline"))
    rows.append(("  rouge_score, one scorer reused", rate(plain_reused, n, 1), "baseline"))
    rows.extend(adk_rows(pairs, texts))

    print(f"{n} pairs, median of {r} repeats (baselines: 1 run)")
    print(f"{'':40}{'pairs/s':>12}   goal")
    for name, value, target in rows:
        print(f"{name:40}{value:>12,.0f}   {target}")
    print(f"\nresponse_match_score identical to rouge_score on all {n} pairs: {identical}")


def adk_rows(pairs: list, texts: list) -> list[tuple[str, float, str]]:
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
        evaluator.evaluate_invocations([a], [e]).overall_score == trajectory.tool_trajectory_avg_score([p], [q]).score
        for a, e, (p, q) in zip(actual, expected, pairs, strict=True)
    )
    same_rouge = all(
        rouge.evaluate_invocations([a], [e]).overall_score == text.response_match_score([resp], [ref]).score
        for a, e, (resp, ref) in zip(resp_a, resp_e, texts, strict=True)
    )
    print(f"ADK's scores equal toolpath's on all {len(pairs)} pairs: trajectory {same_trajectory}, ROUGE {same_rouge}")
    return [("  ADK TrajectoryEvaluator", traj, "baseline"), ("  ADK RougeEvaluator", rouge_rate, "baseline")]


if __name__ == "__main__":
    main()
