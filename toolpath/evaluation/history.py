"""Save evaluation runs to the store, so they can be listed and compared later (``toolpath runs``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolpath.store.store import Store

if TYPE_CHECKING:  # results are read here, not built: the runner and the eval-set runner call this module
    from toolpath.evaluation.evalset import EvalSetResult
    from toolpath.evaluation.runner import EvalResult


def describe_target(target: Any) -> str | None:
    """A readable name for an agent or dataset argument."""
    if target is None:
        return None
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    return f"{module}:{name}" if module else str(name)


def save_dataset_run(
    store: Store, result: EvalResult, *, dataset: str, agent: str | None, metrics: Sequence[str], started_ns: int
) -> None:
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": "dataset",
            "dataset": dataset,
            "agent": agent,
            "metrics": list(metrics),
            "started_at": started_ns,
            "finished_at": time.time_ns(),
            "row_count": len(result.metrics_table),
            "failed_count": None,
            "summary": result.summary_metrics,
        },
        [
            {
                "run_id": result.run_id,
                "position": i,
                "case_id": _case_id(row, i),
                "invocation_id": row.get("invocation_id"),
                "status": None,
                "scores": {name: row.get(f"{name}/score") for name in result.metric_names},
                "row": row,
            }
            for i, row in enumerate(result.metrics_table)
        ],
    )


def save_evalset_run(
    store: Store, result: EvalSetResult, *, dataset: str, agent: str | None, criteria: Any, started_ns: int
) -> None:
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": "evalset",
            "dataset": dataset,
            "agent": agent,
            "metrics": criteria if criteria is not None else {},
            "started_at": started_ns,
            "finished_at": time.time_ns(),
            "row_count": len(result.cases),
            "failed_count": sum(case.status == "FAILED" for case in result.cases),
            "summary": result.summary_metrics,
        },
        [
            {
                "run_id": result.run_id,
                "position": i,
                "case_id": f"{case.eval_set_id}/{case.eval_id}",
                "invocation_id": None,
                "status": case.status,
                "scores": {name: m.score for name, m in case.metrics.items()},
                "row": {**case.to_dict(), "turns": case.turns},
            }
            for i, case in enumerate(result.cases)
        ],
    )


def _case_id(row: dict[str, Any], index: int) -> str:
    for key in ("case_id", "eval_id", "id"):
        if row.get(key) is not None:
            return str(row[key])
    return str(index)


def save_replay_run(store: Store, result: Any, *, agent: str | None, started_ns: int) -> None:
    """A replay: one result row per replayed turn, with its diff against the recording."""
    turns = [(session, turn) for session in result.sessions for turn in session.turns]
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": "replay",
            "dataset": f"{len(result.sessions)} recorded session(s)",
            "agent": agent,
            "metrics": {"metrics": result.metric_names, "thresholds": result.thresholds},
            "started_at": started_ns,
            "finished_at": time.time_ns(),
            "row_count": len(turns),
            "failed_count": sum(1 for s in result.sessions if s.changed),
            "summary": result.summary_metrics,
        },
        [
            {
                "run_id": result.run_id,
                "position": i,
                "case_id": session.original_session_id,
                "invocation_id": turn.get("recorded_invocation_id"),
                "status": "changed" if turn["changes"] or turn["response_changed"] else "same",
                "scores": {name: turn.get(f"{name}/score") for name in result.metric_names},
                "row": {**turn, "session_id": session.session_id, "original_session_id": session.original_session_id},
            }
            for i, (session, turn) in enumerate(turns)
        ],
    )
