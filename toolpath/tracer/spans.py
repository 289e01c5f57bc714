"""Span helpers the adapters call: they know the conventions, the adapters know their framework.

Only the OpenTelemetry *API* is used here, so until a provider is installed (``toolpath.init``) every
helper is a cheap no-op. The per-call paths are kept short on purpose: they run on the agent's thread.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar, Token
from types import MappingProxyType, TracebackType
from typing import Any

from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from toolpath.tracer import content, originals
from toolpath.tracer import semconv as sc

_tracer = trace.get_tracer(sc.TOOLPATH_SCOPE)
_run_attributes: ContextVar[Mapping[str, Any]] = ContextVar("toolpath_run_attributes", default=MappingProxyType({}))
_call_ids = itertools.count()
_call_id_prefix = f"call_{random.SystemRandom().getrandbits(64):016x}"


def new_call_id() -> str:
    """A tool-call id for a call the framework gave none: ``call_`` + 24 hex digits, a random per-process
    prefix and a counter, so ids are unique across processes and cost no random draw per call."""
    return f"{_call_id_prefix}{next(_call_ids) & 0xFFFFFFFF:08x}"


def tool_static_attributes(name: str, description: str | None) -> dict[str, Any]:
    """The attributes every call of one tool shares; computed once, at decoration time."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
    }
    if description:
        attrs[sc.GEN_AI_TOOL_DESCRIPTION] = description
    return attrs


def start_tool_span(
    span_name: str, static_attributes: dict[str, Any], arguments: Mapping[str, Any], call_id: str | None = None
) -> tuple[Span, Token[Context]]:
    """Start an ``execute_tool`` span and make it current. Returns the span and the context token."""
    attrs = dict(static_attributes)
    attrs[sc.GEN_AI_TOOL_CALL_ID] = call_id or new_call_id()
    if content._policy.capture:
        _put_json(attrs, sc.GEN_AI_TOOL_CALL_ARGUMENTS, arguments)
    span = _tracer.start_span(span_name, kind=SpanKind.INTERNAL, attributes=attrs)
    return span, context.attach(trace.set_span_in_context(span))


def end_tool_span(span: Span, token: Token[Context], result: Any) -> None:
    """Record the tool's result and end its span."""
    try:
        if content._policy.capture and span.is_recording():
            _set_json(span, sc.GEN_AI_TOOL_CALL_RESULT, result)
    finally:
        context.detach(token)
        span.end()


def fail_span(span: Span, token: Token[Context], exc: BaseException) -> None:
    """Mark a span failed (status ERROR, ``error.type``, an ``exception`` event) and end it."""
    try:
        record_failure(span, exc)
    finally:
        context.detach(token)
        span.end()


STACK_FRAMES = 20
"""The innermost frames an ``exception`` event's stack trace keeps (each of its exceptions, chained ones too)."""


def record_failure(span: Span, exc: BaseException) -> None:
    """Status ERROR, ``error.type`` and an ``exception`` event (OTel's attributes, as the SDK's
    ``record_exception`` sets them); the message and stack trace go through the content policy's redaction like
    every other value (an error may quote the secret it choked on). The stack trace keeps the innermost
    :data:`STACK_FRAMES` frames: an error raised 1,000 traced calls deep fails 1,000 spans, and each whole trace
    would cost its depth again (seconds where the untraced call takes milliseconds)."""
    if span.is_recording():
        message = f"{type(exc).__name__}: {exc}"
        text = str(exc)
        stack = stack_trace(exc)
        redactor = content._policy.redactor
        if redactor is not None:
            message, text, stack = redactor.text(message), redactor.text(text), redactor.text(stack)
        span.set_status(Status(StatusCode.ERROR, message))
        span.set_attribute(sc.ERROR_TYPE, type(exc).__qualname__)
        kind = type(exc)
        qualified = (
            kind.__qualname__ if kind.__module__ in ("builtins", "", None) else f"{kind.__module__}.{kind.__qualname__}"
        )
        span.add_event(
            "exception",
            {
                "exception.type": qualified,
                "exception.message": text,
                "exception.stacktrace": stack,
                "exception.escaped": "False",
            },
        )


