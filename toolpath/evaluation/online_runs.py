"""Online scoring against an ADK eval set kept as an evaluation run of that set, beside ``online_results``: one
run per evaluator start (every ``--workers`` process of one ``toolpath collect`` shares its run: the command makes
the run id once and hands it to them), named ``online <eval set id(s)> <started, UTC>``, of kind ``evalset``, so
``toolpath runs``, ``toolpath report --run`` and the UI's run pages show it and compare it with a live run.

Each scored turn that replays a golden turn is one case result, as a recorded or live eval-set run keeps a case:
its criteria's scores, thresholds and statuses (a criterion's status is the online verdict: PASSED, FAILED, or
NOT_EVALUATED without a score), its session, and the turn (prompt, response, reference, trajectories) linked to
the stored invocation. A one-turn case's result has the case's id, ``<eval set id>/<eval id>``, as in every other
eval-set run; a turn of a case of several is ``<eval set id>/<eval id> turn <n>`` (online scores turns one at a
time: a session's case score is not assembled). The cases are appended in the transaction that closes the turns'
jobs (:func:`toolpath.store.run_appends.append_run_results`): a crash loses both or neither, and a job another
worker took over adds its case once, from that worker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from toolpath.evaluation.online_evalsets import EvalSetReferences
from toolpath.store.reads import StoredTurn
from toolpath.store.run_appends import append_run_results
from toolpath.store.store import Store

__all__ = ["OnlineRun"]

PASSED, FAILED, NOT_EVALUATED = "PASSED", "FAILED", "NOT_EVALUATED"
"""ADK's statuses, as :mod:`toolpath.evaluation.evalsets.case_results` records them (not imported: the tracer
starts online scoring, and eval-set results import the tracer)."""
_STATUS = {"pass": PASSED, "fail": FAILED}


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
            "kind": "evalset",
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
            append_run_results(store, conn, self.row(), [c for c in cases if c["invocation_id"] in closed])

        return append

    def case(self, turn: StoredTurn, results: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The case result (``eval_results`` columns) of one scored turn, or ``None`` if it replays no golden turn."""
        golden = self.references.find(turn.prompt)
        if golden is None or golden.get("eval_id") is None:
            return None
        set_id, eval_id, number = str(golden["eval_set_id"]), str(golden["eval_id"]), int(golden["turn"])
        of = self.references.case_turns.get((set_id, eval_id), 1)
        by_name = {r["metric"]: r for r in results}
        metrics = {}
        for name in self.names:
            result = by_name.get(name, {})
            score = result.get("score")
            status = NOT_EVALUATED if score is None else _STATUS.get(str(result.get("label")), NOT_EVALUATED)
            threshold = self.rules.get(name, {}).get("threshold")
            metrics[name] = {
                "score": score,
                "threshold": threshold,
                "status": status,
                "per_invocation": [score],
                "per_invocation_status": [status],
                "explanation": result.get("explanation"),
                "runs": [
                    {"score": score, "status": status, "per_invocation": [score], "per_invocation_status": [status]}
                ],
            }
        statuses = {m["status"] for m in metrics.values()}
        status = FAILED if FAILED in statuses else PASSED if PASSED in statuses else NOT_EVALUATED
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
        }
        row = {
            "eval_set_id": set_id,
            "eval_id": eval_id,
            "status": status,
            "metrics": metrics,
            "efficiency": {},
            "sessions": [turn.session_id],
            "turns": [[played]],
            "online": {"turn": number, "turns": of, "agent_name": turn.agent_name},
        }
        return {
            "case_id": f"{set_id}/{eval_id}" if of == 1 else f"{set_id}/{eval_id} turn {number}",
            "invocation_id": turn.invocation_id,
            "status": status,
            "scores": {name: m["score"] for name, m in metrics.items()},
            "row": row,
        }
