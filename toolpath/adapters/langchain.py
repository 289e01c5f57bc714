"""LangChain and LangGraph: a callback handler that turns the run tree into GenAI spans.

    from toolpath.adapters import langchain as tp_langchain

    tp_langchain.instrument()                     # every runnable, in every thread, from now on
    graph.invoke({"messages": [("user", "hi")]}, config={"configurable": {"thread_id": "s-1"}})
    tp_langchain.uninstrument()

    # or per call:
    graph.invoke(inputs, config={"callbacks": [tp_langchain.ToolpathCallbackHandler()]})

The outermost run becomes ``invoke_agent {name}`` (prompt: the last user message; response: the last AI
message; session: ``thread_id`` / ``session_id`` / ``conversation_id`` from the run's metadata), every tool
run an ``execute_tool`` span (arguments as the tool received them, the model's ``tool_call_id``, the result,
errors), and every chat-model run a ``chat {model}`` span with token usage. A named LangGraph graph run inside
the outermost one — a sub-agent (``create_react_agent(..., name="billing")``) added as a node or called from a
tool — becomes ``invoke_agent {name}`` too, so each call is attributed to the sub-agent that made it: a graph run
is known by its nodes, whose ``langgraph_checkpoint_ns`` is one level deeper than the run's own, and its span
starts when the run did. Runs in between (chains, graph nodes) make no span; their children attach to the nearest
traced ancestor through ``run_id`` / ``parent_run_id``, so the tree is right under threads and asyncio alike.
A tool span is current while the tool runs, so spans made inside a tool nest under it. The handler runs inline
and never raises: a failure inside it is logged with the run id and the run goes on untraced.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from contextvars import Token
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook
from opentelemetry.context import Context

from toolpath.tracer import spans, untraced

__all__ = ["ToolpathCallbackHandler", "instrument", "uninstrument"]

logger = logging.getLogger("toolpath.adapters.langchain")
_SESSION_KEYS = ("thread_id", "session_id", "conversation_id")
_DEFAULT_GRAPH_NAME = "LangGraph"
"""What LangGraph names a graph given no name: no agent's name, so its run is no sub-agent's."""
_NAMESPACE = "langgraph_checkpoint_ns"


@dataclass(slots=True)
class _Run:
    span: Any
    """The span this run made, or ``None`` for runs that only pass their parent on."""
    parent: Any
    """The context (holding the span) children of this run start in."""
    root: bool = False
    token: Token[Context] | None = None
    depth: int = -1
    """How deep the run's LangGraph checkpoint namespace is (``|``-separated levels less one; -1: none)."""
    name: str | None = None
    inputs: Any = None
    started: int = 0
    """When the run started (ns): the start of its agent span, if it turns out to be a sub-agent's run."""


