"""Judge throughput: 200 rows x 3 judge metrics x num_samples=3 (1,800 model calls) against a fake Gemini
server in another process that answers each call after 50 ms, with the default concurrency.

    python benchmarks/bench_judge.py [--rows 200] [--delay 0.05] [--concurrency 32]

The real google-genai client is used, configured by the environment only (GOOGLE_API_KEY and
GOOGLE_GEMINI_BASE_URL). Printed side by side: the wall time, the floor a strictly sequential judge would need
(calls x delay), and calls per second. Goal: under 10 s.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = """
import json, sys, time
sys.path.insert(0, {root!r})
from tests.helpers.fake_gemini import FakeGemini, Reply

delay = float(sys.argv[2])

def script(prompt, seen):
    if "pairwise_choice" in prompt:
        return Reply(json.dumps({{"pairwise_choice": "A", "explanation": "A reads better"}}), delay=delay)
    return Reply(json.dumps({{"score": 4, "explanation": "good"}}), delay=delay)

fake = FakeGemini(script, port=int(sys.argv[1]))
fake.server.serve_forever()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=None, help="default: JudgeSettings' default")
    args = parser.parse_args()

    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT)), str(port), str(args.delay)])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            except urllib.error.HTTPError:
                break  # the server answers (501 for GET): it is up
            except OSError:
                time.sleep(0.1)
        os.environ["GOOGLE_API_KEY"] = "bench-key"
        os.environ["GOOGLE_GEMINI_BASE_URL"] = f"http://127.0.0.1:{port}"

        from toolpath.evaluation.runner import evaluate
        from toolpath.judges.client import Judge, JudgeSettings

        rows = [
            {
                "prompt": f"Request {i}: set the office to {18 + i % 6} degrees.",
                "response": f"Set the office to {18 + i % 6}.0 °C.",
                "baseline_model_response": "Done.",
            }
            for i in range(args.rows)
        ]
        metrics = ["fluency(num_samples=3)", "instruction_following(num_samples=3)", "pairwise_fluency(num_samples=3)"]
        settings = JudgeSettings() if args.concurrency is None else JudgeSettings(concurrency=args.concurrency)
        start = time.perf_counter()
        result = evaluate(rows, metrics, judge=Judge(settings))
        elapsed = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait(timeout=30)

    usage = result.judge_usage or {}
    calls = usage.get("requests", 0)
    scored = sum(1 for row in result.metrics_table for m in ("fluency", "instruction_following") if row[f"{m}/score"])
    print(f"{args.rows} rows x 3 judge metrics x 3 samples, fake Gemini answering in {args.delay * 1000:.0f} ms")
    print(f"  concurrency                {settings.concurrency:>10}")
    errors, retries = usage.get("errors", 0), usage.get("retries", 0)
    print(f"  model calls                {calls:>10,}   (errors {errors}, retries {retries})")
    print(f"  wall time                  {elapsed:>10.2f} s   goal < 10 s")
    print(f"  sequential floor           {calls * args.delay:>10.2f} s   (calls x delay)")
    print(f"  calls per second           {calls / elapsed:>10,.0f}")
    print(f"  pointwise scores present   {scored:>10} of {2 * args.rows}")


if __name__ == "__main__":
    main()
