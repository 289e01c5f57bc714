"""ADK's own ``Invocation`` of each turn, for ADK's judges: recorded as ADK's inference records it, and given to
the judge rows.

ADK's Gemini-judged criteria read more of an invocation than a row holds: the agents' instructions and tool
declarations (``app_details``), where intermediate texts fall among the calls, grounding metadata, rubrics set on
the case and its invocations, and the expected invocation's intermediate data. So:

- **ADK agents run by toolpath** (:class:`~toolpath.evaluation.evalsets.inference.AdkAgentRunner`): each turn's
  events become ADK's ``Invocation`` through ADK's own ``EvaluationGenerator`` helpers
  (``convert_events_to_eval_invocations``, ``_get_app_details_by_invocation_id``), the model requests read by a
  :func:`request_recorder` plugin. Unlike ADK's ``_RequestIntercepterPlugin`` it keeps the request id out of the
  session state, so the agent's tools see the state they would see outside an evaluation.
- **Agent Engine ``AdkApp``-style apps** (:class:`~toolpath.evaluation.evalsets.inference.AdkAppRunner`): the
  event dumps they stream, read back as ADK ``Event`` models, go through the same helpers; each agent's request is
  made from the app's agent as ADK's live inference makes it (:func:`stream_invocations`).
- **ADK's recorded results** (``--from-results``): the recorded invocation as it is.

:func:`judge_columns` gives a judge row ADK's actual invocation (``adk_invocation``, redacted by the tracer's rules
as the stored row is) with the case's and the expected invocation's rubrics added as ``LocalEvalService`` adds
them, and the eval set's expected invocation (``adk_expected_invocation``). google-adk is imported inside the
functions that need it.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from toolpath.evaluation.like_with_like import tracer_redactor
from toolpath.evaluation.outcomes import AgentOutcome
from toolpath.model import EvalCase
from toolpath.redact import Redactor

_REQUEST_KEY = "toolpath_llm_request"
"""The key of a model response's ``custom_metadata`` naming the request it answered."""


@functools.cache
def _recorder_class() -> type[Any]:
    from google.adk.plugins.base_plugin import BasePlugin

    class RequestRecorder(BasePlugin):
        """Keeps each model request and marks its response with the request's id, as ADK's
        ``_RequestIntercepterPlugin`` does, without writing to the session state; ``get_model_request(event)``
        as ADK's."""

        def __init__(self) -> None:
            super().__init__(name="toolpath_request_recorder")
            self.requests: dict[str, Any] = {}
            self._pending: dict[tuple[str, str], str] = {}

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            request_id = uuid.uuid4().hex
            self.requests[request_id] = llm_request
            self._pending[(callback_context.invocation_id, callback_context.agent_name)] = request_id

        async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
            request_id = self._pending.get((callback_context.invocation_id, callback_context.agent_name))
            if request_id is not None:
                llm_response.custom_metadata = {**(llm_response.custom_metadata or {}), _REQUEST_KEY: request_id}

        def get_model_request(self, llm_response: Any) -> Any:
            metadata = llm_response.custom_metadata or {}
            return self.requests.get(metadata.get(_REQUEST_KEY, ""))

        def forget(self) -> None:
            self.requests.clear()
            self._pending.clear()

    return RequestRecorder


def request_recorder() -> Any:
    """A new plugin recording a runner's model requests (see the module's docstring)."""
    return _recorder_class()()


def turn_invocations(events: Sequence[Any], user_content: Any, recorder: Any) -> list[dict[str, Any]]:
    """ADK's invocations (as JSON) of one turn's ``events``, the user's message first as ADK's inference puts it,
    by ADK's own ``EvaluationGenerator``; the recorder's requests are then forgotten. Nothing when the turn had no
    events or ADK's helpers cannot make them."""
    if not events:
        return []
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.events.event import Event

    stream = [Event(content=user_content, author="user", invocation_id=events[0].invocation_id), *events]
    try:
        app_details = EvaluationGenerator._get_app_details_by_invocation_id(stream, recorder)
        invocations = EvaluationGenerator.convert_events_to_eval_invocations(stream, app_details)
        return [invocation.model_dump(mode="json", exclude_none=True) for invocation in invocations]
    except (TypeError, ValueError, AttributeError):  # an ADK without these helpers, a declaration JSON cannot hold
        return []
    finally:
        recorder.forget()


