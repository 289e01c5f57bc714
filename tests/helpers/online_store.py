"""A store of online evaluation as the Online page reads it: four days of traffic (2026-06-01 to 06-04, at 10:00
UTC) all scored in one burst six days later, by three evaluators — ``quality`` (turns, a pass mark: 0, 1, 2, 3 of
3 turns pass on days 0–3), ``speed`` (turns, no pass mark: mean 1, 2, 3, 4) and ``conversation`` (sessions: s0
rescored, its first revision superseded; s1 passed, s2 failed, s3 not scored) — with skipped, waiting and
claimed jobs and the judge's spend in and out of the range."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from toolpath.model import Invocation
from toolpath.store import schema as t
from toolpath.store.store import Store
from toolpath.store.usage import set_price

DAY_NS, HOUR_NS = 86400 * 10**9, 3600 * 10**9
BASE = datetime(2026, 6, 1, tzinfo=UTC)
BASE_NS = int(BASE.timestamp()) * 10**9
BURST_NS = BASE_NS + 10 * DAY_NS
"""When every result was stored: after the range the page shows (it must not matter)."""
UNTIL = "2026-06-05"
"""The end of the range that holds the four days of traffic."""
DAYS = 4


def _turn_started(day: int, k: int) -> datetime:
    return BASE + timedelta(days=day, hours=10, minutes=k)


def _jobs(table: str, evaluator: str, rows: list[tuple[str, str | None, int]], now: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for n, (status, reason, when) in enumerate(rows):
        row: dict[str, object] = {"evaluator": evaluator, "status": status, "reason": reason, "enqueued_at": when,
                                  "claimed_by": "w" if status == "claimed" else None,
                                  "claimed_at": now if status == "claimed" else None, "attempts": 0,
                                  "finished_at": when if status == "skipped" else None}  # fmt: skip
        if table == "session_jobs":
            row.update(session_id=f"job-s{n}", revision=1, due_at=when)
        else:
            row.update(invocation_id=f"job-t{n}")
        out.append(row)
    return out


def fill(store: Store) -> None:
    """Write the store described in the module docstring."""
    now = time.time_ns()
    store.write(
        [
            Invocation(invocation_id=f"t{day}{k}", session_id=f"s{day}", agent_name="bot", prompt=f"day {day} turn {k}",
                       response="ok", started_at=_turn_started(day, k))
            for day in range(DAYS)
            for k in range(3)
        ]
    )  # fmt: skip
    turn_results = []
    for day in range(DAYS):
        for k in range(3):
            common = {"invocation_id": f"t{day}{k}", "evaluator_version": "1", "explanation": None, "worker": "w",
                      "created_at": BURST_NS}  # fmt: skip
            passed = k < day
            turn_results.append({**common, "evaluator": "quality", "metric": "trajectory_precision",
                                 "score": 1.0 if passed else 0.0, "label": "pass" if passed else "fail"})  # fmt: skip
            turn_results.append({**common, "evaluator": "speed", "metric": "latency_in_seconds",
                                 "score": float(day + 1), "label": "scored"})  # fmt: skip
    session_results = [
        {"session_id": session, "evaluator": "conversation", "revision": revision, "metric": "multi_turn_task_success",
         "evaluator_version": "2", "score": score, "label": "pass" if score else "fail",
         "explanation": f"revision {revision}", "turns": turns, "last_invocation_id": f"t{session[1]}2",
         "worker": "w", "created_at": BURST_NS + order, "superseded_at": superseded}
        for order, (session, revision, score, turns, superseded) in enumerate((
            ("s0", 1, 0.0, 2, BURST_NS + 3), ("s1", 1, 1.0, 3, None), ("s2", 1, 0.0, 3, None), ("s0", 2, 1.0, 3, None),
        ))
    ]  # fmt: skip
    in_range = BASE_NS + DAY_NS
    turn_jobs = _jobs(
        "eval_jobs", "quality",
        [("skipped", "rate", in_range)] * 3 + [("skipped", "budget", in_range)] * 2
        + [("skipped", "rate", BASE_NS - 30 * DAY_NS)]  # before the range: not counted
        + [("pending", None, in_range)] * 2 + [("claimed", None, in_range)] + [("done", None, in_range)],
        now,
    )  # fmt: skip
    session_jobs = _jobs(
        "session_jobs", "conversation",
        [("skipped", "budget", in_range)] + [("pending", None, now + HOUR_NS)] * 2  # still open
        + [("pending", None, now - HOUR_NS)] + [("claimed", None, now - HOUR_NS)],
        now,
    )  # fmt: skip
    spend = [
        ("conversation", BASE_NS + 2 * HOUR_NS, "judge-a", "ok", 4, 1000, 200, 2.0),
        ("conversation", BASE_NS + 3 * HOUR_NS, "judge-a", "error", 1, 0, 0, 1.0),
        ("conversation", BASE_NS - 10 * DAY_NS, "judge-a", "ok", 100, 10**6, 10**5, 50.0),  # before the range
        ("quality", BASE_NS + 2 * HOUR_NS, "judge-b", "ok", 2, 300, 50, 0.4),
    ]
    columns = ("evaluator", "hour_start", "model", "outcome", "calls", "input_tokens", "output_tokens", "seconds")
    with store.engine.begin() as conn:
        conn.execute(t.online_results.insert(), turn_results)
        conn.execute(t.session_results.insert(), session_results)
        conn.execute(t.eval_jobs.insert(), turn_jobs)
        conn.execute(t.session_jobs.insert(), session_jobs)
        conn.execute(t.judge_spend.insert(), [dict(zip(columns, row, strict=True)) for row in spend])
    set_price(store, "judge-a", 1.0, 2.0)
