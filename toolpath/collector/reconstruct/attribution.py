"""Which agent did what in a multi-agent run (docs/spec.md §3): each tool call is the agent's whose run encloses
its tool span most closely, and the turn was answered by the agent of the last model call that answered.

An agent run is, by convention: a GenAI ``invoke_agent`` / ``invoke_workflow`` span (``gen_ai.agent.name``,
``gen_ai.workflow.name``: toolpath's own, ADK's, OpenLLMetry's, the official LangChain instrumentation's); an
OpenInference ``AGENT`` span with ``agent.name`` (openai-agents; LangGraph's ``agent`` *node* has none and is no
run of its own); an OpenLLMetry ``agent`` or ``workflow`` span (``traceloop.entity.name``); and a graph a tool ran
(an OpenInference ``CHAIN`` or OpenLLMetry ``task`` span right under a tool span: a LangGraph sub-agent called as
a tool); and an A2A server span (``a2a.server``, naming its agent): a remote agent's run in another process, in the
caller's trace. A tool span that names its agent itself (ADK's and the LangChain instrumentation's
``gen_ai.agent.name``) is taken at its word. What no run encloses is the root agent's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolpath.collector.reconstruct.genai import is_agent_span, last_text
from toolpath.collector.reconstruct.span_values import first, parse_json, str_or_none
from toolpath.model import ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

_NOT_A_RUN = ""
_SERVER = 2
"""OTLP's span kind SERVER."""
_MODEL_OPERATIONS = frozenset({sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION})


class Agents:
    """The agent runs of one invocation's spans (its root and every span below it)."""

    def __init__(self, root: SpanRecord, descendants: Iterable[SpanRecord], root_agent: str | None) -> None:
        self._by_id = {span.span_id: span for span in descendants}
        self._by_id[root.span_id] = root
        self._root = root
        self._root_agent = root_agent
        self._names: dict[str, str | None] = {}

    def of(self, span: SpanRecord, *, own: bool = True) -> str | None:
        """The agent whose run encloses ``span`` most closely (``own``: the span's own ``gen_ai.agent.name``
        first, for a tool or model span), else the root agent."""
        if span is self._root:
            return self._root_agent
        if (
            own
            and (name := str_or_none(span.attributes.get(sc.GEN_AI_AGENT_NAME)))
            and not is_agent_span(span.attributes)
        ):
            return name
        seen: set[str] = set()
        parent_id = span.parent_span_id
        while parent_id is not None and parent_id not in seen:
            seen.add(parent_id)
            parent = self._by_id.get(parent_id)
            if parent is None or parent is self._root:
                break
            if name := self._run_name(parent):
                return name
            parent_id = parent.parent_span_id
        return self._root_agent

    def _run_name(self, span: SpanRecord) -> str | None:
        """The agent ``span`` is a run of, or ``None``."""
        known = self._names.get(span.span_id, _NOT_A_RUN)
        if known != _NOT_A_RUN:
            return known
        name = run_name(span, self._by_id.get(span.parent_span_id or ""))
        self._names[span.span_id] = name
        return name

    def attribute(self, calls: Sequence[ToolCall], tool_spans: Sequence[SpanRecord]) -> list[ToolCall]:
        """``calls`` (one per span of ``tool_spans``), each naming the agent that made it (a call that names one
        already keeps it)."""
        out = []
        for call, span in zip(calls, tool_spans, strict=True):
            if call.agent_name is None and (agent := self.of(span)) is not None:
                call.__dict__["agent_name"] = agent  # a record built here, not yet shared
                call.__pydantic_fields_set__.add("agent_name")
            out.append(call)
        return out

    def answered_by(self, descendants: Sequence[SpanRecord]) -> str | None:
        """The agent of the last model call (``descendants`` in start order) that answered with text, else of
        the last model call; the root agent when there is none."""
        models = [s for s in descendants if _is_model_span(s)]
        answering = next((s for s in reversed(models) if _answered_with_text(s)), models[-1] if models else None)
        return self._root_agent if answering is None else self.of(answering)


def run_name(span: SpanRecord, parent: SpanRecord | None) -> str | None:
    """The agent ``span`` is a run of (``parent``: its parent, when known), or ``None`` when it is no agent run."""
    attrs = span.attributes
    if is_agent_span(attrs):
        return str_or_none(first(attrs, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_WORKFLOW_NAME))
    if sc.A2A_METHOD_NAME in attrs and span.kind == _SERVER:  # a remote agent serving an A2A request
        return str_or_none(attrs.get(sc.GEN_AI_AGENT_NAME))
    kind = attrs.get(sc.OPENINFERENCE_SPAN_KIND)
    if kind == "AGENT":
        return str_or_none(attrs.get(sc.OI_AGENT_NAME))
    traceloop = attrs.get(sc.TRACELOOP_SPAN_KIND)
    if traceloop in ("agent", "workflow"):
        return str_or_none(attrs.get(sc.TRACELOOP_ENTITY_NAME))
    if (kind == "CHAIN" or traceloop == "task") and parent is not None and _is_tool(parent.attributes):
        return str_or_none(attrs.get(sc.TRACELOOP_ENTITY_NAME) or span.name)  # a graph a tool ran
    return None


def _is_tool(attrs: Mapping[str, Any]) -> bool:
    return (
        attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL
        or attrs.get(sc.OPENINFERENCE_SPAN_KIND) == "TOOL"
        or attrs.get(sc.TRACELOOP_SPAN_KIND) == "tool"
    )


def _is_model_span(span: SpanRecord) -> bool:
    attrs = span.attributes
    operation = attrs.get(sc.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation in _MODEL_OPERATIONS:
        return True
    return attrs.get(sc.OPENINFERENCE_SPAN_KIND) == "LLM"


def _answered_with_text(span: SpanRecord) -> bool:
    attrs = span.attributes
    if last_text(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES), None) is not None:
        return True
    if any(k.startswith(sc.OI_OUTPUT_MESSAGES_PREFIX) and k.endswith(".message.content") for k in attrs):
        return True
    payload = parse_json(attrs.get(sc.ADK_LLM_RESPONSE))
    content = payload.get("content") if isinstance(payload, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return isinstance(parts, list) and any(isinstance(p, dict) and p.get("text") for p in parts)
