"""Run ADK eval sets against an agent and judge each case by its criteria (``test_config.json``).

Each case's conversation is replayed turn by turn in one session (a fresh session per run, or the case's own
``session_input.session_id``; for agents that keep sessions, such as ADK agents, started from the case's
``session_input``), traced like any agent run, and judged per criterion as ADK judges it
(:mod:`toolpath.evaluation.evalsets.case_judging`). The criteria are checked before anything runs
(:mod:`toolpath.evaluation.evalsets.criteria`: an unknown name or key is an error). Every case also gets ADK's
informational efficiency figures (:mod:`toolpath.evaluation.evalsets.efficiency`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolpath import tracing
from toolpath.errors import ConfigError, DatasetError
from toolpath.evaluation.evalsets.adk_efficiency import adk_counted
from toolpath.evaluation.evalsets.adk_invocations import attach_recorded
from toolpath.evaluation.evalsets.case_judging import LazyJudge, judge_case
from toolpath.evaluation.evalsets.case_results import (
    FAILED,
    NOT_EVALUATED,
    PASSED,
    CaseResult,
    CriterionResult,
    EvalSetResult,
    RunResult,
    collect,
    eval_status,
)
from toolpath.evaluation.evalsets.criteria import Criterion, criteria_of, resolve_criteria
from toolpath.evaluation.evalsets.efficiency import spans_under, traced_efficiency
from toolpath.evaluation.evalsets.files import EvalConfig, EvalSet
from toolpath.evaluation.evalsets.scripted_runs import run_conversation
from toolpath.evaluation.evalsets.simulation.scenarios import SimulatorJudge, check_scenario_case, run_scenario
from toolpath.evaluation.like_with_like import kept_turns
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.evaluation.targets import Target, describe_target, resolve_target
from toolpath.evaluation.verdicts import RunKind
from toolpath.judges.client import Judge
from toolpath.model import EvalCase, EvalStatus
from toolpath.store.store import Store

__all__ = [
    "FAILED",
    "NOT_EVALUATED",
    "PASSED",
    "CaseResult",
    "CriterionResult",
    "EvalSetResult",
    "EvalStatus",
    "RunResult",
    "eval_status",
    "evaluate_eval_sets",
    "score_case",
]


def evaluate_eval_sets(
    eval_sets: Sequence[EvalSet],
    agent: Any,
    *,
    runs: int = 1,
    criteria: Mapping[str, Any] | EvalConfig | None = None,
    timeout: float = 30.0,
    on_case: Callable[[CaseResult], None] | None = None,
    store: Any = None,
    judge: Judge | None = None,
    fresh: bool = False,
    simulator_judge: Judge | None = None,
) -> EvalSetResult:
    """Run every case of ``eval_sets`` against ``agent`` ``runs`` times and judge it.

    ``criteria`` overrides each eval set's own (from its ``test_config.json`` or the defaults). Every criterion is
    checked first: an unknown name or key raises :class:`~toolpath.errors.ConfigError` before anything runs.
    With ``store``, the run and each case's result are saved there. Judge criteria (``final_response_match_v2``…)
    ask ``judge`` (by default one configured from the environment, caching replies in the store). Cases with a
    ``conversation_scenario`` are played by a simulated user
    (:mod:`toolpath.evaluation.evalsets.simulation.scenarios`) asking
    ``simulator_judge`` (by default as ``judge``); its replies are replayed from the store unless ``fresh``.
    """
    started_ns = time.time_ns()
    if runs < 1:
        raise ConfigError(f"runs must be at least 1, got {runs}")
    plans = [(eval_set, criteria_of(eval_set, criteria)) for eval_set in eval_sets]
    simulators = [_simulator_of(eval_set, criteria) for eval_set in eval_sets]
    for (eval_set, plan), simulator in zip(plans, simulators, strict=True):
        check_runnable(eval_set, plan, simulator)
    run_id = uuid.uuid4().hex[:12]
    cases: list[CaseResult] = []
    judges = LazyJudge(judge, store)
    users = SimulatorJudge(store, fresh, simulator_judge)
    if any(case.conversation_scenario is not None for eval_set in eval_sets for case in eval_set.cases):
        users.connect()  # no credentials: an error now, before any agent runs
    active = tracing.current()
    spans_store = store if store is not None else active.store if active is not None else None
    with resolve_target(agent) as target:
        for (eval_set, plan), simulator in zip(plans, simulators, strict=True):
            for case in eval_set.cases:
                play = _Play(users, simulator, timeout)
                case_result = _run_case(case, target, plan, runs, run_id, play, judges, spans_store)
                cases.append(case_result)
                if on_case is not None:
                    on_case(case_result)
    result = collect(cases, run_id)
    if store is not None:
        save_evalset_run(
            store,
            result,
            dataset=", ".join(str(s.path or s.eval_set_id) for s in eval_sets),
            agent=describe_target(agent),
            criteria={
                str(s.path or s.eval_set_id): {n: {**c.options, "threshold": c.threshold} for n, c in plan.items()}
                for s, plan in plans
            },
            started_ns=started_ns,
        )
    return result


def _simulator_of(eval_set: EvalSet, override: Mapping[str, Any] | EvalConfig | None) -> Any:
    if isinstance(override, EvalConfig):
        return override.user_simulator
    return eval_set.user_simulator


def check_runnable(eval_set: EvalSet, plan: Mapping[str, Criterion] | None = None, simulator: Any = None) -> None:
    """What toolpath cannot run against an agent or judge, said before anything runs (``plan``: the criteria;
    ``simulator``: the ``user_simulator_config``, by default the eval set's)."""
    for case in eval_set.cases:
        where = f"{case.source or eval_set.path or eval_set.eval_set_id}: eval case {case.eval_id!r}"
        if case.conversation_scenario is not None:
            check_scenario_case(where, case, plan, simulator if simulator is not None else eval_set.user_simulator)
        for i, invocation in enumerate(case.invocations):
            if not invocation.prompt:
                raise DatasetError(f"{where}: invocation {i + 1}: the user content has no text to send to the agent")


class _Play:
    """How a case's conversations are played: the simulated users' client and config, the agent's timeout."""

    def __init__(self, users: SimulatorJudge, simulator: Any, timeout: float) -> None:
        self.users, self.simulator, self.timeout = users, simulator, timeout


def _run_case(
    case: EvalCase,
    agent: Target,
    plan: Mapping[str, Criterion],
    runs: int,
    run_id: str,
    play: _Play,
    judges: LazyJudge,
    spans_store: Any,
) -> CaseResult:
    per_run: list[list[AgentOutcome]] = []
    sessions = []
    efficiency = []
    errors: list[str | None] = []
    for run in range(runs):
        session_id = case.session_id or f"eval-{run_id}-{case.eval_set_id}-{case.eval_id}-{run}"
        sessions.append(session_id)
        agent.start_session(session_id, app_name=case.app_name, user_id=case.user_id, state=case.initial_state)
        if case.conversation_scenario is not None:
            played = run_scenario(
                agent, case, play.simulator, play.users.get(), session_id=session_id, run=run, timeout=play.timeout
            )
            outcomes, error = played.outcomes, played.error
        else:
            scripted = run_conversation(agent, case, session_id=session_id, timeout=play.timeout)
            outcomes, error = scripted.outcomes, scripted.error
        per_run.append(attach_recorded(agent.host, session_id, outcomes))  # with ADK's invocations, for its judges
        errors.append(error)
        # a run that failed has no metric results in ADK, its efficiency figures included
        traced = [] if error else outcomes
        efficiency.append(
            [
                adk_counted(traced_efficiency(o.invocation, spans_under(spans_store, o.invocation)), o.adk_invocation)
                for o in traced
            ]
        )
    return judge_case(case, plan, per_run, judges, sessions=sessions, efficiency=efficiency, errors=errors)


def score_case(
    case: EvalCase,
    per_run: Sequence[Sequence[AgentOutcome]],
    criteria: Mapping[str, Any],
    *,
    judge: Judge | None = None,
    store: Any = None,
) -> CaseResult:
    """Judge one case from what its agent did: per run, one :class:`AgentOutcome` per invocation of the case.
    This is how :func:`evaluate_eval_sets` judges each case after running the agent."""
    for run, outcomes in enumerate(per_run):
        if case.conversation_scenario is None and len(outcomes) != len(case.invocations):
            count = len(case.invocations)
            raise ConfigError(f"{case.eval_id}: run {run + 1} has {len(outcomes)} outcome(s) for {count} invocation(s)")
    plan = resolve_criteria(dict(criteria), source="criteria")
    runs = [list(outcomes) for outcomes in per_run]
    return judge_case(case, plan, runs, LazyJudge(judge, store), sessions=[], efficiency=[[] for _ in runs])


def save_evalset_run(
    store: Store, result: EvalSetResult, *, dataset: str, agent: str | None, criteria: Any, started_ns: int
) -> None:
    store.write_eval_run(
        {
            "run_id": result.run_id,
            "kind": RunKind.EVALSET,
            "dataset": dataset,
            "agent": agent,
            "metrics": criteria if criteria is not None else {},
            "started_at": started_ns,
            "finished_at": time.time_ns(),
            "row_count": len(result.cases),
            "failed_count": sum(case.status == FAILED for case in result.cases),
            "summary": result.summary_metrics,
        },
        [
            {
                "run_id": result.run_id,
                "position": i,
                "case_id": f"{case.eval_set_id}/{case.eval_id}",
                "invocation_id": case.invocation_id,
                "status": case.status,
                "scores": {name: m.score for name, m in case.metrics.items()},
                "row": {**case.to_dict(), "turns": kept_turns(case.turns)},
            }
            for i, case in enumerate(result.cases)
        ],
    )
