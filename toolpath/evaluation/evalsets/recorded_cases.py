"""ADK eval sets scored against recorded traffic, without running anything: each eval case paired with the
recorded sessions that played it, and judged by the eval set's criteria exactly as a live run of that traffic is
judged (:func:`toolpath.evaluation.evalsets.case_judging.judge_case`, one run per paired session).

A case pairs with a session by its id: the case's ``session_input.session_id``, its ``eval_id``, or the session
a live ``toolpath eval SET --agent`` run gave it (``eval-<run>-<eval set>-<case>-<n>``); else, when asked, by its
turns' user text — the session's prompts, in order, are the case's (``exact``, or ``normalized`` as online
``reference_dataset`` compares them: :func:`toolpath.evaluation.prompt_match.normalize_prompt`). A case that pairs
with no session, or with several (unless each is to be scored: ``each``), is not evaluated, with the reason."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from toolpath.evaluation.evalsets.case_judging import LazyJudge, judge_case
from toolpath.evaluation.evalsets.case_results import NOT_EVALUATED, CaseResult, EvalSetResult, collect
from toolpath.evaluation.evalsets.criteria import criteria_of
from toolpath.evaluation.evalsets.efficiency import spans_under, traced_efficiency
from toolpath.evaluation.evalsets.files import EvalConfig, EvalSet
from toolpath.evaluation.outcomes import AgentOutcome, crash_message
from toolpath.evaluation.prompt_match import normalize_prompt
from toolpath.evaluation.recorded import recorded_sessions
from toolpath.judges.client import Judge
from toolpath.model import EvalCase, EvalStatus, Session, agent_span_id
from toolpath.store.job_status import ResultLabel

__all__ = [
    "Match",
    "Pairing",
    "RecordedSetsResult",
    "export_results",
    "pair_cases",
    "score_recorded_sessions",
    "select_sessions",
]

_LABELS: dict[str, ResultLabel] = {EvalStatus.PASSED: ResultLabel.PASS, EvalStatus.FAILED: ResultLabel.FAIL}


class Match(StrEnum):
    """How a case pairs with recorded sessions besides their id."""

    ID = "id"
    """By session id only."""
    EXACT = "exact"
    """Also by the user text of the case's turns, as it is."""
    NORMALIZED = "normalized"
    """Also by the user text, normalised (case, Unicode form, whitespace, outer punctuation)."""


@dataclass
class Pairing:
    """An eval case and the recorded sessions it pairs with; ``reason`` says why it is not evaluated."""

    eval_set: EvalSet
    case: EvalCase
    sessions: list[Session] = field(default_factory=list)
    how: str | None = None
    """``session id`` or ``user text``."""
    reason: str | None = None

    @property
    def where(self) -> str:
        return f"{self.case.eval_set_id}/{self.case.eval_id}"


@dataclass
class RecordedSetsResult:
    """The judged cases (those not paired are NOT_EVALUATED, with the reason as their explanation) and the
    pairings, unpaired ones with their reasons."""

    result: EvalSetResult
    pairings: list[Pairing]

    @property
    def unpaired(self) -> list[Pairing]:
        return [p for p in self.pairings if p.reason is not None]

    @property
    def passed(self) -> bool:
        """No case failed, and every case was paired and so evaluated."""
        return self.result.passed and not self.unpaired


def select_sessions(
    store: Any,
    *,
    agent_name: str | None = None,
    since: datetime | None = None,
    attributes: Mapping[str, str] | None = None,
    session_ids: Sequence[str] = (),
) -> list[Session]:
    """The recorded sessions cases may pair with: of ``agent_name``, active ``since``, whose invocations carry
    ``attributes`` (each key with that value, as text), or just ``session_ids``."""
    sessions = recorded_sessions(store, session_ids=session_ids, agent_name=agent_name, since=since)
    wanted = dict(attributes or {})
    if wanted:
        sessions = [
            s
            for s in sessions
            if any(all(_text(inv.attributes.get(k)) == v for k, v in wanted.items()) for inv in s.invocations)
        ]
    return sessions


def pair_cases(eval_sets: Sequence[EvalSet], sessions: Sequence[Session], *, match: Match, each: bool) -> list[Pairing]:
    """Each case of ``eval_sets`` with the sessions it pairs with (see the module's description)."""
    by_id: dict[str, Session] = {s.session_id: s for s in sessions}
    texts: dict[tuple[str, ...], list[Session]] = {}
    if match is not Match.ID:
        key = _key(match)
        for session in sessions:
            prompts = [inv.prompt for inv in session.invocations]
            if all(isinstance(p, str) for p in prompts):
                texts.setdefault(tuple(key(p or "") for p in prompts), []).append(session)
    out = []
    for eval_set in eval_sets:
        for case in eval_set.cases:
            pairing = Pairing(eval_set, case)
            if case.conversation_scenario is not None:
                pairing.reason = "a simulated-user case (conversation_scenario) has no turns to pair by"
                out.append(pairing)
                continue
            named = [by_id[i] for i in dict.fromkeys(filter(None, (case.session_id, case.eval_id))) if i in by_id]
            played = re.compile(rf"eval-[0-9a-f]{{12}}-{re.escape(case.eval_set_id)}-{re.escape(case.eval_id)}-\d+")
            named += [s for s in sessions if played.fullmatch(s.session_id)]
            if named:
                pairing.sessions, pairing.how = [s for s in named if _fits(s, case)], "session id"
                if not pairing.sessions:
                    turns = ", ".join(f"{s.session_id} has {len(s.invocations)}" for s in named[:5])
                    pairing.reason = f"the case has {len(case.invocations)} turn(s); recorded session {turns}"
                    out.append(pairing)
                    continue
            elif match is not Match.ID:
                key = _key(match)
                pairing.sessions = list(texts.get(tuple(key(inv.prompt) for inv in case.invocations), []))
                pairing.how = "user text" if pairing.sessions else None
            if not pairing.sessions:
                ids = " or ".join(repr(i) for i in dict.fromkeys(filter(None, (case.session_id, case.eval_id))))
                pairing.reason = f"no recorded session with id {ids}" + (
                    f" or whose user turns are the case's ({match.value} match)"
                    if match is not Match.ID
                    else "; give --match normalized to pair by the user's text"
                )
            elif len(pairing.sessions) > 1 and not each:
                shown = ", ".join(s.session_id for s in pairing.sessions[:5])
                more = f" and {len(pairing.sessions) - 5} more" if len(pairing.sessions) > 5 else ""
                pairing.reason = (
                    f"{len(pairing.sessions)} recorded sessions pair by {pairing.how} ({shown}{more}); narrow them "
                    "(--agent-name, --since, --session-attribute) or score each (--each)"
                )
            out.append(pairing)
    return out