def stack_trace(exc: BaseException) -> str:
    """``exc``'s formatted traceback, its innermost :data:`STACK_FRAMES` frames, saying how many it left out."""
    frames: list[TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:  # the links alone: nothing is looked up or formatted for the frames left out
        frames.append(tb)
        tb = tb.tb_next
    tail = frames[-STACK_FRAMES] if len(frames) > STACK_FRAMES else exc.__traceback__
    # chained exceptions (``During handling…``) keep their outermost frames, as many; a RecursionError's chain is
    # the failures of everything that ran out of stack after it, at every level: left out
    chain = not isinstance(exc, RecursionError)
    lines = traceback.format_exception(type(exc), exc, tail, limit=STACK_FRAMES, chain=chain)
    if len(frames) > STACK_FRAMES and lines:
        lines.insert(1, f"  ... {len(frames) - STACK_FRAMES} outer frames left out\n")
    return "".join(lines)


# --- spans with an explicit parent, not made current (callback-driven adapters) --------------------------


def start_agent_span(
    agent_name: str, prompt: Any, session_id: str | None, parent: Context | None, start_time: int | None = None
) -> Span:
    """An ``invoke_agent`` span in ``parent`` (a context from :func:`context_of`; the current one when ``None``),
    started now or at ``start_time`` (ns since the epoch: a run known to be an agent's only once it has begun)."""
    attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: agent_name}
    attrs.update(_run_attributes.get())
    if session_id is not None:
        attrs[sc.GEN_AI_CONVERSATION_ID] = content.identifier(session_id)
    if content._policy.capture and prompt is not None:
        _put_encoded(attrs, sc.GEN_AI_INPUT_MESSAGES, content.encode_message("user", prompt))
    span = _tracer.start_span(sc.agent_span_name(agent_name), parent, SpanKind.INTERNAL, attrs, start_time=start_time)
    _note_run(span)
    return span


def end_agent_span(span: Span, response: Any) -> None:
    """Record the agent's final response and end its span; a response without text (bytes) is recorded as none,
    with the reason (``toolpath.agent.response_not_text``)."""
    if response is not None and span.is_recording():
        _set_response(span, response)
    span.end()


def _set_response(span: Span, response: Any) -> None:
    reason = content.not_text(response)
    if reason is not None:  # what it is, never its content: recorded whatever the policy
        span.set_attribute(sc.TOOLPATH_RESPONSE_NOT_TEXT, reason)
    elif content._policy.capture:
        _set_encoded(span, sc.GEN_AI_OUTPUT_MESSAGES, content.encode_message("assistant", response, "stop"))


def set_returned_trajectory(span: Span, trajectory: list[Any]) -> None:
    """Record the tool calls an agent *reported* (``{"tool_name", "tool_input"}`` items); the collector uses
    them only when no tool span was recorded under the agent span."""
    if content._policy.capture and trajectory and span.is_recording():
        _set_json(span, sc.TOOLPATH_PREDICTED_TRAJECTORY, trajectory)


def set_event_record(
    span: Span, trajectory: list[Any], intermediate_responses: list[tuple[str, str]], answered_by: str | None = None
) -> None:
    """Record what a framework's own event stream said about the run (ADK events): every tool call as
    ``{"name", "args", "id", "result", "error", "author"}``, the ``(author, text)`` said before the final response,
    and the author of the final response. The collector takes this trajectory over the tool spans, which may lack
    arguments, ids or calls."""
    if answered_by is not None and span.is_recording():  # a name, not content: recorded whatever the policy
        span.set_attribute(sc.TOOLPATH_ANSWERED_BY, answered_by)
    if content._policy.capture and span.is_recording():
        _set_json(span, sc.TOOLPATH_PREDICTED_TRAJECTORY, trajectory)
        span.set_attribute(sc.TOOLPATH_TRAJECTORY_SOURCE, sc.TRAJECTORY_SOURCE_EVENTS)
        if intermediate_responses:
            _set_json(span, sc.TOOLPATH_INTERMEDIATE_RESPONSES, [list(pair) for pair in intermediate_responses])


def current_span() -> Span:
    """The span current in this context (a non-recording one when there is none)."""
    return trace.get_current_span()


def start_current_tool_span(
    tool_name: str, description: str | None, arguments: Any, call_id: str | None, parent: Context | None
) -> tuple[Span, Context, Token[Context]]:
    """An ``execute_tool`` span in ``parent`` (a context from :func:`context_of`; the current one when ``None``), made
    current at once so the tool's own spans nest under it: the span, the context holding it (for the tool's
    children) and the token for :func:`restore`. End it with :func:`end_child_tool_span`. Every tool call of a
    callback-driven adapter runs this, so it calls no helper it can do without."""
    static = _static_attributes.get((tool_name, description))
    if static is None:
        if len(_static_attributes) >= 4096:  # tools are few; a flood of generated names must not grow this
            _static_attributes.clear()
        static = _static_attributes[tool_name, description] = (
            tool_static_attributes(tool_name, description),
            sc.tool_span_name(tool_name),
        )
    attrs = static[0].copy()
    attrs[sc.GEN_AI_TOOL_CALL_ID] = call_id or new_call_id()
    if content._policy.capture:
        text, cut = content.encode(arguments)
        attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = text
        if cut:
            attrs[sc.TOOLPATH_TRUNCATED] = (sc.GEN_AI_TOOL_CALL_ARGUMENTS,)
    span = _tracer.start_span(static[1], parent, SpanKind.INTERNAL, attrs)
    ctx = trace.set_span_in_context(span)
    return span, ctx, context.attach(ctx)