def app_agent(app: Any) -> Any:
    """The ADK agent an Agent Engine ``AdkApp``-style app runs: its runner's (``_tmpl_attrs["runner"]`` once set
    up, a ``runner`` / ``_runner`` attribute), else the one it was made with (``_tmpl_attrs["app"].root_agent``,
    ``_tmpl_attrs["agent"]``, ``root_agent`` / ``agent``). None when it shows no ``BaseAgent``."""
    from google.adk.agents.base_agent import BaseAgent

    attrs = getattr(app, "_tmpl_attrs", None)
    attrs = attrs if isinstance(attrs, Mapping) else {}
    runner = attrs.get("runner") or getattr(app, "runner", None) or getattr(app, "_runner", None)
    made = attrs.get("app")
    for found in (
        getattr(runner, "agent", None),
        getattr(made, "root_agent", None),
        attrs.get("agent"),
        getattr(app, "root_agent", None),
        getattr(app, "agent", None),
    ):
        if isinstance(found, BaseAgent):
            return found
    return None


def apply_state_delta(state: dict[str, Any], events: Sequence[Any], *, keep_temp: bool) -> None:
    """``state`` updated in place by the events' ``actions.state_delta``, as the session applies them (``temp:``
    keys kept only within the invocation that set them, ``keep_temp``)."""
    for event in events:
        delta = getattr(getattr(event, "actions", None), "state_delta", None) or {}
        state.update({k: v for k, v in delta.items() if keep_temp or not str(k).startswith("temp:")})


async def stream_invocations(
    dumps: Sequence[Mapping[str, Any]],
    user_content: Any,
    agent: Any,
    session: tuple[str, str, str],
    state: dict[str, Any],
) -> list[dict[str, Any]]:
    """ADK's invocations (JSON) of one turn of an ``AdkApp``-style app, from the event dumps it streamed, as
    :func:`turn_invocations` makes them of an agent run by toolpath. No plugin sees the app's model requests, so
    each agent's request is made as ADK's live inference makes one for an agent whose requests no plugin sees
    (``_LiveSession._record_app_details_for_agent``): the agent's request processors run in a context of the
    session as it stood before the agent's first event of the turn (``session``: app name, user id, session id;
    ``state``: the session's state when the turn began, updated in place to its state after). Nothing when the turn
    had no events or ADK cannot read them."""
    from google.adk.events.event import Event

    try:
        events = [Event.model_validate(dict(dump)) for dump in dumps]
    except ValueError:  # pydantic's ValidationError: not ADK's events
        return []
    if not events:
        return []
    requests: dict[str, Any] = {}
    running = dict(state)
    for index, event in enumerate(events):
        if event.author != "user" and event.author not in requests:
            requests[event.author] = await _agent_request(agent, event, events[:index], user_content, session, running)
        apply_state_delta(running, [event], keep_temp=True)
    apply_state_delta(state, events, keep_temp=False)
    return turn_invocations(events, user_content, _RequestsByAuthor(requests))


class _RequestsByAuthor:
    """What ADK's helpers ask of a request intercepter: the model request behind an agent's event."""

    def __init__(self, requests: dict[str, Any]) -> None:
        self.requests = requests

    def get_model_request(self, event: Any) -> Any:
        return self.requests.get(event.author)

    def forget(self) -> None:
        self.requests.clear()


