"""The rows an agent run's outcome gives the metrics: what it did, as stored and as produced, with the notes that
say what its record lacks (content not captured, a response that had no text) and the ids linking it to its
trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.evaluation.like_with_like import redact_references, tracer_redactor
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.metrics.base import RESPONSE_NOTE
from toolpath.metrics.rows import turn_row, with_parsed_trajectories
from toolpath.model import Invocation
from toolpath.redact import Redactor
from toolpath.tracer import semconv as sc

__all__ = ["compared_rows", "content_notes", "outcome_row", "response_note", "scored_row", "stored_ids"]


def outcome_row(outcome: AgentOutcome, prompt: str) -> dict[str, Any]:
    """What one agent run gives every metric (:func:`toolpath.metrics.rows.turn_row`), and
    :func:`content_notes` when its tool spans lacked content."""
    row = turn_row(
        prompt=prompt,
        response=outcome.response,
        tool_calls=outcome.tool_calls,
        latency_in_seconds=outcome.latency_in_seconds,
        failure=outcome.failure,
        intermediate_responses=outcome.invocation.intermediate_responses if outcome.invocation is not None else (),
    )
    row.update(content_notes(outcome.invocation))
    row.update(response_note(outcome))
    return row


def response_note(outcome: AgentOutcome) -> dict[str, Any]:
    """``response_note``: why the run has no response though its agent returned one (it had no text, such as
    bytes), which the response metrics give instead of a score; nothing otherwise."""
    attributes = outcome.invocation.attributes if outcome.invocation is not None else {}
    note = attributes.get(sc.TOOLPATH_RESPONSE_NOT_TEXT) or outcome.response_note
    return {RESPONSE_NOTE: note} if isinstance(note, str) and outcome.response is None else {}


def scored_row(outcome: AgentOutcome, prompt: str) -> dict[str, Any]:
    """:func:`outcome_row` of what the agent produced, before redaction (:attr:`AgentOutcome.produced`), for the
    computed metrics to score in memory; the stored row when there is no such copy. Keep it out of anything
    stored, written, shown or sent (a judge's request): those take :func:`outcome_row`."""
    produced = outcome.produced
    if produced is None:
        return outcome_row(outcome, prompt)
    row = turn_row(
        prompt=prompt,
        response=produced.response,
        tool_calls=produced.tool_calls,
        latency_in_seconds=outcome.latency_in_seconds,
        failure=outcome.failure,
        intermediate_responses=produced.intermediate_responses,
    )
    row.update(content_notes(outcome.invocation))
    row.update(response_note(outcome))
    return row


def compared_rows(
    rows: Sequence[Mapping[str, Any]], outcomes: Sequence[AgentOutcome], computed: bool
) -> tuple[list[Mapping[str, Any]], Redactor | None]:
    """Each turn's row (as stored, one per outcome) as a metric reads it, and the redactor its results go through
    (``None``: nothing of the agent's unredacted values in them). A computed metric reads what the agent produced
    (:func:`~toolpath.evaluation.outcome_rows.scored_row`); a judge the stored row, references redacted alike."""
    redactor = tracer_redactor() if any(o.produced is not None for o in outcomes) else None
    views: list[Mapping[str, Any]] = []
    for row, outcome in zip(rows, outcomes, strict=True):
        if computed and outcome.produced is not None:
            view = {**row, **scored_row(outcome, row.get("prompt") or "")}
        else:
            view = dict(row) if computed else redact_references(row, redactor)
        views.append(with_parsed_trajectories(view))
    return views, redactor


def content_notes(invocation: Invocation | None) -> dict[str, Any]:
    """``content_missing`` (the run's tool spans recorded no arguments) and ``arguments_unknown`` (how many of its
    calls no other record filled in), when the stored invocation says so; nothing otherwise."""
    attributes = invocation.attributes if invocation is not None else {}
    if not attributes.get(sc.TOOLPATH_CONTENT_MISSING):
        return {}
    return {"content_missing": True, "arguments_unknown": int(attributes.get(sc.TOOLPATH_ARGUMENTS_UNKNOWN) or 0)}


def stored_ids(invocation: Invocation | None) -> dict[str, Any]:
    """``invocation_id`` and ``session_id`` of the stored invocation of a run, to link a result to its trace;
    nothing when tracing did not deliver it."""
    if invocation is None or not invocation.invocation_id:
        return {}
    return {"invocation_id": invocation.invocation_id, "session_id": invocation.session_id}