def score_recorded_sessions(
    pairings: Sequence[Pairing],
    *,
    config: EvalConfig | None = None,
    judge: Judge | None = None,
    store: Any = None,
    on_case: Callable[[CaseResult], None] | None = None,
) -> RecordedSetsResult:
    """Judge each paired case on its sessions, each session one run of the case, by its eval set's criteria
    (``config`` instead, if given); cases not paired are NOT_EVALUATED with the reason. ``store`` holds the
    sessions' spans (for ADK's efficiency figures) and caches the judge's replies."""
    plans: dict[int, Any] = {}
    judges = LazyJudge(judge, store)
    cases = []
    for pairing in pairings:
        plan = plans.setdefault(id(pairing.eval_set), criteria_of(pairing.eval_set, config))
        if pairing.reason is not None:
            result = judge_case(pairing.case, plan, [], judges, sessions=[], efficiency=[])
            result.status = NOT_EVALUATED
            for metric in result.metrics.values():
                metric.explanation = pairing.reason
        else:
            per_run, errors, efficiency = [], [], []
            for session in pairing.sessions:
                outcomes, error = _recorded_run(session, len(pairing.case.invocations))
                per_run.append(outcomes)
                errors.append(error)
                traced = [] if error else outcomes
                efficiency.append([traced_efficiency(o.invocation, spans_under(store, o.invocation)) for o in traced])
            sessions = [s.session_id for s in pairing.sessions]
            result = judge_case(
                pairing.case, plan, per_run, judges, sessions=sessions, efficiency=efficiency, errors=errors
            )
        cases.append(result)
        if on_case is not None:
            on_case(result)
    return RecordedSetsResult(collect(cases, uuid.uuid4().hex[:12]), list(pairings))


def _recorded_run(session: Session, turns: int) -> tuple[list[AgentOutcome], str | None]:
    """A session's turns as a live run's outcomes, up to the turn that failed (a live run stops there)."""
    outcomes = []
    for number, inv in enumerate(session.invocations[:turns], start=1):
        outcomes.append(AgentOutcome(inv.response, inv.tool_calls, inv.latency_seconds, inv.failure, inv.error, inv))
        if inv.failure:
            return outcomes, crash_message(number, inv.error)
    return outcomes, None


def _fits(session: Session, case: EvalCase) -> bool:
    """The session played the case's turns: as many, or fewer up to one that failed (a live run stops there)."""
    played, turns = session.invocations, len(case.invocations)
    return len(played) == turns or (0 < len(played) < turns and bool(played[-1].failure))


def _key(match: Match) -> Callable[[str], str]:
    return normalize_prompt if match is Match.NORMALIZED else str


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else str(value)


def export_results(scored: RecordedSetsResult, exporter: Any) -> int:
    """Send every per-invocation result of the paired cases as a ``gen_ai.evaluation.result`` event parented to
    the evaluated invocation's agent span (``exporter``: a
    :class:`~toolpath.evaluation.online.result_export.ResultExporter`): the criterion's name, the invocation's score
    in that run, ``pass`` / ``fail`` by its status (``error`` when not scored) and the criterion's explanation.
    Returns how many were sent."""
    sent = 0
    by_case = {(c.eval_set_id, c.eval_id): c for c in scored.result.cases}
    for pairing in scored.pairings:
        result = by_case.get((pairing.case.eval_set_id, pairing.case.eval_id))
        if pairing.reason is not None or result is None:
            continue
        for run, session in enumerate(pairing.sessions):
            for name, criterion in result.metrics.items():
                scores = criterion.run_per_invocation[run] if run < len(criterion.run_per_invocation) else []
                statuses = (
                    criterion.run_per_invocation_status[run] if run < len(criterion.run_per_invocation_status) else []
                )
                for i, (score, invocation) in enumerate(zip(scores, session.invocations, strict=False)):
                    status = statuses[i] if i < len(statuses) else None
                    exporter.record(
                        trace_id=invocation.trace_id,
                        span_id=agent_span_id(invocation.invocation_id, invocation.trace_id) or "0" * 16,
                        agent_name=invocation.agent_name,
                        metric=name,
                        score=score,
                        label=ResultLabel.ERROR if score is None else _LABELS.get(str(status), ResultLabel.ERROR),
                        explanation=criterion.explanation,
                    )
                    sent += 1
    return sent