async def _agent_request(
    root: Any, event: Any, before: Sequence[Any], user_content: Any, session: tuple[str, str, str], state: Any
) -> Any:
    """The model request ADK's ``_LiveSession._record_app_details_for_agent`` makes for the agent that wrote
    ``event`` (None for an agent that is no ``LlmAgent``, or whose request cannot be made outside its run)."""
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
    from google.adk.evaluation import evaluation_generator
    from google.adk.plugins.plugin_manager import PluginManager
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.sessions.session import Session

    agent = root.find_agent(event.author)
    if not isinstance(agent, LlmAgent):
        return None
    recorder = request_recorder()
    app_name, user_id, session_id = session
    context = InvocationContext(
        session_service=InMemorySessionService(),
        artifact_service=InMemoryArtifactService(),
        invocation_id=event.invocation_id,
        agent=agent,
        user_content=user_content,
        session=Session(id=session_id, app_name=app_name, user_id=user_id, state=dict(state), events=list(before)),
        plugin_manager=PluginManager(plugins=[recorder]),
        run_config=RunConfig(),
    )
    try:  # ADK's live inference (``_LiveSession``) makes an agent's request this way: no plugin sees it there either
        await evaluation_generator._LiveSession._record_app_details_for_agent(context)
    except Exception:  # an ADK without the helper, processors failing outside the run: no details, as ADK's
        return None
    return next(iter(recorder.requests.values()), None)


def attach_recorded(host: Any, session_id: str, outcomes: list[AgentOutcome]) -> list[AgentOutcome]:
    """``outcomes``, each of a run in ``session_id`` given the ADK invocation ``host`` (an ADK runner) recorded
    for it, when it recorded one per turn."""
    take = getattr(host, "adk_invocations", None)
    recorded = take(session_id) if callable(take) else []
    if len(recorded) == len(outcomes):
        for outcome, invocation in zip(outcomes, recorded, strict=True):
            outcome.adk_invocation = invocation
    return outcomes


def judge_columns(case: EvalCase, index: int, outcome: AgentOutcome, *, expected: bool) -> dict[str, Any]:
    """What ADK's judges read of turn ``index`` beyond the row (see the module's docstring); ``expected``: the
    case's invocations are this run's expected ones. A run toolpath executed is redacted by the tracer's rules, as
    its stored row (``like_with_like``); a recorded one is read as it is."""
    reference = case.invocations[index].adk if expected and index < len(case.invocations) else None
    rubrics = list(case.rubrics) + list((reference or {}).get("rubrics") or [])
    columns: dict[str, Any] = {}
    if reference is not None:
        columns["adk_expected_invocation"] = reference
    actual = outcome.adk_invocation
    if actual is None:
        if rubrics:
            columns["rubrics"] = rubrics
        return columns
    redactor = tracer_redactor() if outcome.produced is not None else None
    actual = dict(actual if redactor is None else _redacted(actual, redactor))
    have = [r for r in actual.get("rubrics") or [] if isinstance(r, Mapping)]
    ids = {r.get("rubric_id") for r in have}
    added = [r for r in rubrics if r.get("rubric_id") not in ids]
    if added:
        actual["rubrics"] = have + added
    columns["adk_invocation"] = actual
    return columns


def _redacted(invocation: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The invocation's texts, call arguments, tool responses and instructions redacted as the stored row's."""
    out = dict(invocation)
    for key in ("user_content", "final_response"):
        if isinstance(out.get(key), Mapping):
            out[key] = _content(out[key], redactor)
    data = out.get("intermediate_data")
    if isinstance(data, Mapping) and isinstance(data.get("invocation_events"), list):
        events = [
            {**e, "content": _content(e["content"], redactor)} if isinstance(e.get("content"), Mapping) else e
            for e in data["invocation_events"]
        ]
        out["intermediate_data"] = {**data, "invocation_events": events}
    details = out.get("app_details")
    if isinstance(details, Mapping) and isinstance(details.get("agent_details"), Mapping):
        agents = {
            name: {**agent, "instructions": redactor.value(agent.get("instructions", ""))}
            for name, agent in details["agent_details"].items()
        }
        out["app_details"] = {**details, "agent_details": agents}
    return out


def _content(content: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    parts = []
    for part in content.get("parts") or []:
        part = dict(part)
        if isinstance(part.get("text"), str):
            part["text"] = redactor.value(part["text"])
        for key, field in (("function_call", "args"), ("function_response", "response")):
            if isinstance(part.get(key), Mapping) and field in part[key]:
                part[key] = {**part[key], field: redactor.value(part[key][field])}
        parts.append(part)
    return {**content, "parts": parts}
