"""Online scoring against an ADK eval set kept as an evaluation run of that set, beside ``online_results``: one
run per evaluator start (every ``--workers`` process of one ``toolpath collect`` shares its run: the command makes
the run id once and hands it to them), named ``online <eval set id(s)> <started, UTC>``, of kind ``evalset``, so
``toolpath runs``, ``toolpath report --run`` and the UI's run pages show it and compare it with a live run.

Each session that replays a golden case is one case result of that case (``<eval set id>/<eval id>``), as a
recorded or live eval-set run keeps a case: per criterion a slot per turn, filled as the session's turns are
scored (one turn at a time, in any order, by any worker), the criterion's score the mean of the scored turns (ADK's
per-invocation averaging) and its status by the threshold, the case's status (FAILED when a criterion failed),
its session, and the turns (prompt, response, reference, trajectories) linked to their stored invocations. The
cases are written in the transaction that closes the turns' jobs (:func:`toolpath.store.run_appends.
append_run_results`, which finds a session's row through its invocations): a crash loses both or neither, and a
job another worker took over adds its turn once, from that worker.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from toolpath.evaluation.catalog import passes
from toolpath.evaluation.online.references import EvalSetReferences
from toolpath.evaluation.verdicts import RunKind
from toolpath.metrics.base import invocation_mean
from toolpath.model import EvalStatus
from toolpath.store.job_status import ResultLabel
from toolpath.store.reads import StoredTurn
from toolpath.store.run_appends import append_run_results
from toolpath.store.store import Store

__all__ = ["OnlineRun"]

PASSED, FAILED, NOT_EVALUATED = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED
_STATUS: dict[str, EvalStatus] = {ResultLabel.PASS: PASSED, ResultLabel.FAIL: FAILED}


class OnlineRun:
    """The run one online evaluator keeps of an eval set's cases."""

    def __init__(
        self,
        references: EvalSetReferences,
        rules: Mapping[str, Mapping[str, Any]],
        *,
        source: str,
        run_id: str | None = None,
        started_ns: int | None = None,
    ) -> None:
        """``rules``: each criterion's pass rule (its threshold); ``source``: the eval set's path, as recorded;
        ``run_id``, ``started_ns``: a run another process made (``--workers``), else a new one."""
        self.references = references
        self.names = list(references.thresholds)
        self.rules = rules
        self.started_ns = started_ns if started_ns is not None else time.time_ns()
        self.run_id = run_id or f"online-{uuid.uuid4().hex[:12]}"
        started = datetime.fromtimestamp(self.started_ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        self.name = f"online {' '.join(references.eval_set_ids)} {started}"
        self.source = source

    def row(self) -> dict[str, Any]:
        """The run's ``eval_runs`` columns before any case (its counts and summary grow with them)."""
        return {
            "run_id": self.run_id,
            "kind": RunKind.EVALSET,
            "dataset": self.name,
            "agent": None,
            "metrics": {self.source: self.references.criteria},
            "started_at": self.started_ns,
        }

    def writer(
        self, store: Store, turns: Sequence[StoredTurn], results: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> Callable[[Connection, set[str]], None] | None:
        """What appends the cases of ``turns`` scored as ``results`` (by invocation id) to the run, given the
        transaction and the jobs it closed; ``None`` when no turn replays a golden one."""
        cases = [c for turn in turns if (c := self.case(turn, results.get(turn.invocation_id, ()))) is not None]
        if not cases:
            return None

        def append(conn: Connection, closed: set[str]) -> None:
            kept = [c for c in cases if c["invocation_id"] in closed]
            append_run_results(store, conn, self.row(), kept, merge=self.merge)

        return append

    def case(self, turn: StoredTurn, results: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The case result (``eval_results`` columns) of one scored turn, or ``None`` if it replays no golden turn:
        a case of several turns has a slot per turn, this one filled (:meth:`merge` fills the others)."""
        golden = self.references.find(turn.prompt)
        if golden is None or golden.get("eval_id") is None:
            return None
        set_id, eval_id, number = str(golden["eval_set_id"]), str(golden["eval_id"]), int(golden["turn"])
        of = max(self.references.case_turns.get((set_id, eval_id), 1), number)
        by_name = {r["metric"]: r for r in results}
        metrics = {}
        for name in self.names:
            result = by_name.get(name, {})
            score = result.get("score")
            status = NOT_EVALUATED if score is None else _STATUS.get(str(result.get("label")), NOT_EVALUATED)
            per_invocation: list[float | None] = [None] * of
            per_status = [NOT_EVALUATED] * of
            per_invocation[number - 1], per_status[number - 1] = score, status
            metrics[name] = {
                "threshold": self.rules.get(name, {}).get("threshold"),
                "per_invocation": per_invocation,
                "per_invocation_status": per_status,
                "turn_explanations": {str(number): result["explanation"]} if result.get("explanation") else {},
            }
        reference = golden.get("reference_trajectory") or []
        played = {
            "prompt": turn.prompt,
            "response": turn.response,
            "reference": golden.get("reference"),
            "predicted_trajectory": [
                {"tool_name": n, "tool_input": a, **({"error": e} if e is not None else {})}
                for n, a, e, *_ in turn.calls
            ],
            "reference_trajectory": [c.to_vertex() for c in reference],
            "failure": turn.failure,
            "error": None,
            "invocation_id": turn.invocation_id,
            "session_id": turn.session_id,
            "turn": number,
        }
        row = {
            "eval_set_id": set_id,
            "eval_id": eval_id,
            "metrics": metrics,
            "efficiency": {},
            "sessions": [turn.session_id],
            "turns": [[played]],
            "online": {"turns": of, "scored_turns": [number], "agent_name": turn.agent_name},
        }
        return self._finished({"case_id": f"{set_id}/{eval_id}", "invocation_id": turn.invocation_id, "row": row})

    def merge(self, new: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """``new`` (a scored turn's case) merged into the row its session already has for that case: another turn
        of the case, or this turn scored again (an invocation rebuilt from more spans); ``None``: no such row."""
        case = new["row"]
        [[played]] = case["turns"]

        def holds(row: Mapping[str, Any]) -> bool:
            if row["case_id"] != new["case_id"] or (row["row"] or {}).get("sessions") != case["sessions"]:
                return False
            scored = [t.get("invocation_id") for run in row["row"].get("turns") or [] for t in run]
            return case["online"]["turns"] > 1 or played["invocation_id"] in scored

        old = next((r for r in rows if holds(r)), None)
        if old is None:
            return None
        row = dict(old["row"])
        number = played["turn"]
        kept = [t for t in row["turns"][0] if t.get("turn") != number]
        row["turns"] = [sorted([*kept, played], key=lambda t: int(t.get("turn") or 0))]
        row["online"] = {**row["online"], "scored_turns": sorted({*row["online"]["scored_turns"], number})}
        metrics = {}
        for name, metric in row["metrics"].items():
            fresh = case["metrics"].get(name)
            if fresh is None:
                metrics[name] = metric
                continue
            per_invocation, per_status = list(metric["per_invocation"]), list(metric["per_invocation_status"])
            per_invocation[number - 1] = fresh["per_invocation"][number - 1]
            per_status[number - 1] = fresh["per_invocation_status"][number - 1]
            explained = {**(metric.get("turn_explanations") or {}), **fresh["turn_explanations"]}
            if str(number) not in fresh["turn_explanations"]:
                explained.pop(str(number), None)
            metrics[name] = {**metric, "per_invocation": per_invocation, "per_invocation_status": per_status,
                             "turn_explanations": explained}  # fmt: skip
        row["metrics"] = metrics
        return self._finished({"position": old["position"], "case_id": old["case_id"],
                               "invocation_id": old["invocation_id"], "row": row})  # fmt: skip

    def _finished(self, result: dict[str, Any]) -> dict[str, Any]:
        """Each criterion's score (the mean of its scored turns, as ADK's per-invocation averaging) and status, and
        the case's status and scores, from the per-turn slots."""
        row = result["row"]
        for name, metric in row["metrics"].items():
            known = [s for s in metric["per_invocation"] if s is not None]
            score = invocation_mean(known) if known else None
            verdict = passes(score, **self.rules[name]) if name in self.rules else None
            status = NOT_EVALUATED if score is None or verdict is None else PASSED if verdict else FAILED
            explained = metric.get("turn_explanations") or {}
            text = "; ".join(f"invocation {n}: {explained[n]}" for n in sorted(explained, key=int))
            metric |= {"score": score, "status": status, "explanation": text or None}
            metric["runs"] = [{k: metric[k] for k in ("score", "status", "per_invocation", "per_invocation_status")}]
        statuses = {m["status"] for m in row["metrics"].values()}
        row["status"] = FAILED if FAILED in statuses else PASSED if PASSED in statuses else NOT_EVALUATED
        return {**result, "status": row["status"], "scores": {n: m["score"] for n, m in row["metrics"].items()}}
