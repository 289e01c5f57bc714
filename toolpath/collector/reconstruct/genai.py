"""The OpenTelemetry GenAI conventions (toolpath's own spans, ADK 2.x, OpenLLMetry, the official LangChain
instrumentation): agent, tool and model spans, messages, and the trajectory an agent returned."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolpath.collector.reconstruct.span_values import parse_json
from toolpath.model import ToolCall
from toolpath.store.spanrecord import SpanRecord
from toolpath.tracer import semconv as sc

_AGENT_OPERATIONS = frozenset({sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW})
AGENT_SPAN_PREFIXES = (sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW)
"""GenAI agent spans are named ``{operation} {agent}``."""
_MODEL_OPERATIONS = frozenset({sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION})


def is_agent_span(attributes: Mapping[str, Any]) -> bool:
    operation = attributes.get(sc.GEN_AI_OPERATION_NAME)
    return isinstance(operation, str) and operation in _AGENT_OPERATIONS  # any OTLP value may come: a list too


def model_spans(descendants: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in descendants if _operation(s) in _MODEL_OPERATIONS]


def _operation(span: SpanRecord) -> str | None:
    operation = span.attributes.get(sc.GEN_AI_OPERATION_NAME)
    return operation if isinstance(operation, str) else None


def agent_description(root: SpanRecord, descendants: Iterable[SpanRecord], agent_name: str | None) -> str | None:
    """The turn's agent's ``gen_ai.agent.description``: the root's, else that of the first agent span below that
    names the same agent (ADK's ``invoke_workflow`` root has none; its ``invoke_agent`` span does)."""
    for span in (root, *descendants):
        attributes = span.attributes
        if span is not root and (not is_agent_span(attributes) or attributes.get(sc.GEN_AI_AGENT_NAME) != agent_name):
            continue
        description = attributes.get(sc.GEN_AI_AGENT_DESCRIPTION)
        if isinstance(description, str) and description.strip():
            return description
    return None


def requested_calls(attributes: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    """The ``tool_call`` parts (id, name, arguments) of a model span's ``gen_ai.output.messages``, in order."""
    if sc.GEN_AI_OUTPUT_MESSAGES not in attributes or is_agent_span(attributes):
        return []
    messages = parse_json(attributes[sc.GEN_AI_OUTPUT_MESSAGES])
    asked: list[tuple[str | None, str, Any]] = []
    for message in messages if isinstance(messages, list) else ():
        for part in message.get("parts") or () if isinstance(message, dict) else ():
            if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name"):
                call_id = part.get("id")
                asked.append((str(call_id) if call_id else None, str(part["name"]), parse_json(part.get("arguments"))))
    return asked


def last_text(messages_json: Any, role: str | None) -> str | None:
    """The text of the last message (with ``role``, if given) of a GenAI ``*.messages`` attribute."""
    messages = parse_json(messages_json)
    if not isinstance(messages, list):
        return messages if isinstance(messages, str) else None
    for message in reversed(messages):
        if not isinstance(message, dict) or (role is not None and message.get("role") != role):
            continue
        texts = [
            str(part.get("content", ""))
            for part in message.get("parts") or []
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        if texts:
            return "".join(texts)
    return None


def reported_trajectory(attrs: Mapping[str, Any]) -> list[ToolCall] | None:
    """The trajectory the agent span carries (``toolpath.agent.predicted_trajectory``, Vertex or ADK form);
    ``None`` when there is none or it cannot be read (e.g. it was truncated). A call without arguments has ``{}``,
    except in a framework's own event record (ADK's events), which tells a call made without ``args`` (kept
    ``None``, as ADK compares it unequal to ``{}``) from one made with ``{}``."""
    items = parse_json(attrs.get(sc.TOOLPATH_PREDICTED_TRAJECTORY))
    if not isinstance(items, list):
        return None
    keep_none = attrs.get(sc.TOOLPATH_TRAJECTORY_SOURCE) == sc.TRAJECTORY_SOURCE_EVENTS
    calls = []
    for item in items:
        try:
            call = ToolCall.from_item(item)
        except ValueError:
            continue  # an agent that returned junk in its trajectory: keep the well-formed calls
        calls.append(call if keep_none or call.args is not None else call.model_copy(update={"args": {}}))
    return calls


def intermediate_responses(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(author, text)`` pairs the agent span carries (``toolpath.agent.intermediate_responses``)."""
    pairs = parse_json(attrs.get(sc.TOOLPATH_INTERMEDIATE_RESPONSES))
    if not isinstance(pairs, list):
        return []
    return [
        (str(pair[0]), pair[1])
        for pair in pairs
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)
    ]