_static_attributes: dict[tuple[str, str | None], tuple[dict[str, Any], str]] = {}


def end_child_tool_span(span: Span, result: Any) -> None:
    """Record the tool's result and end a span from :func:`start_current_tool_span` (after :func:`restore`)."""
    if content._policy.capture and span.is_recording():
        encoded = content.encode(result)
        if encoded[1]:
            _set_encoded(span, sc.GEN_AI_TOOL_CALL_RESULT, encoded)
        else:
            span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, encoded[0])
    span.end()


def start_chat_span(model: str, parent: Context | None) -> Span:
    attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_REQUEST_MODEL: model}
    return _tracer.start_span(f"{sc.OP_CHAT} {model}", parent, SpanKind.CLIENT, attrs)


def end_chat_span(
    span: Span,
    input_tokens: int | None,
    output_tokens: int | None,
    tool_calls: Sequence[tuple[str | None, str, Any]] = (),
) -> None:
    """End a model span with its token usage and the tool calls (id, name, arguments) the model asked for, in its
    order: the collector orders parallel calls by them (docs/spec.md §3). Without content capture the calls keep
    their id and name only."""
    if span.is_recording():
        if input_tokens is not None:
            span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, int(input_tokens))
        if output_tokens is not None:
            span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, int(output_tokens))
        if tool_calls:
            capture = content._policy.capture
            parts = [
                {"type": "tool_call", "id": call_id, "name": name, **({"arguments": args} if capture else {})}
                for call_id, name, args in tool_calls
            ]
            _set_json(
                span, sc.GEN_AI_OUTPUT_MESSAGES, [{"role": "assistant", "parts": parts, "finish_reason": "tool_calls"}]
            )
    span.end()


@contextlib.contextmanager
def run_attributes(attributes: Mapping[str, Any]) -> Iterator[None]:
    """Agent spans started in this context meanwhile also carry ``attributes`` (a simulated user's turn)."""
    token = _run_attributes.set({**_run_attributes.get(), **attributes})
    try:
        yield
    finally:
        _run_attributes.reset(token)


def simulated_user_call(model: str, session_id: str | None, turn: int, prompt: str) -> Span:
    """A simulated user's model call: a ``chat`` span in a trace of its own (never under an agent's span), in the
    conversation's session; end it with :func:`end_simulated_user_call`."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
        sc.GEN_AI_REQUEST_MODEL: model,
        sc.TOOLPATH_SIMULATED_USER: True,
        sc.TOOLPATH_SIMULATED_TURN: turn,
    }
    if session_id is not None:
        attrs[sc.GEN_AI_CONVERSATION_ID] = str(session_id)
    if content._policy.capture:
        _put_encoded(attrs, sc.GEN_AI_INPUT_MESSAGES, content.encode_message("user", prompt))
    return _tracer.start_span(f"{sc.OP_CHAT} {model}", Context(), SpanKind.CLIENT, attrs)


def end_simulated_user_call(
    span: Span, reply: str | None, error: str | None, input_tokens: int, output_tokens: int, cached: bool
) -> None:
    if span.is_recording():
        span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, input_tokens)
        span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, output_tokens)
        if cached:
            span.set_attribute(sc.TOOLPATH_CACHE_HIT, True)
        if content._policy.capture and reply is not None:
            _set_encoded(span, sc.GEN_AI_OUTPUT_MESSAGES, content.encode_message("assistant", reply))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
            span.set_attribute(sc.ERROR_TYPE, "UserSimulatorError")
    span.end()


def make_current(ctx: Context) -> Token[Context]:
    """Make the span in ``ctx`` (from :func:`context_of`) current, so spans created meanwhile nest under it;
    returns the token for :func:`restore`."""
    return context.attach(ctx)


def restore(token: Token[Context]) -> None:
    context.detach(token)


def context_of(span: Span) -> Context:
    """A context holding ``span``: the parent argument of the ``start_*`` helpers, and what
    :func:`make_current` attaches. Computed once per span, it serves all of the span's children."""
    return trace.set_span_in_context(span)