class ToolpathCallbackHandler(BaseCallbackHandler):
    """Maps LangChain's run tree (``run_id`` / ``parent_run_id``) to GenAI spans."""

    run_inline = True  # called in the run's own context, so the tool span can be made current
    raise_error = False

    def __init__(self) -> None:
        super().__init__()
        # Runs by id (a UUID's int: hashed in C, where a UUID's own hash is a Python call). Single dict operations
        # (get, set, pop) are atomic, so threads share it without a lock; each run id is written by one start and
        # removed by one end.
        self._runs: dict[Any, _Run] = {}
        self._opening = threading.Lock()  # a sub-agent's span is opened once, whichever of its nodes starts first

    # --- bookkeeping -----------------------------------------------------------------------------------

    def _parent_of(self, parent_run_id: UUID | None) -> tuple[Any, bool]:
        """(context to start in, whether the new run is the outermost one)."""
        if parent_run_id is None:
            return None, True
        parent = self._runs.get(getattr(parent_run_id, "int", parent_run_id))
        if parent is None:
            logger.debug("toolpath: parent run %s unknown; treating the run as a root", parent_run_id)
            return None, True
        return parent.parent, False

    def _put(self, run_id: UUID, run: _Run) -> None:
        self._runs[getattr(run_id, "int", run_id)] = run

    def _pop(self, run_id: UUID) -> _Run | None:
        return self._runs.pop(getattr(run_id, "int", run_id), None)

    def _guard(self, what: str, run_id: UUID) -> None:
        untraced.log_and_count(logger, "toolpath: %s failed for run %s; it goes on untraced", what, run_id)

    # --- chains (agents and graph nodes) ---------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            namespace = metadata.get(_NAMESPACE) if metadata else None
            depth = namespace.count("|") if namespace.__class__ is str else -1
            if depth >= 0 and parent_run_id is not None:
                owner = self._runs.get(getattr(parent_run_id, "int", parent_run_id))
                if owner is not None and owner.span is None and depth > owner.depth:
                    self._open_sub_agent(owner)  # a node of a graph run inside the outermost run
            parent, is_root = self._parent_of(parent_run_id)
            if not is_root:
                self._put(run_id, _Run(None, parent, False, None, depth, kwargs.get("name"), inputs, time.time_ns()))
                return
            name = kwargs.get("name") or _serialized_name(serialized) or "agent"
            span = spans.start_agent_span(str(name), prompt_text(inputs), _session(metadata), None)
            self._put(run_id, _Run(span, spans.context_of(span), root=True, depth=depth))
        except Exception:
            self._guard("on_chain_start", run_id)

    def _open_sub_agent(self, run: _Run) -> None:
        """Make ``run``, a named graph run that is not the outermost, an ``invoke_agent`` span its children start
        in, begun when the run began."""
        name = run.name
        if not name or name == _DEFAULT_GRAPH_NAME:
            return
        with self._opening:
            if run.span is None:
                span = spans.start_agent_span(str(name), prompt_text(run.inputs), None, run.parent, run.started)
                run.parent = spans.context_of(span)
                run.span = span
        run.inputs = None

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._pop(run_id)
        if run is None or run.span is None:
            return
        try:
            spans.end_agent_span(run.span, response_text(outputs))
        except Exception:
            self._guard("on_chain_end", run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._pop(run_id)
        if run is None or run.span is None:
            return
        try:
            spans.record_failure(run.span, error)
            run.span.end()
        except Exception:
            self._guard("on_chain_error", run_id)

    # --- tools -----------------------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        inputs: Any = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        # the per-call path of every tool: kept short (no helper calls it can do without)
        try:
            parent = None
            if parent_run_id is not None:
                owner = self._runs.get(getattr(parent_run_id, "int", parent_run_id))
                if owner is None:
                    logger.debug("toolpath: parent run %s unknown; treating the run as a root", parent_run_id)
                else:
                    parent = owner.parent
            name = (serialized.get("name") if serialized else None) or kwargs.get("name") or "tool"
            span, ctx, token = spans.start_current_tool_span(
                name if name.__class__ is str else str(name),
                serialized.get("description") if serialized else None,
                _arguments(inputs, input_str),
                tool_call_id,
                parent,
            )
            self._runs[getattr(run_id, "int", run_id)] = _Run(span, ctx, False, token)
        except Exception:
            self._guard("on_tool_start", run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(getattr(run_id, "int", run_id), None)
        if run is None:
            return
        try:
            if run.token is not None:
                spans.restore(run.token)
            if output is None or output.__class__ in _PLAIN_RESULTS:
                spans.end_child_tool_span(run.span, output)
            elif getattr(output, "status", None) == "error":  # a failure the tool handled and reported in its message
                spans.record_failure(run.span, ToolReportedError(_error_text(output)))
                run.span.end()
            else:
                spans.end_child_tool_span(run.span, _tool_result(output))
        except Exception:
            self._guard("on_tool_end", run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._pop(run_id)
        if run is None:
            return
        try:
            self._release(run)
            spans.record_failure(run.span, error)
            run.span.end()
        except Exception:
            self._guard("on_tool_error", run_id)

    @staticmethod
    def _release(run: _Run) -> None:
        if run.token is not None:
            spans.restore(run.token)

    # --- models ----------------------------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        invocation_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            parent, _ = self._parent_of(parent_run_id)
            model = _model_name(serialized, invocation_params or kwargs.get("invocation_params"), metadata)
            span = spans.start_chat_span(model, parent)
            self._put(run_id, _Run(span, parent))
        except Exception:
            self._guard("on_chat_model_start", run_id)

    def on_llm_start(self, serialized: dict[str, Any] | None, prompts: Any, **kwargs: Any) -> None:
        self.on_chat_model_start(serialized, prompts, **kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._pop(run_id)
        if run is None:
            return
        try:
            spans.end_chat_span(run.span, *_usage(response), _requested_calls(response))
        except Exception:
            self._guard("on_llm_end", run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._pop(run_id)
        if run is None:
            return
        try:
            spans.record_failure(run.span, error)
            run.span.end()
        except Exception:
            self._guard("on_llm_error", run_id)


# --- global instrumentation ----------------------------------------------------------------------------


class _HandlerSlot:
    """What ``register_configure_hook`` reads (it only calls ``.get()``): the global handler, or ``None``.

    A ContextVar would hold the handler only in the context that set it; this slot serves every thread."""

    def __init__(self) -> None:
        self.handler: ToolpathCallbackHandler | None = None

    def get(self) -> ToolpathCallbackHandler | None:
        return self.handler


_slot = _HandlerSlot()
_hook_lock = threading.Lock()
_hook_registered = False


def instrument() -> ToolpathCallbackHandler:
    """Attach the handler to every LangChain run from now on (idempotent); returns it."""
    global _hook_registered
    with _hook_lock:
        if not _hook_registered:
            # the hook's parameter is typed ContextVar; _HandlerSlot has the one method it calls
            register_configure_hook(_slot, True, ToolpathCallbackHandler)  # type: ignore[arg-type]
            _hook_registered = True
        if _slot.handler is None:
            _slot.handler = ToolpathCallbackHandler()
        return _slot.handler


def uninstrument() -> None:
    """Stop attaching the handler; runs configured from now on make no toolpath spans."""
    with _hook_lock:
        _slot.handler = None


def is_instrumented() -> bool:
    return _slot.handler is not None


# --- reading LangChain values ----------------------------------------------------------------------------


def message_text(message: Any) -> str | None:
    """Text of a LangChain message, a ``(role, text)`` tuple or a ``{"role", "content"}`` dict."""
    if isinstance(message, tuple) and len(message) == 2:
        return str(message[1])
    content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block.get("text", "") if isinstance(block, Mapping) else str(block)
            for block in content
            if not isinstance(block, Mapping) or block.get("type", "text") == "text"
        )
    return str(content)


def _role(message: Any) -> str | None:
    if isinstance(message, tuple) and len(message) == 2:
        return str(message[0])
    if isinstance(message, Mapping):
        return message.get("role") or message.get("type")
    return getattr(message, "type", None)


def prompt_text(inputs: Any) -> str | None:
    """The user's text in a run's inputs: a string, ``{"messages": [...]}`` (last user message), or
    ``{"input" | "question" | "query": str}``."""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        messages = inputs.get("messages")
        if isinstance(messages, Sequence) and not isinstance(messages, str):
            for message in reversed(messages):
                if _role(message) in ("user", "human"):
                    return message_text(message)
        for key in ("input", "question", "query"):
            if isinstance(inputs.get(key), str):
                return inputs[key]
    return None


def response_text(outputs: Any) -> Any:
    """The final text in a run's outputs: a string, a message, ``{"messages": [...]}`` (last message), or
    ``{"output": ...}``; an output without any text (bytes) as it is, which the agent span records as no response,
    with the reason."""
    if isinstance(outputs, str):
        return outputs
    if isinstance(outputs, Mapping):
        messages = outputs.get("messages")
        if isinstance(messages, Sequence) and not isinstance(messages, str) and messages:
            return message_text(messages[-1])
        if "output" in outputs:
            return response_text(outputs["output"])
        return None
    if spans.response_not_text(outputs) is not None:
        return outputs
    return message_text(outputs)


def _serialized_name(serialized: Mapping[str, Any] | None) -> str | None:
    if not serialized:
        return None
    if serialized.get("name"):
        return str(serialized["name"])
    ids = serialized.get("id")
    return str(ids[-1]) if isinstance(ids, list) and ids else None


def _session(metadata: Mapping[str, Any] | None) -> str | None:
    for key in _SESSION_KEYS:
        if metadata and metadata.get(key) is not None:
            return str(metadata[key])
    return None


def _arguments(inputs: Any, input_str: str) -> Mapping[str, Any]:
    if inputs.__class__ is dict or isinstance(inputs, Mapping):
        return inputs  # serialised at once, before the tool can change it
    if inputs is not None:
        return {"input": inputs}
    try:
        parsed = json.loads(input_str)
    except (TypeError, ValueError):
        return {"input": input_str}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


class ToolReportedError(Exception):
    """A tool's failure that LangChain handled and reported in the tool's message (``status="error"``: a
    ``ToolException`` under ``handle_tool_error``, an MCP result that said ``isError``)."""


def _error_text(output: Any) -> str:
    content = getattr(output, "content", None)
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
        return "\n".join(t for t in texts if t)
    return str(content)


def _tool_result(output: Any) -> Any:
    if output is None or output.__class__ in _PLAIN_RESULTS:
        return output
    content = getattr(output, "content", None)  # a ToolMessage (or Command carrying one)
    if content is None:
        return output
    if isinstance(content, str):
        return _json_or_text(content)
    blocks = content if isinstance(content, list) else []
    found = [b.get("text") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]
    texts: list[str] = [t for t in found if isinstance(t, str)]
    if not blocks or len(texts) != len(blocks):
        return content
    values = [_json_or_text(t) for t in texts]  # text blocks (an MCP tool's, through langchain-mcp-adapters)
    artifact = getattr(output, "artifact", None)
    structured = artifact.get("structured_content") if isinstance(artifact, Mapping) else None
    if isinstance(structured, dict):  # the structured result beside them, less the {"result": x} around a value
        unwrapped = set(structured) == {"result"} and len(values) == 1 and values[0] == structured["result"]
        return structured["result"] if unwrapped else structured
    return values[0] if len(values) == 1 else values


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


_PLAIN_RESULTS = frozenset({dict, list, str, int, float, bool})


def _model_name(
    serialized: Mapping[str, Any] | None, params: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None
) -> str:
    for source, key in ((params, "model"), (params, "model_name"), (metadata, "ls_model_name")):
        if source and source.get(key):
            return str(source[key])
    return _serialized_name(serialized) or "unknown"


def _requested_calls(response: Any) -> list[tuple[str | None, str, Any]]:
    """The tool calls of the model's reply (an ``AIMessage``'s ``tool_calls``), in the model's order."""
    for generations in getattr(response, "generations", None) or []:
        for generation in generations:
            calls = getattr(getattr(generation, "message", None), "tool_calls", None)
            if calls:
                return [(c.get("id"), str(c.get("name")), c.get("args")) for c in calls if isinstance(c, Mapping)]
    return []


def _usage(response: Any) -> tuple[int | None, int | None]:
    for generations in getattr(response, "generations", None) or []:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                return usage.get("input_tokens"), usage.get("output_tokens")
    token_usage = (getattr(response, "llm_output", None) or {}).get("token_usage") or {}
    return token_usage.get("prompt_tokens"), token_usage.get("completion_tokens")
