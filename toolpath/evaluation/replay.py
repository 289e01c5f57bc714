"""Replay recorded sessions against another agent version and show what changed.

Each selected session is re-run turn by turn (the same user messages, in order) in a new session of its own,
traced into the store like any run; the new invocations are scored with the recorded ones as references (the
recorded tool calls as ``reference_trajectory``, the recorded answer as ``reference``), and each turn's
trajectory is diffed against the recording (:mod:`toolpath.metrics.diff`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.errors import MetricError
from toolpath.evaluation.agent_runs import run_agent
from toolpath.evaluation.catalog import pass_rules, passes, resolve_metric
from toolpath.evaluation.outcome_rows import outcome_row, stored_ids
from toolpath.evaluation.runner import evaluate
from toolpath.evaluation.scoring import prepare_judge
from toolpath.evaluation.targets import Target, resolve_target
from toolpath.evaluation.verdicts import ReplayStatus, RunKind
from toolpath.metrics.diff import trajectory_diff
from toolpath.model import Session
from toolpath.store.store import Store

DEFAULT_METRICS = ("trajectory_exact_match", "trajectory_f1", "tool_argument_similarity", "response_match_score")


@dataclass
class ReplayedSession:
    original_session_id: str
    session_id: str
    turns: list[dict[str, Any]]
    """Per turn: prompt, reference (recorded answer), response, reference/predicted trajectory, changes,
    response_changed, the metric scores and explanations, latency and failure."""

    @property
    def trajectory_changed(self) -> bool:
        return any(turn["changes"] for turn in self.turns)

    @property
    def response_changed(self) -> bool:
        return any(turn["response_changed"] for turn in self.turns)

    @property
    def changed(self) -> bool:
        return self.trajectory_changed or self.response_changed

    def to_dict(self) -> dict[str, Any]:
        return {
            "original_session_id": self.original_session_id,
            "session_id": self.session_id,
            "changed": self.changed,
            "trajectory_changed": self.trajectory_changed,
            "response_changed": self.response_changed,
            "turns": self.turns,
        }


@dataclass
class ReplayResult:
    run_id: str
    sessions: list[ReplayedSession]
    summary_metrics: dict[str, Any]
    metric_names: list[str]
    thresholds: dict[str, float] = field(default_factory=dict)
    failed_thresholds: dict[str, float | None] = field(default_factory=dict)
    """Metric -> mean score, for each configured threshold the mean did not pass (below it, or above it for a
    metric where lower is better)."""
    rules: dict[str, Any] = field(default_factory=dict)
    """Per metric, how a score passes (:func:`toolpath.evaluation.catalog.passes`'s arguments)."""

    @property
    def passed(self) -> bool:
        return not self.failed_thresholds

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "summary_metrics": self.summary_metrics,
            "thresholds": self.thresholds,
            "failed_thresholds": self.failed_thresholds,
            "changed_sessions": [s.original_session_id for s in self.sessions if s.changed],
            "sessions": [s.to_dict() for s in self.sessions],
        }


def replay_sessions(
    sessions: Sequence[Session],
    agent: Any,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    thresholds: Mapping[str, float] | None = None,
    timeout: float = 30.0,
    on_session: Callable[[ReplayedSession], None] | None = None,
    judge: Any = None,
) -> ReplayResult:
    """Re-run ``sessions`` against ``agent`` and score the new turns against the recorded ones."""
    thresholds = dict(thresholds or {})
    resolved = [resolve_metric(m) for m in metrics]
    rules = pass_rules(resolved, thresholds)
    unknown = sorted(set(thresholds) - set(rules))
    if unknown:
        raise MetricError(f"threshold for {', '.join(unknown)}: not among the metrics ({', '.join(rules)})")
    judge = prepare_judge(resolved, judge)  # no credentials: an error before any session is replayed
    run_id = uuid.uuid4().hex[:12]
    replayed: list[ReplayedSession] = []
    rows: list[dict[str, Any]] = []
    with resolve_target(agent) as target:
        for session in sessions:
            replayed.append(_replay_session(session, target, f"replay-{run_id}-{session.session_id}", timeout, rows))
            if on_session is not None:
                on_session(replayed[-1])
    scored = evaluate(rows, resolved, judge=judge) if rows else None
    if scored is not None:
        for row, out in zip(rows, scored.metrics_table, strict=True):
            for metric in resolved:
                row[f"{metric.name}/score"] = out.get(f"{metric.name}/score")
                row[f"{metric.name}/explanation"] = out.get(f"{metric.name}/explanation")
    summary = scored.summary_metrics if scored is not None else {"row_count": 0}
    summary["sessions"] = len(replayed)
    summary["changed_sessions"] = sum(s.changed for s in replayed)
    failed = {
        name: summary.get(f"{name}/mean")
        for name in thresholds
        if not passes(summary.get(f"{name}/mean"), **rules[name])  # no mean at all fails too
    }
    return ReplayResult(run_id, replayed, summary, [m.name for m in resolved], thresholds, failed, rules)


def _replay_session(
    session: Session, target: Target, new_session: str, timeout: float, rows: list[dict[str, Any]]
) -> ReplayedSession:
    turns = []
    for recorded in session.invocations:
        outcome = run_agent(target, recorded.prompt or "", session_id=new_session, timeout=timeout)
        turn = outcome_row(outcome, recorded.prompt or "")
        turn.update(
            {
                "prompt": recorded.prompt,
                "reference": recorded.response,
                "reference_trajectory": [c.to_item() for c in recorded.tool_calls],
                "changes": [c.to_dict() for c in trajectory_diff(recorded.tool_calls, outcome.tool_calls)],
                "response_changed": (outcome.response or "") != (recorded.response or ""),
                "error": outcome.error,
                "recorded_invocation_id": recorded.invocation_id,
                "recorded_latency_in_seconds": recorded.latency_seconds,
                **stored_ids(outcome.invocation),  # the replayed turn's own trace
            }
        )
        turns.append(turn)
        rows.append(turn)
    return ReplayedSession(session.session_id, new_session, turns)


def save_replay_run(store: Store, result: ReplayResult, *, agent: str | None, started_ns: int) -> None:
    """A replay: one result row per replayed turn, with its diff against the recording."""
    turns = [(session, turn) for session in result.sessions for turn in session.turns]
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": RunKind.REPLAY,
            "dataset": f"{len(result.sessions)} recorded session(s)",
            "agent": agent,
            "metrics": {"metrics": result.metric_names, "thresholds": result.thresholds, "rules": result.rules},
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
                "status": ReplayStatus.CHANGED if turn["changes"] or turn["response_changed"] else ReplayStatus.SAME,
                "scores": {name: turn.get(f"{name}/score") for name in result.metric_names},
                "row": {**turn, "session_id": session.session_id, "original_session_id": session.original_session_id},
            }
            for i, (session, turn) in enumerate(turns)
        ],
    )
