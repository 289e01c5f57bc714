"""ADK's recorded runs scored again, and toolpath's eval-set runs written as ADK's eval history.

``score_recorded`` judges the invocations ADK recorded (``*.evalset_result.json``) against the expected ones —
the eval set's, when it is given, else those recorded beside them — with the criteria of a ``test_config.json``
or the defaults, without running anything. ``write_adk_history`` saves an :class:`EvalSetResult` as ADK's
``EvalSetResult`` files (one per eval set, one case result per case and run, with the run's session as ADK's
``session_details``: its events name the agent behind each call and answer), so ``adk web`` lists toolpath's runs
next to its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets.adk_models import EFFICIENCY_METRICS
from toolpath.evaluation.evalsets.adk_models import EvalStatus as AdkEvalStatus
from toolpath.evaluation.evalsets.case_judging import LazyJudge, judge_case
from toolpath.evaluation.evalsets.case_results import FAILED, NOT_EVALUATED, PASSED, CaseResult, EvalSetResult, collect
from toolpath.evaluation.evalsets.conversions import invocation_json, session_events_json
from toolpath.evaluation.evalsets.criteria import Criterion, criteria_of, resolve_criteria
from toolpath.evaluation.evalsets.files import DEFAULT_CRITERIA, EvalConfig, EvalSet
from toolpath.evaluation.evalsets.result_files import RecordedCase, write_eval_set_result
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.judges.client import Judge
from toolpath.model import EvalCase, EvalStatus, Invocation


def score_recorded(
    recorded: Sequence[RecordedCase],
    *,
    eval_sets: Sequence[EvalSet] = (),
    config: EvalConfig | None = None,
    judge: Judge | None = None,
    store: Any = None,
) -> EvalSetResult:
    """Judge ADK's recorded case results. With ``eval_sets``, each case is judged against its eval set's case
    (and, without ``config``, by that set's criteria); ``config`` overrides the criteria, else ADK's defaults."""
    by_id = {(s.eval_set_id, case.eval_id): (s, case) for s in eval_sets for case in s.cases}
    default = config or EvalConfig(dict(DEFAULT_CRITERIA))
    default_plan = resolve_criteria(default.criteria, default.custom_metrics, source=default.path or "default criteria")
    plans: dict[int, dict[str, Criterion]] = {}
    judges = LazyJudge(judge, store)
    cases = []
    for rc in recorded:
        where = f"{rc.source}: eval case {rc.eval_id!r} of eval set {rc.eval_set_id!r}"
        if eval_sets:
            found = by_id.get((rc.eval_set_id, rc.eval_id))
            if found is None:
                raise DatasetError(f"{where}: not in the eval set(s) given")
            eval_set, case = found
            plan = plans.setdefault(id(eval_set), criteria_of(eval_set, config))
        else:
            case = EvalCase(eval_set_id=rc.eval_set_id, eval_id=rc.eval_id, invocations=rc.expected or [])
            plan = default_plan
        if rc.actual and case.invocations and len(case.invocations) != len(rc.actual):
            raise DatasetError(
                f"{where}: {len(rc.actual)} recorded invocation(s) against {len(case.invocations)} expected"
            )
        outcomes = [_outcome(rc, i) for i in range(len(rc.actual))]
        result = judge_case(
            case, plan, [outcomes], judges, sessions=[rc.session_id], efficiency=[[a.efficiency for a in rc.actual]]
        )
        if not rc.actual and (case.invocations or rc.recorded_status == FAILED):  # ADK's failed inference
            result.status = FAILED
            result.run_errors = [_NO_INVOCATIONS]  # written back as ADK writes one: FAILED, no metric results
            for metric in result.metrics.values():
                metric.explanation = _NO_INVOCATIONS
        cases.append(result)
    return collect(cases, uuid.uuid4().hex[:12])


_NO_INVOCATIONS = "the recorded run has no invocations (the agent failed)"


def _outcome(rc: RecordedCase, index: int) -> AgentOutcome:
    actual = rc.actual[index]
    seconds = actual.efficiency["duration_details"]["total_seconds"]
    invocation = Invocation(
        invocation_id=actual.invocation_id or f"{rc.eval_id}-{index + 1}",
        session_id=rc.session_id,
        prompt=actual.prompt,
        response=actual.response,
        tool_calls=actual.tool_calls,
        intermediate_responses=actual.intermediate_responses,
        latency_seconds=seconds,
    )
    return AgentOutcome(actual.response, actual.tool_calls, seconds, 0, None, invocation, adk_invocation=actual.adk)


# --- writing ADK's eval history ------------------------------------------------------------------------------


def write_adk_history(result: EvalSetResult, app_dir: str | Path, *, user_id: str = "test_user_id") -> list[Path]:
    """One ADK ``EvalSetResult`` file per eval set of ``result`` in ``app_dir/.adk/eval_history/``."""
    by_set: dict[str, list[dict[str, Any]]] = {}
    for case in result.cases:
        by_set.setdefault(case.eval_set_id, []).extend(_case_results(case, user_id, Path(app_dir).resolve().name))
    return [write_eval_set_result(app_dir, set_id, results) for set_id, results in by_set.items()]


def _case_results(case: CaseResult, user_id: str, app_name: str) -> list[dict[str, Any]]:
    expected = case.case.invocations if case.case is not None else []
    out = []
    for run, outcomes in enumerate(case.outcomes or [[]]):
        if case.run_error(run) is not None:  # ADK's failed inference: FAILED, with no metric results
            out.append(_failed_run(case, run, user_id))
            continue
        efficiency = case.run_efficiency[run] if run < len(case.run_efficiency) else {}
        figures = efficiency.get("per_invocation") or []
        overall = [_metric(c, m.run_scores[run], m.run_status[run]) for c, m in _pairs(case) if run < len(m.run_status)]
        overall += _efficiency_metrics(efficiency)
        per_invocation = []
        events: list[dict[str, Any]] = []
        for i, outcome in enumerate(outcomes):
            figure = figures[i] if i < len(figures) else {}
            invocation = outcome.invocation
            events += _events(outcome, i, case, app_name)
            per_invocation.append(
                {
                    "actual_invocation": invocation_json(
                        prompt=invocation.prompt if invocation and invocation.prompt is not None else _prompt(case, i),
                        response=outcome.response,
                        tool_calls=outcome.tool_calls,
                        intermediate_responses=invocation.intermediate_responses if invocation else (),
                        invocation_id=invocation.invocation_id if invocation else None,
                        creation_timestamp=invocation.started_at.timestamp()
                        if invocation and invocation.started_at
                        else 0.0,
                        duration=figure.get("duration_details"),
                    ),
                    "expected_invocation": _expected(expected[i]) if len(expected) == len(outcomes) else None,
                    "eval_metric_results": [_invocation_metric(c, m, run, i) for c, m in _pairs(case)]
                    + _efficiency_metrics(figure),
                }
            )
        statuses = [m.run_status[run] for _, m in _pairs(case) if run < len(m.run_status)]
        final = FAILED if FAILED in statuses else PASSED if PASSED in statuses else NOT_EVALUATED
        if not outcomes and expected:
            final = FAILED
        session_id = case.sessions[run] if run < len(case.sessions) else ""
        case_user = (case.case.user_id if case.case is not None else None) or user_id
        session: dict[str, Any] = {
            "id": session_id,
            "app_name": app_name,
            "user_id": case_user,
            "state": {},
            "events": events,
        }
        session["last_update_time"] = max((event["timestamp"] for event in events), default=0.0)
        out.append(
            {
                "eval_set_file": case.eval_set_id,
                "eval_set_id": case.eval_set_id,
                "eval_id": case.eval_id,
                "final_eval_status": AdkEvalStatus[final].value,
                "overall_eval_metric_results": overall,
                "eval_metric_result_per_invocation": per_invocation,
                "session_id": session_id,
                "session_details": session,
                "user_id": case_user,
                "repetition_index": run,  # google-adk 2.14's run index; earlier releases ignore it
            }
        )
    return out


def _events(outcome: AgentOutcome, index: int, case: CaseResult, app_name: str) -> list[dict[str, Any]]:
    """One turn of a run as its session's events, each call's and the answer's of the agent that made it."""
    invocation = outcome.invocation
    return session_events_json(
        invocation_id=(invocation.invocation_id if invocation else None) or f"{case.eval_id}-{index + 1}",
        prompt=invocation.prompt if invocation and invocation.prompt is not None else _prompt(case, index),
        response=outcome.response,
        tool_calls=outcome.tool_calls,
        intermediate_responses=invocation.intermediate_responses if invocation else (),
        agent=(invocation.agent_name if invocation else None) or app_name,
        answered_by=invocation.answered_by if invocation else None,
        timestamp=invocation.started_at.timestamp() if invocation and invocation.started_at else 0.0,
    )


def _failed_run(case: CaseResult, run: int, user_id: str) -> dict[str, Any]:
    return {
        "eval_set_file": case.eval_set_id,
        "eval_set_id": case.eval_set_id,
        "eval_id": case.eval_id,
        "final_eval_status": AdkEvalStatus.FAILED.value,
        "overall_eval_metric_results": [],
        "eval_metric_result_per_invocation": [],
        "session_id": case.sessions[run] if run < len(case.sessions) else "",
        "user_id": (case.case.user_id if case.case is not None else None) or user_id,
        "repetition_index": run,
    }


def _pairs(case: CaseResult) -> list[tuple[Criterion, Any]]:
    return [(case.criteria[name], metric) for name, metric in case.metrics.items() if name in case.criteria]


def _prompt(case: CaseResult, index: int) -> str:
    invocations = case.case.invocations if case.case is not None else []
    return invocations[index].prompt if index < len(invocations) else ""


def _expected(invocation: Any) -> dict[str, Any]:
    return invocation_json(
        prompt=invocation.prompt,
        response=invocation.reference,
        tool_calls=invocation.reference_trajectory,
        intermediate_responses=invocation.intermediate_responses,
        invocation_id=invocation.invocation_id,
    )


def _metric(
    criterion: Criterion, score: float | None, status: EvalStatus, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "metric_name": criterion.name,
        "threshold": criterion.threshold,
        "criterion": {**criterion.options, "threshold": criterion.threshold},
        "custom_function_path": criterion.custom_function_path,
        "score": score,
        "eval_status": AdkEvalStatus[status].value,
        "details": dict(details or {}),
    }


def _invocation_metric(criterion: Criterion, metric: Any, run: int, index: int) -> dict[str, Any]:
    scores = metric.run_per_invocation[run] if run < len(metric.run_per_invocation) else []
    score = scores[index] if index < len(scores) else None
    status = NOT_EVALUATED if score is None else PASSED if score >= criterion.threshold else FAILED
    if len(metric.run_status) == 1 and index < len(metric.per_invocation_status):
        status = metric.per_invocation_status[index]  # as an ADK custom metric reported it
    return _metric(criterion, score, status)


def _efficiency_metrics(figures: Mapping[str, Any]) -> list[dict[str, Any]]:
    if not figures:
        return []
    out = []
    for name in EFFICIENCY_METRICS:
        details: dict[str, Any] = {}
        if name == "token_usage_v1":
            details["token_usage_details"] = figures.get("token_usage_details")
        if name == "invocation_duration_v1":
            details["duration_details"] = figures.get("duration_details")
        out.append(
            {
                "metric_name": name,
                "threshold": None,
                "criterion": None,
                "custom_function_path": None,
                "score": figures.get(name),
                "eval_status": AdkEvalStatus.INFORMATIONAL.value,
                "details": details,
            }
        )
    return out
