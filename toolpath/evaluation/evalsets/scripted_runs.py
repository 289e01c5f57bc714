"""An eval case's scripted conversation played against an agent as ADK's inference plays it: its turns in order, in
one session, until one raises.

A turn whose agent raised ends the run there (ADK's failed inference: ``LocalEvalService`` sends no later turn and
judges the run FAILED with no metric results). The turns played so far, the failing one included, are kept: they
are traced and stored like any other, and shown with the run's error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolpath.evaluation.agent_runs import run_agent
from toolpath.evaluation.outcomes import AgentOutcome, crash_message
from toolpath.evaluation.targets import Target
from toolpath.model import EvalCase


@dataclass
class ScriptedRun:
    """One run of a case's conversation: the turns played, and why the run stopped early (``None``: it did not)."""

    outcomes: list[AgentOutcome] = field(default_factory=list)
    error: str | None = None


def run_conversation(target: Target, case: EvalCase, *, session_id: str, timeout: float) -> ScriptedRun:
    """Send ``case``'s user turns to ``target`` in ``session_id`` (already started), stopping after a turn that
    raised."""
    run = ScriptedRun()
    for turn, invocation in enumerate(case.invocations, start=1):
        outcome = run_agent(
            target, invocation.prompt, session_id=session_id, timeout=timeout, message=invocation.user_content
        )
        run.outcomes.append(outcome)
        if outcome.failure:
            run.error = crash_message(turn, outcome.error)
            break
    return run
