"""The results of judging eval cases, as ADK records them: per criterion, per run and per invocation a score and a
status (PASSED, FAILED, NOT_EVALUATED), the case's status, and the run's summary (:func:`collect`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolpath.evaluation.evalsets.criteria import Criterion
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.evaluation.scoring import summarize
from toolpath.model import EvalCase, EvalStatus

PASSED, FAILED, NOT_EVALUATED = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED


def eval_status(score: float | None, threshold: float) -> EvalStatus:
    """ADK's status of a score: NOT_EVALUATED without one, PASSED when it reaches the threshold, else FAILED."""
    if score is None:
        return NOT_EVALUATED
    return PASSED if score >= threshold else FAILED


@dataclass
class RunResult:
    """One criterion in one run of a case, as ADK's ``EvalCaseResult`` records it."""

    score: float | None
    """The evaluator's overall score: the mean over the run's invocations."""
    status: EvalStatus
    per_invocation: list[float | None]
    per_invocation_status: list[EvalStatus]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "status": self.status,
            "per_invocation": self.per_invocation,
            "per_invocation_status": self.per_invocation_status,
        }


@dataclass
class CriterionResult:
    score: float | None
    """The mean of every scored invocation over every run (ADK's ``AgentEvaluator``)."""
    threshold: float
    status: EvalStatus
    per_invocation: list[float | None]
    """Each invocation's score, averaged over the runs."""
    explanation: str | None = None
    per_invocation_status: list[EvalStatus] = field(default_factory=list)
    """PASSED / FAILED / NOT_EVALUATED of each invocation (its mean score over the runs against the threshold,
    or the status an ADK custom metric reported)."""
    run_scores: list[float | None] = field(default_factory=list)
    run_per_invocation: list[list[float | None]] = field(default_factory=list)
    run_status: list[EvalStatus] = field(default_factory=list)
    """Per run: the score, the per-invocation scores and the status (ADK records each run on its own)."""
    run_per_invocation_status: list[list[EvalStatus]] = field(default_factory=list)

    @property
    def runs(self) -> list[RunResult]:
        """Each run as ADK's ``EvalCaseResult`` records it."""
        return [
            RunResult(
                score,
                self.run_status[i] if i < len(self.run_status) else eval_status(score, self.threshold),
                self.run_per_invocation[i] if i < len(self.run_per_invocation) else [],
                self.run_per_invocation_status[i] if i < len(self.run_per_invocation_status) else [],
            )
            for i, score in enumerate(self.run_scores)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "threshold": self.threshold,
            "status": self.status,
            "per_invocation": self.per_invocation,
            "per_invocation_status": self.per_invocation_status,
            "explanation": self.explanation,
            "runs": [run.to_dict() for run in self.runs],
        }


@dataclass
class CaseResult:
    eval_set_id: str
    eval_id: str
    status: EvalStatus
    metrics: dict[str, CriterionResult]
    sessions: list[str] = field(default_factory=list)
    """The session id of each run, to find the traced invocations in the store."""
    turns: list[list[dict[str, Any]]] = field(default_factory=list)
    """Per run, per turn: prompt, response, predicted and reference trajectories."""
    efficiency: dict[str, Any] = field(default_factory=dict)
    """ADK's efficiency figures over every invocation of every run (:func:`case_efficiency`)."""
    run_efficiency: list[dict[str, Any]] = field(default_factory=list)
    case: EvalCase | None = None
    outcomes: list[list[AgentOutcome]] = field(default_factory=list)
    criteria: Mapping[str, Criterion] = field(default_factory=dict)
    """What the case was judged with, and the runs' outcomes (not serialised: for ADK's eval history)."""
    error: str | None = None
    """Why a run of the case could not be completed (a turn raised; a simulated conversation's simulator or agent
    failed): such a run is not judged, and the case is FAILED, as ADK's failed inference."""
    run_errors: list[str | None] = field(default_factory=list)
    """Per run, why it could not be completed (``None``: it was); empty when every run was."""

    def run_error(self, run: int) -> str | None:
        """Why run ``run`` (from 0) could not be completed, or ``None``."""
        return self.run_errors[run] if run < len(self.run_errors) else None

    @property
    def invocation_id(self) -> str | None:
        """The stored invocation of the case's first traced turn: where its result links to its trace."""
        return next((t["invocation_id"] for run in self.turns for t in run if t.get("invocation_id")), None)

    @property
    def simulated(self) -> bool:
        """A simulated user wrote the case's user turns (an ADK ``conversation_scenario``)."""
        return self.case is not None and self.case.conversation_scenario is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "eval_set_id": self.eval_set_id,
            "eval_id": self.eval_id,
            "status": self.status,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "efficiency": self.efficiency,
            "sessions": self.sessions,
        }
        if self.simulated:
            out["simulated_user"] = True
            out["turns"] = self.turns
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class EvalSetResult:
    cases: list[CaseResult]
    summary_metrics: dict[str, Any]
    metrics_table: list[dict[str, Any]]
    metric_names: list[str]
    run_id: str

    @property
    def passed(self) -> bool:
        return all(case.status != FAILED for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary_metrics": self.summary_metrics,
            "metrics_table": self.metrics_table,
            "eval_cases": [case.to_dict() for case in self.cases],
        }


def collect(cases: list[CaseResult], run_id: str) -> EvalSetResult:
    """The result of judged cases: the per-case table and its summary."""
    names = sorted({name for case in cases for name in case.metrics})
    table = [
        {
            "eval_set_id": case.eval_set_id,
            "eval_id": case.eval_id,
            "status": case.status,
            **{f"{n}/score": case.metrics[n].score for n in case.metrics},
            **{f"{n}/explanation": case.metrics[n].explanation for n in case.metrics},
        }
        for case in cases
    ]
    return EvalSetResult(cases, summarize(table, names), table, names, run_id)
