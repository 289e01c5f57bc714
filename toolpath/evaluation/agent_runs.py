"""Send a prompt to an agent under tracing and read back what the collector rebuilt from the spans."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from toolpath import tracing
from toolpath.errors import ConfigError
from toolpath.evaluation.like_with_like import tracer_redactor
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.evaluation.targets import resolve_target
from toolpath.model import Invocation, ToolCall, invocation_key
from toolpath.redact import Redactor
from toolpath.store.store import Store
from toolpath.tracer import originals
from toolpath.tracer import semconv as sc
from toolpath.tracer.spans import response_not_text, run_attributes, split_agent_result
from toolpath.trajectory import parse_trajectory


def record_runs_in(store: Store) -> None:
    """Trace the agent runs this process starts from now on into ``store`` (starting tracing into it if it is
    off), so each run's result can link to the session and spans it came from. Tracing already on into another
    store is a :class:`~toolpath.errors.ConfigError`: the runs would be stored where nothing links to them."""
    active = tracing.current()
    if active is None:
        # its own connection to the same database: tracing's shutdown closes the store it was given
        tracing.init(store=store.engine.url.render_as_string(hide_password=False))
        return
    if active.store is None or active.store.url != store.url:
        where = active.store.url if active.store is not None else "no store"
        raise ConfigError(f"tracing in this process records into {where}, not {store.url}: runs could not be linked")


def run_agent(
    runnable: Any,
    prompt: str,
    *,
    session_id: str | None = None,
    timeout: float = 30.0,
    message: Mapping[str, Any] | None = None,
) -> AgentOutcome:
    """Run ``runnable`` on ``prompt`` as a traced agent run (starting tracing without a store if needed), marked
    evaluation traffic (``toolpath.evaluation`` on its agent span).

    ``runnable`` is a :class:`~toolpath.evaluation.targets.Target`, or anything
    :func:`~toolpath.evaluation.targets.resolve_target` accepts (resolve it once to run several turns of an agent
    that keeps sessions, such as an ADK agent). ``message`` is the user's message as ADK's ``Content`` JSON, when
    it is more than ``prompt`` as one text part: an ADK agent is sent it as it is; other agents get ``prompt``."""
    active = tracing.current() or tracing.init(store=False)
    target = resolve_target(runnable)
    spec = target.spec
    kwargs: dict[str, Any] = {"session_id": session_id} if session_id is not None else {}
    if message is not None and target.takes_message:
        kwargs["message"] = message
    started: list[Any] = []
    error: BaseException | None = None
    result: Any = None
    kept = originals.Originals()  # what the agent produces, before redaction: scored, never stored
    active.collector.evaluated.watch(kept)
    try:
        began = time.perf_counter()
        try:
            # the run is marked evaluation traffic on its agent span (and so on its stored invocation)
            with originals.watching(kept), run_attributes({sc.TOOLPATH_EVALUATION: True}):
                if spec.is_async:
                    result = asyncio.run(spec.acall((prompt,), kwargs, started))
                else:
                    result = spec.call((prompt,), kwargs, started)
        except Exception as exc:  # the agent failing is a measurement, not a runner error
            error = exc
        wall = time.perf_counter() - began
        run = started[0] if started else None
        invocation = None
        if run is not None:
            invocation = active.collector.wait_for_invocation(invocation_key(run.trace_id, run.span_id), timeout)
    finally:
        active.collector.evaluated.unwatch(kept)
    if invocation is not None:
        return AgentOutcome(
            invocation.response,
            invocation.tool_calls,
            invocation.latency_seconds,
            invocation.failure,
            invocation.error,
            invocation,
            produced=kept.invocations.get(invocation.invocation_id),
        )
    # Tracing did not deliver (queue full, collector down): fall back to what the call itself returned, scored as
    # it is and kept (in the row that may be stored) redacted by the tracer's rules, as a delivered run would be.
    response, trajectory = split_agent_result(result)
    note = response_not_text(result)
    calls = list(parse_trajectory(trajectory)) if trajectory else []
    failed = error is not None
    failed_with = f"{type(error).__name__}: {error}" if failed else None
    produced = Invocation(
        invocation_id="", session_id=session_id or "", prompt=prompt, response=response, tool_calls=calls
    )
    redactor = tracer_redactor()
    if redactor is not None:
        response = redactor.text(response) if response is not None else None
        failed_with = redactor.text(failed_with) if failed_with is not None else None
        calls = [_redacted_call(call, redactor) for call in calls]
    return AgentOutcome(
        response, calls, None if failed else wall, int(failed), failed_with, None, produced=produced, response_note=note
    )


def _redacted_call(call: ToolCall, redactor: Redactor) -> ToolCall:
    return call.model_copy(
        update={
            "args": redactor.value(call.args),
            "result": redactor.value(call.result),
            "error": redactor.text(call.error) if call.error is not None else None,
        }
    )
