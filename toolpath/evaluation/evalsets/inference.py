"""Run Google ADK agents as ADK's own evaluation runs them (``EvaluationGenerator``, google-adk 2.x).

Each toolpath session is one ADK session, created from the eval case's ``session_input`` (app name, user id,
initial state; ADK's defaults ``EvaluationGenerator`` / ``test_user_id`` without one) with its own ``Runner``,
artifact and memory services; each turn sends the user's message as a ``user`` ``Content`` in that session (an
eval case's ``user_content`` as it is, several parts included, as ADK sends it; the turn's prompt is its text
parts joined with newlines) and reads the events as :mod:`toolpath.adapters.adk_events` reads them. The turn runs inside
toolpath's ``invoke_agent`` span, so ADK's own spans nest under it, and the trajectory comes from the events, not
from those spans.

Every ADK run of the process happens on one event loop, on a daemon thread: the agent's model clients (bound to
the loop that first used them) keep working from turn to turn, and callers on any thread — the evaluation's
worker threads included — wait for their turn there, so cases run concurrently as they do for other agents.
google-adk is imported only when an ADK agent is run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import threading
import uuid
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolpath.adapters import adk_events
from toolpath.evaluation.evalsets import adk_invocations

DEFAULT_APP_NAME = "EvaluationGenerator"
DEFAULT_USER_ID = "test_user_id"
"""ADK's own defaults when an eval case has no ``session_input``."""

T = TypeVar("T")


@dataclass(frozen=True)
class SessionInput:
    """How an ADK session starts (an eval case's ``session_input``)."""

    app_name: str | None = None
    user_id: str | None = None
    state: Mapping[str, Any] = field(default_factory=dict)