class AgentRun:
    """One ``invoke_agent`` span: started with the prompt, finished with the agent's result or error."""

    __slots__ = ("span", "token")

    def __init__(self, agent_name: str, prompt: Any, session_id: str | None = None) -> None:
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: agent_name,
            **_run_attributes.get(),
        }
        if session_id is not None:
            attrs[sc.GEN_AI_CONVERSATION_ID] = content.identifier(session_id)
        if content._policy.capture and prompt is not None:
            _put_encoded(attrs, sc.GEN_AI_INPUT_MESSAGES, content.encode_message("user", prompt))
        self.span = _tracer.start_span(sc.agent_span_name(agent_name), kind=SpanKind.INTERNAL, attributes=attrs)
        _note_run(self.span)
        self.token = context.attach(trace.set_span_in_context(self.span))

    @property
    def span_id(self) -> str:
        """The agent span's id as 16 lowercase hex digits; the stored invocation's id."""
        return format(self.span.get_span_context().span_id, "016x")

    @property
    def trace_id(self) -> str:
        return format(self.span.get_span_context().trace_id, "032x")

    def finish(self, result: Any) -> None:
        """Record the final response (and a returned trajectory, if any) and end the span."""
        try:
            if self.span.is_recording():
                reason = response_not_text(result)
                if reason is not None:  # what it is, never its content: recorded whatever the policy
                    self.span.set_attribute(sc.TOOLPATH_RESPONSE_NOT_TEXT, reason)
            if content._policy.capture and self.span.is_recording():
                response, trajectory = split_agent_result(result)
                if response is not None:
                    encoded = content.encode_message("assistant", response, "stop")
                    _set_encoded(self.span, sc.GEN_AI_OUTPUT_MESSAGES, encoded)
                if trajectory is not None:
                    _set_json(self.span, sc.TOOLPATH_PREDICTED_TRAJECTORY, trajectory)
        finally:
            context.detach(self.token)
            self.span.end()

    def fail(self, exc: BaseException) -> None:
        fail_span(self.span, self.token, exc)


def _note_run(span: Span) -> None:
    """An evaluation waiting in this context keeps what this run produces (:mod:`toolpath.tracer.originals`)."""
    if originals.open_count and (kept := originals.current()) is not None:
        kept.note_trace(span.get_span_context().trace_id)


_RESPONSE_KEYS = ("response", "output", "final_response")


def split_agent_result(result: Any) -> tuple[str | None, list[Any] | None]:
    """Split what an agent returned into final text and, for the Vertex custom-function shape
    ``{"response", "predicted_trajectory"}``, the trajectory it reported. A response without text (bytes: see
    :func:`response_not_text`) is none."""
    if result is None:
        return None, None
    if isinstance(result, str):
        return result, None
    if isinstance(result, Mapping):
        trajectory = result.get("predicted_trajectory")
        if isinstance(trajectory, str):
            try:
                trajectory = json.loads(trajectory)
            except json.JSONDecodeError:
                trajectory = None
        for key in _RESPONSE_KEYS:
            if key in result:
                text = result[key]
                if isinstance(text, str) or text is None or content.not_text(text) is not None:
                    return (text if isinstance(text, str) else None), trajectory
                return content.encode(text)[0], trajectory
        return None, trajectory if isinstance(trajectory, list) else None
    if content.not_text(result) is not None:
        return None, None
    # a list, a number, an object: redacted JSON text, never a repr (it would hide secret keys from redaction)
    return content.encode(result)[0], None


def response_not_text(result: Any) -> str | None:
    """Why what an agent returned (its response, in the custom-function shape) gives no text, though it is not
    ``None``: ``"the agent returned 15 bytes, not text"``; ``None`` when it gives text, or nothing at all."""
    if isinstance(result, Mapping):
        key = next((key for key in _RESPONSE_KEYS if key in result), None)
        return content.not_text(result[key]) if key is not None else None
    return content.not_text(result)


def _put_json(attrs: dict[str, Any], key: str, value: Any) -> None:
    _put_encoded(attrs, key, content.encode(value))


def _put_encoded(attrs: dict[str, Any], key: str, encoded: tuple[str, bool]) -> None:
    """Put a value :mod:`~toolpath.tracer.content` encoded (a prompt or answer that is not text, a dict or a list,
    became redacted JSON text there, never its ``str()``: a repr hides a ``password`` key from redaction)."""
    text, cut = encoded
    attrs[key] = text
    if cut:
        attrs[sc.TOOLPATH_TRUNCATED] = (*attrs.get(sc.TOOLPATH_TRUNCATED, ()), key)


def _set_json(span: Span, key: str, value: Any) -> None:
    _set_encoded(span, key, content.encode(value))


def _set_encoded(span: Span, key: str, encoded: tuple[str, bool]) -> None:
    text, cut = encoded
    span.set_attribute(key, text)
    if cut:
        previous = (getattr(span, "attributes", None) or {}).get(sc.TOOLPATH_TRUNCATED, ())
        if key not in previous:
            span.set_attribute(sc.TOOLPATH_TRUNCATED, (*previous, key))
