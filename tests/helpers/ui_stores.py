"""A varied store for the UI's debugging tests: the demo's three runs (one case raises NotImplementedError), a
replay of six of its sessions against an agent that drifts on the bedroom (some turns changed, some the same), a
replay where nothing changed, a 5-turn production session whose turns 2 and 4 raised (spans with token counts, a
26.6 ms failed turn, a 4 KB argument, markup in a prompt), online results of a higher-is-better and a
lower-is-better metric with an errored one; and a production session with a tool error."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import toolpath
from tests.helpers.cli import run_process
from tests.helpers.ui import demo_store, serve_ui
from toolpath.demo.smart_home import TOOLS, plan, reset_home
from toolpath.model import Invocation, ToolCall
from toolpath.store import schema as t
from toolpath.store.spanrecord import STATUS_ERROR, STATUS_OK, SpanRecord
from toolpath.store.store import Store

DRIFTING_AGENT = "tests.helpers.ui_stores:drifting_agent"
SUPPORT = "support-7"
"""The 5-turn production session (turns 2 and 4 raised)."""
TOOL_ERROR_SESSION = "lights-9"
MARKUP = "<b>bold</b> & <i>markup</i>"
BIG_ARGUMENT = "x" * 4096
REQUEST_BODY = '{"order": 7, "note": "' + BIG_ARGUMENT + '"}'
"""A 4 KB attribute of the first support turn's agent span."""
REPORTED_COST = 0.01
"""The cost the last support turn's model call reported (gen_ai.usage.cost.total)."""
T0 = 1_780_000_000 * 10**9
MS = 1_000_000


@toolpath.agent(name="smart_home_assistant")
def drifting_agent(prompt: str) -> str:
    """The demo's planner, except that it answers bedroom requests without calling any tool."""
    if "bedroom" in prompt.lower():
        return "Done."
    reset_home()
    return plan(prompt, lambda name, **arguments: TOOLS[name](**arguments))


def _ids(n: int) -> tuple[str, str]:
    return f"{n:032x}", f"{n:016x}"


def _turn(n: int, prompt: str, *, failed: bool, calls: list[ToolCall]) -> tuple[Invocation, list[SpanRecord]]:
    trace, root = _ids(100 + n)
    start = T0 + n * 60 * 10**9
    took = int(26.6 * MS) if failed else 40 * MS
    model_span = f"{200 + n:016x}"
    spans = [
        SpanRecord(trace, root, None, "invoke_agent support_bot", 1, start, start + took,
                   STATUS_ERROR if failed else STATUS_OK, "RuntimeError: the backend is down" if failed else None,
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_bot",
                    "gen_ai.conversation.id": SUPPORT, "gen_ai.prompt": prompt,
                    **({"app.request.body": REQUEST_BODY} if n == 1 else {})},
                   [{"name": "exception", "time_unix_nano": start + took,
                     "attributes": {"exception.type": "RuntimeError", "exception.message": "the backend is down"}}]
                   if failed else []),
        SpanRecord(trace, model_span, root, "chat gemini-2.5-flash", 3, start + 2 * MS, start + 12 * MS, STATUS_OK,
                   None, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gemini-2.5-flash",
                          "gen_ai.usage.input_tokens": 120 + n, "gen_ai.usage.output_tokens": 30 + n,
                          "gen_ai.response.id": f"resp-{n}",
                          **({"gen_ai.usage.cost.total": REPORTED_COST} if n == 5 else {})}),
    ]  # fmt: skip
    for i, call in enumerate(calls):
        spans.append(
            SpanRecord(trace, f"{300 + 10 * n + i:016x}", root, f"execute_tool {call.name}", 1, start + 13 * MS,
                       start + 20 * MS, STATUS_ERROR if call.error else STATUS_OK, call.error,
                       {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name})
        )  # fmt: skip
    invocation = Invocation(
        invocation_id=f"{trace}-{root}",
        session_id=SUPPORT,
        trace_id=trace,
        agent_name="support_bot",
        prompt=prompt,
        response=None if failed else f"answer {n}",
        tool_calls=calls,
        latency_seconds=None if failed else took / 1e9,
        failure=int(failed),
        error="RuntimeError: the backend is down" if failed else None,
        started_at=None,
    )
    return invocation.model_copy(update={"started_at": _when(start)}), spans


def _when(ns: int) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ns / 1e9, UTC)


