"""Eval cases with a ``conversation_scenario``: a simulated user talks with the agent, turn by turn, in one session.

As ADK's ``EvaluationGenerator`` runs them: the simulator (:mod:`toolpath.evaluation.evalsets.simulation.simulator`)
writes each user message, the agent answers it as a traced invocation of the case's session (its spans marked
``toolpath.simulated_user``), until the simulator stops or reaches its limit. Where ADK's inference would fail, the
run fails with the reason and keeps the turns made so far (stored like any traffic): the simulator's model gives
no message, or the agent raises (the simulator would then talk to a failure).

The criteria are checked first: those that need expected tool use or responses, which a scenario does not have
(ADK raises ``expected_invocations is needed by this metric`` for them), are refused before anything runs; so is every
scenario when google-adk (the ``adk`` extra), which gives the simulated user its prompt, cannot be imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.agent_runs import run_agent
from toolpath.evaluation.catalog import metric_info
from toolpath.evaluation.evalsets.criteria import Criterion
from toolpath.evaluation.evalsets.simulation.prompts import require_simulator_prompt
from toolpath.evaluation.evalsets.simulation.simulator import (
    Exchange,
    Scenario,
    SimulatorError,
    SimulatorStatus,
    UserSimulator,
    simulator_config,
)
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.evaluation.targets import Target
from toolpath.judges.client import Judge, settings_from
from toolpath.model import EvalCase
from toolpath.tracer import semconv as sc
from toolpath.tracer import spans

_EXPECTED = ("reference", "reference_trajectory")


@dataclass
class SimulatedRun:
    """One run of a scenario: the agent's turns, why the conversation ended, and the run's error if it failed."""

    outcomes: list[AgentOutcome] = field(default_factory=list)
    ended: SimulatorStatus | None = None
    """``stop_signal_detected`` or ``turn_limit_reached`` (ADK's statuses); ``None`` when the run failed."""
    error: str | None = None


def check_scenario_case(where: str, case: EvalCase, plan: Mapping[str, Criterion] | None, simulator: Any) -> None:
    """A scenario case toolpath can run and judge, or a :class:`ConfigError` saying why not."""
    scenario = case.conversation_scenario or {}
    if scenario.get("user_persona") is not None:
        raise ConfigError(f"{where}: conversation_scenario.user_persona is not supported by toolpath's simulator")
    try:
        simulator_config(simulator)
        require_simulator_prompt()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    for name, criterion in (plan or {}).items():
        if criterion.custom_function_path is not None:
            continue
        needs = [column for column in _EXPECTED if column in metric_info(criterion.metric).inputs]
        if needs:
            raise ConfigError(
                f"{where}: criterion {name!r} needs the expected {' and '.join(needs)} of each turn, which a "
                "conversation_scenario does not give (as in ADK); judge simulated conversations by criteria "
                "without references, such as multi_turn_task_success_v1 or hallucinations_v1"
            )


class SimulatorJudge:
    """The simulated users' model client of one evaluation, made on first use (or up front by :meth:`connect`)."""

    def __init__(self, store: Any, fresh: bool = False, judge: Judge | None = None) -> None:
        self._store, self._fresh, self._judge = store, fresh, judge

    def get(self) -> Judge:
        if self._judge is None:
            self._judge = Judge(settings_from(None), cache=self._store, fresh=self._fresh)
        return self._judge

    def connect(self) -> None:
        self.get().connect()


def run_scenario(
    target: Target,
    case: EvalCase,
    simulator: Any,
    judge: Judge,
    *,
    session_id: str,
    run: int = 0,
    timeout: float = 30.0,
) -> SimulatedRun:
    """Play ``case``'s scenario against ``target`` in ``session_id`` (already started)."""
    assert case.conversation_scenario is not None
    user = UserSimulator(
        simulator_config(simulator), Scenario.of(case.conversation_scenario), judge, session_id=session_id, run=run
    )
    result = SimulatedRun()
    exchanges: list[Exchange] = []
    while True:
        turn = len(result.outcomes) + 1
        try:
            message = user.next_message(exchanges)
        except SimulatorError as exc:
            result.error = f"turn {turn}: {exc}"
            return result
        if message.text is None:
            result.ended = message.status
            return result
        with spans.run_attributes({sc.TOOLPATH_SIMULATED_USER: True, sc.TOOLPATH_SIMULATED_TURN: turn}):
            outcome = run_agent(target, message.text, session_id=session_id, timeout=timeout)
        outcome.prompt = message.text
        result.outcomes.append(outcome)
        if outcome.failure:
            result.error = f"turn {turn}: the agent failed: {outcome.error}"
            return result
        exchanges.append(_exchange(outcome, message.text, target))


def _exchange(outcome: AgentOutcome, prompt: str, target: Target) -> Exchange:
    invocation = outcome.invocation
    agent = (invocation.agent_name if invocation is not None else None) or target.spec.name or "agent"
    return Exchange(
        prompt,
        agent,
        outcome.response,
        [(str(author), str(text)) for author, text in invocation.intermediate_responses] if invocation else [],
        outcome.tool_calls,
    )