class _Loop:
    """An event loop running forever on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="toolpath-adk", daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
        """Run ``coroutine`` there in ``context`` (the caller's, so ADK's spans nest under the caller's span)
        and wait for its result; interrupting the wait cancels it."""
        if threading.current_thread() is self.thread:
            coroutine.close()
            raise RuntimeError("an ADK agent cannot be run from inside one of its own turns")
        result: Future[T] = Future()
        started: list[asyncio.Task[T]] = []

        def start() -> None:
            task = self.loop.create_task(coroutine)  # in ``context``: this callback runs in it
            started.append(task)
            task.add_done_callback(lambda done: _settle(done, result))

        self.loop.call_soon_threadsafe(start, context=context)
        try:
            return result.result()
        except BaseException:
            if not result.done():
                self.loop.call_soon_threadsafe(lambda: [task.cancel() for task in started])
            raise


def _settle(task: asyncio.Task[T], result: Future[T]) -> None:
    if task.cancelled():
        result.cancel()
    elif (error := task.exception()) is not None:
        result.set_exception(error)
    else:
        result.set_result(task.result())


_loop: _Loop | None = None
_loop_lock = threading.Lock()


def _shared_loop() -> _Loop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = _Loop()
        return _loop


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return _shared_loop().run(coroutine, contextvars.copy_context())


def _answer(turn: adk_events.AdkTurn) -> dict[str, Any]:
    """What the turn gives back to toolpath's agent span (and to the run, should tracing not deliver)."""
    adk_events.record_turn(None, turn)  # the agent span is current in the calling thread
    answer: dict[str, Any] = {"predicted_trajectory": turn.tool_calls}
    if turn.response is not None:
        answer["response"] = turn.response
    return answer


class AdkAgentRunner:
    """Runs an ADK agent (``BaseAgent``, a workflow ``BaseNode``) or ``App``: call it with
    ``(prompt, session_id=None)``; :meth:`start_session` first gives the session its ``session_input``."""

    def __init__(self, root: Any, app: Any = None, reset: Callable[[], object] | None = None) -> None:
        self.root, self.app, self._reset = root, app, reset
        self.name = str(getattr(root, "name", None) or getattr(app, "name", None) or type(root).__name__)
        self._inputs: dict[str, SessionInput] = {}
        self._sessions: dict[str, tuple[Any, str, str]] = {}
        """toolpath session id -> (runner, user id, ADK session id)."""
        self._recorders: dict[str, Any] = {}
        self._recorded: dict[str, list[dict[str, Any]]] = {}
        """toolpath session id -> ADK's invocation of each turn (:mod:`.adk_invocations`), until taken."""
        self._lock = threading.Lock()
        self._creating: asyncio.Lock | None = None

    def start_session(self, session_id: str, given: SessionInput) -> None:
        """The next turn in ``session_id`` opens an ADK session from ``given`` (after ``reset_data()``, when the
        agent's module defines one, as ADK does before each eval case)."""
        if self._reset is not None:
            self._reset()
        with self._lock:
            self._inputs[session_id] = given
            self._recorded[session_id] = []  # an eval case's run: its turns' ADK invocations are kept

    def __call__(
        self, prompt: str, session_id: str | None = None, message: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One turn: ``message`` (the user's ``Content`` as JSON) sent as it is, else ``prompt`` as one text part."""
        reader = adk_events.EventReader()
        try:
            _run(self._turn(reader, prompt, session_id or uuid.uuid4().hex, message))
        except Exception:
            _answer(reader.turn())  # the calls made before the turn raised, with their arguments
            raise
        return _answer(reader.turn())

    async def _turn(
        self, reader: adk_events.EventReader, prompt: str, session_id: str, message: Mapping[str, Any] | None
    ) -> None:
        from google.genai import types

        runner, user_id, adk_session_id = await self._session(session_id)
        content = (
            types.Content(role="user", parts=[types.Part(text=prompt)])
            if message is None
            else types.Content.model_validate(dict(message))
        )
        events = runner.run_async(user_id=user_id, session_id=adk_session_id, new_message=content)
        seen = []
        async with contextlib.aclosing(events):
            async for event in events:
                reader.add(event)
                seen.append(event)
        recorder = self._recorders[session_id]
        if session_id in self._recorded:  # an eval case's run
            self._recorded[session_id].extend(adk_invocations.turn_invocations(seen, content, recorder))
        recorder.forget()

    def adk_invocations(self, session_id: str) -> list[dict[str, Any]]:
        """ADK's invocations (JSON) of the turns run in ``session_id`` since last asked, as ADK's inference
        records them."""
        return self._recorded.pop(session_id, [])

    async def _session(self, session_id: str) -> tuple[Any, str, str]:
        if session_id in self._sessions:
            return self._sessions[session_id]
        self._creating = self._creating or asyncio.Lock()
        async with self._creating:  # two turns of one new session at once: one creates it
            if session_id not in self._sessions:
                with self._lock:
                    given = self._inputs.pop(session_id, SessionInput())
                self._sessions[session_id] = await self._open(session_id, given)
        return self._sessions[session_id]

    async def _open(self, session_id: str, given: SessionInput) -> tuple[Any, str, str]:
        from google.adk.apps.app import App
        from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
        from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
        from google.adk.runners import Runner
        from google.adk.sessions.in_memory_session_service import InMemorySessionService

        app_name, user_id = given.app_name or DEFAULT_APP_NAME, given.user_id or DEFAULT_USER_ID
        services: dict[str, Any] = {
            "session_service": InMemorySessionService(),
            "artifact_service": InMemoryArtifactService(),
            "memory_service": InMemoryMemoryService(),
        }
        session = await services["session_service"].create_session(
            app_name=app_name, user_id=user_id, state=copy.deepcopy(dict(given.state)), session_id=session_id
        )
        recorder = self._recorders[session_id] = adk_invocations.request_recorder()
        if self.app is not None:  # the app's plugins, then the recorder, as ADK's inference adds its own
            app = self.app.model_copy(update={"plugins": [*self.app.plugins, recorder]})
            runner = Runner(app=app, app_name=app_name, **services)
        else:  # what Runner(agent=…) / Runner(node=…) make, with the recorder as a plugin
            app = App.model_construct(name=app_name, root_agent=self.root, plugins=[recorder])
            runner = Runner(app=app, app_name=app_name, **services)
        return runner, user_id, session.id

    def close(self) -> None:
        """Close every session's runner (its toolsets and plugins)."""
        runners = [runner for runner, _, _ in self._sessions.values()]
        self._sessions.clear()
        self._recorders.clear()
        self._recorded.clear()
        if runners:

            async def close_all() -> None:
                for runner in runners:
                    await runner.close()

            _run(close_all())


class AdkAppRunner:
    """Runs an Agent Engine ``AdkApp``-style object (``async_stream_query`` / ``stream_query`` yielding ADK
    events, ``async_create_session`` / ``create_session``) like :class:`AdkAgentRunner`; the app keeps its own
    app name. No plugin can be attached to the app, so ADK's invocation of a turn is made from the events it
    streams and the app's agent (:func:`.adk_invocations.stream_invocations`)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.name = str(getattr(app, "name", None) or type(app).__name__)
        self._inputs: dict[str, SessionInput] = {}
        self._sessions: dict[str, tuple[str, str | None]] = {}
        self._states: dict[str, dict[str, Any]] = {}
        """toolpath session id -> the ADK session's state, as its events left it."""
        self._recorded: dict[str, list[dict[str, Any]]] = {}
        """toolpath session id -> ADK's invocation of each turn, until taken (as :class:`AdkAgentRunner`'s)."""
        self._lock = threading.Lock()

    def start_session(self, session_id: str, given: SessionInput) -> None:
        with self._lock:
            self._inputs[session_id] = given
            self._recorded[session_id] = []  # an eval case's run: its turns' ADK invocations are kept

    def adk_invocations(self, session_id: str) -> list[dict[str, Any]]:
        """ADK's invocations (JSON) of the turns run in ``session_id`` since last asked."""
        return self._recorded.pop(session_id, [])

    def __call__(
        self, prompt: str, session_id: str | None = None, message: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One turn: ``message`` (the user's ``Content`` as JSON, which ``AdkApp`` takes as it is), else
        ``prompt``."""
        user_id, adk_session_id = self._session(session_id or uuid.uuid4().hex)
        reader = adk_events.EventReader()
        sent: str | dict[str, Any] = prompt if message is None else dict(message)
        stream = getattr(self.app, "async_stream_query", None)
        seen: list[Any] = []
        try:
            if callable(stream):

                async def collect() -> None:
                    async for event in stream(message=sent, user_id=user_id, session_id=adk_session_id):
                        reader.add(event)
                        seen.append(event)

                _run(collect())
            else:
                for event in self.app.stream_query(message=sent, user_id=user_id, session_id=adk_session_id):
                    reader.add(event)
                    seen.append(event)
        except Exception:
            _answer(reader.turn())  # the calls made before the stream raised, with their arguments
            raise
        self._record(session_id or "", sent, seen)
        return _answer(reader.turn())

    def _record(self, session_id: str, sent: str | dict[str, Any], events: list[Any]) -> None:
        """ADK's invocations of the turn that streamed ``events``, kept when ``session_id`` is an eval case's run."""
        agent = adk_invocations.app_agent(self.app) if session_id in self._recorded else None
        if agent is None or not all(isinstance(event, Mapping) for event in events):
            return
        from google.genai import types

        content = (
            types.Content(role="user", parts=[types.Part(text=sent)])
            if isinstance(sent, str)
            else types.Content.model_validate(sent)
        )
        user_id, adk_session_id = self._sessions[session_id]
        state = self._states.setdefault(session_id, {})
        session = (DEFAULT_APP_NAME, user_id, adk_session_id or session_id)
        made = _run(adk_invocations.stream_invocations(events, content, agent, session, state))
        self._recorded[session_id].extend(made)

    def _session(self, session_id: str) -> tuple[str, str | None]:
        with self._lock:
            if session_id in self._sessions:
                return self._sessions[session_id]
            given = self._inputs.pop(session_id, SessionInput())
            user_id = given.user_id or DEFAULT_USER_ID
            state = copy.deepcopy(dict(given.state))
            self._states[session_id] = copy.deepcopy(state)
            create_async = getattr(self.app, "async_create_session", None)
            create = getattr(self.app, "create_session", None)
            if callable(create_async):
                created = _run(create_async(user_id=user_id, state=state))
            elif callable(create):
                created = create(user_id=user_id, state=state)
            else:  # the app makes its own sessions: give it ours by id
                created = {"id": session_id}
            adk_session_id = created.get("id") if isinstance(created, Mapping) else getattr(created, "id", None)
            self._sessions[session_id] = (user_id, None if adk_session_id is None else str(adk_session_id))
            return self._sessions[session_id]

    def close(self) -> None:
        self._sessions.clear()
        self._states.clear()
        self._recorded.clear()