def support_session() -> tuple[list[Invocation], list[SpanRecord]]:
    turns, spans = [], []
    prompts = ["Where is my order 7?", f"Cancel it {MARKUP}", "Refund it", "Escalate", "Thanks"]
    for n, prompt in enumerate(prompts, start=1):
        calls = [ToolCall(name="lookup_order", args={"order": 7, "note": BIG_ARGUMENT if n == 1 else "short"},
                          result={"status": "shipped"}, start_time=T0 + n * 60 * 10**9 + 13 * MS,
                          end_time=T0 + n * 60 * 10**9 + 20 * MS)]  # fmt: skip
        invocation, turn_spans = _turn(n, prompt, failed=n in (2, 4), calls=calls)
        turns.append(invocation)
        spans += turn_spans
    return turns, spans


def tool_error_session() -> Invocation:
    return Invocation(
        invocation_id="lights-9-turn",
        session_id=TOOL_ERROR_SESSION,
        agent_name="support_bot",
        prompt="Dim the porch light",
        response="I could not reach the porch light.",
        tool_calls=[ToolCall(name="set_light", args={"id": "porch"}, error="TimeoutError: no answer")],
        latency_seconds=0.2,
        started_at=_when(T0 + 3600 * 10**9),
    )


def online_results(store: Store, turns: list[Invocation]) -> None:
    """``tool_error_rate`` (lower is better, pass mark 0) and ``trajectory_precision`` (higher is better) on the
    support session's turns; one ``tool_error_rate`` result errored (no score)."""
    now = time.time_ns()
    rows = []
    for n, (rate, label) in enumerate([(0.0, "pass"), (0.5, "fail"), (0.0, "pass"), (1.0, "fail"), (None, "error")]):
        rows.append(
            {
                "invocation_id": turns[n].invocation_id,
                "evaluator": "default",
                "evaluator_version": "1",
                "metric": "tool_error_rate",
                "score": rate,
                "label": label,
                "explanation": f"turn {n + 1}",
                "worker": "w",
                "created_at": now - n * 10**9,
            }
        )
    rows.append(
        {
            "invocation_id": turns[0].invocation_id,
            "evaluator": "default",
            "evaluator_version": "1",
            "metric": "trajectory_precision",
            "score": 1.0,
            "label": "pass",
            "explanation": None,
            "worker": "w",
            "created_at": now,
        }
    )
    rows.append({"invocation_id": "lights-9-turn", "evaluator": "default", "evaluator_version": "1",
                 "metric": "trajectory_precision", "score": 0.25,
                 "label": "fail", "explanation": "one of four", "worker": "w", "created_at": now})  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(t.online_results.insert(), rows)


def quiet_replay(store: Store) -> str:
    """A stored replay of one turn that changed nothing and passed: a run with nothing failing to show."""
    run_id = "quietreplay1"
    store.write_eval_run(
        {"run_id": run_id, "kind": "replay", "dataset": "1 recorded session(s)", "agent": "same", "metrics": {},
         "started_at": T0, "finished_at": T0 + 1, "row_count": 1, "failed_count": 0,
         "summary": {"trajectory_exact_match/mean": 1.0}},
        [{"run_id": run_id, "position": 0, "case_id": SUPPORT, "invocation_id": None, "status": "same",
          "scores": {"trajectory_exact_match": 1.0}, "row": {"prompt": "Thanks", "changes": [], "error": None}}],
    )  # fmt: skip
    return run_id


def debugging_store(folder: Path) -> str:
    """The store described in the module docstring; returns its URL."""
    url = demo_store(folder)
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    replay = run_process(
        folder, "replay", "--store", url, "--agent", DRIFTING_AGENT, "--agent-name", "smart_home_assistant",
        "--limit", "6", "--quiet", env=env,
    )  # fmt: skip
    assert replay.returncode in (0, 1), replay.stderr
    store = Store(url)
    try:
        turns, spans = support_session()
        store.write([*turns, tool_error_session()], spans)
        online_results(store, turns)
        quiet_replay(store)
    finally:
        store.close()
    return url


@contextlib.contextmanager
def served_debugging_store(folder: Path) -> Iterator[tuple[str, Store]]:
    """:func:`debugging_store` in ``folder``, served by ``toolpath ui`` (eval sets in ``folder/evalsets``):
    its URL and the store, closed on leaving."""
    store = Store(debugging_store(folder))
    try:
        with serve_ui(store, folder / "evalsets") as url:
            yield url, store
    finally:
        store.close()
