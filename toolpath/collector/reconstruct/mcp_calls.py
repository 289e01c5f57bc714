"""Model Context Protocol calls (docs/spec.md §3): one tool call however many spans record it.

A ``tools/call`` can be recorded three times: by the framework that made it (its ``execute_tool`` span), by the MCP
client (a CLIENT span ``tools/call {tool}``: toolpath's, or OpenLLMetry's ``{tool}.tool``), and by the MCP server
in another process (a SERVER span, its child through the context in ``params._meta``; OpenLLMetry's FastMCP
``{tool}.tool``; any tool span of a server in another process, under the context OpenInference's MCP
instrumentation carries). A tool span of MCP, or of another process, below another tool span of the same tool,
with no agent run between them, is the same call: it is folded into the outermost one, which keeps its name (as
the agent saw it), call id and place, and takes from the inner spans what it lacks — arguments, an error (a result
that says ``isError``) — and the inner span's result, which is the value the tool returned where the framework
may record its own wrapping of it.

A result in the ``CallToolResult`` shape (``{"content": [...], "structuredContent", "isError"}``, as ADK records
an MCP tool's response) is read as the value the tool returned, as for a tool in process; ``isError`` makes it an
error with the result's text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolpath.collector.reconstruct.span_values import error_text, parse_json
from toolpath.model import ToolCall, constructed, mcp_tool_error
from toolpath.store.spanrecord import STATUS_ERROR, SpanRecord
from toolpath.tracer import semconv as sc

_RESULT_KEYS = frozenset({"content", "structuredContent", "structured_content", "isError", "is_error", "meta", "_meta"})


def is_mcp_span(attributes: Mapping[str, Any]) -> bool:
    """A span of an MCP request: the conventions' ``mcp.method.name``, or OpenLLMetry's MCP tool span."""
    return sc.MCP_METHOD_NAME in attributes or is_openllmetry_mcp_tool(attributes)


def is_openllmetry_mcp_tool(attributes: Mapping[str, Any]) -> bool:
    """OpenLLMetry's MCP tool span (client ``call_tool`` and FastMCP server alike): ``traceloop.span.kind=tool``
    with no GenAI operation, its input ``{"tool_name", "arguments"}``."""
    if attributes.get(sc.TRACELOOP_SPAN_KIND) != "tool" or sc.GEN_AI_OPERATION_NAME in attributes:
        return False
    raw = attributes.get(sc.TRACELOOP_ENTITY_INPUT)
    if not isinstance(raw, str) or '"tool_name"' not in raw:
        return False
    value = parse_json(raw)
    return isinstance(value, dict) and "tool_name" in value


def openllmetry_tool_call(span: SpanRecord) -> ToolCall:
    """The call an OpenLLMetry MCP tool span records: input ``{"tool_name", "arguments"}``; output
    ``{"result": text, "is_error"}`` (client) or ``[{"type": "text", "content"}]`` (FastMCP server)."""
    attrs = span.attributes
    given = parse_json(attrs.get(sc.TRACELOOP_ENTITY_INPUT))
    given = given if isinstance(given, dict) else {}
    args = given.get("arguments")
    output = parse_json(attrs.get(sc.TRACELOOP_ENTITY_OUTPUT))
    result: Any = None
    if isinstance(output, dict) and "result" in output:
        result = _text_value(output["result"])
    elif isinstance(output, list):
        texts = [_text_value(p.get("content")) for p in output if isinstance(p, dict) and p.get("type") == "text"]
        result = texts[0] if len(texts) == 1 else texts or None
    failed = span.status_code == STATUS_ERROR or (isinstance(output, dict) and output.get("is_error") is True)
    error = error_text(span) if span.status_code == STATUS_ERROR else ("tool_error" if failed else None)
    name = attrs.get(sc.TRACELOOP_ENTITY_NAME) or given.get("tool_name") or span.name.removesuffix(".tool")
    return constructed(
        ToolCall,
        {
            "name": str(name),
            "args": args if isinstance(args, dict) else ({} if args is None else {"input": args}),
            "result": None if failed else result,
            "call_id": None,
            "error": error,
            "start_time": span.start_time,
            "end_time": span.end_time,
            "agent_name": None,
        },
    )


def read_result(result: Any) -> tuple[Any, str | None]:
    """A result in the ``CallToolResult`` shape as (the value, the error its ``isError`` says); any other result
    as it is, with no error."""
    if not (isinstance(result, dict) and "content" in result and isinstance(result["content"], list)):
        return result, None
    if not set(result) <= _RESULT_KEYS or not all(isinstance(b, dict) and "type" in b for b in result["content"]):
        return result, None
    if (error := mcp_tool_error(result)) is not None:
        return None, error
    blocks = [_block_value(block) for block in result["content"]]
    structured = result.get("structuredContent", result.get("structured_content"))
    if isinstance(structured, dict):
        if set(structured) == {"result"} and len(blocks) == 1 and blocks[0] == structured["result"]:
            return structured["result"], None
        return structured, None
    return (blocks[0] if len(blocks) == 1 else blocks), None


def tool_message_outcome(message: Mapping[str, Any], content: Any) -> tuple[Any, str | None]:
    """A serialised LangChain ``ToolMessage`` (its ``data``; ``content`` parsed) as (result, error): ``status:
    error`` (a failure the graph handed the model) is an error with the message's text; an MCP tool's message
    (``langchain-mcp-adapters``: content blocks, the structured result in ``artifact.structured_content``) gives
    the value the tool returned; any other message its content as it is."""
    blocks = content if isinstance(content, list) and content else None
    texts = [b["text"] for b in blocks or () if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    if message.get("status") == "error":
        return None, "\n".join(texts) if texts else (content if isinstance(content, str) else "error")
    if blocks is None or len(texts) != len(blocks) or not all(b.get("type") == "text" for b in blocks):
        return content, None
    artifact = message.get("artifact")
    structured = artifact.get("structured_content") if isinstance(artifact, Mapping) else None
    values = [_text_value(t) for t in texts]
    if isinstance(structured, dict):
        if set(structured) == {"result"} and len(values) == 1 and values[0] == structured["result"]:
            return structured["result"], None
        return structured, None
    return (values[0] if len(values) == 1 else values), None


def _block_value(block: Mapping[str, Any]) -> Any:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return _text_value(block["text"])
    return dict(block)


def _text_value(text: Any) -> Any:
    """A text that holds JSON as that JSON's value; other text as itself."""
    if not isinstance(text, str):
        return text
    value = parse_json(text)
    return value if value is not text else text


def fold_same_calls(
    calls: Sequence[ToolCall],
    tool_spans: Sequence[SpanRecord],
    parent_of: Callable[[SpanRecord], SpanRecord | None],
    is_run: Callable[[SpanRecord], bool],
) -> tuple[list[ToolCall], list[SpanRecord]]:
    """``calls`` (one per span of ``tool_spans``, in start order) with each MCP span folded into the tool span of
    the same call above it (``parent_of``: a span's parent in the run; ``is_run``: an agent run, which no fold
    crosses)."""
    is_tool = {id(span) for span in tool_spans}
    place_of: dict[str, int] = {}
    kept: list[int] = []
    merged = list(calls)
    for place, (call, span) in enumerate(zip(calls, tool_spans, strict=True)):
        outer = _nearest_tool(span, parent_of, is_run, is_tool)
        target = place_of.get(outer.span_id) if outer is not None else None
        if target is not None and outer is not None and _same_call(merged[target], call, span, outer):
            merged[target] = _fill(
                merged[target], call, is_mcp_span(span.attributes) or span.resource != outer.resource
            )
            place_of[span.span_id] = target
            continue
        place_of[span.span_id] = place
        kept.append(place)
    return [merged[p] for p in kept], [tool_spans[p] for p in kept]


def _nearest_tool(
    span: SpanRecord,
    parent_of: Callable[[SpanRecord], SpanRecord | None],
    is_run: Callable[[SpanRecord], bool],
    is_tool: set[int],
) -> SpanRecord | None:
    seen: set[str] = set()
    parent = parent_of(span)
    while parent is not None and parent.span_id not in seen:
        seen.add(parent.span_id)
        if id(parent) in is_tool:
            return parent
        if is_run(parent):
            return None
        parent = parent_of(parent)
    return None


def _same_call(outer_call: ToolCall, inner_call: ToolCall, inner: SpanRecord, outer: SpanRecord) -> bool:
    """An MCP span under a tool span of the same tool; or a tool span under one of the same tool in another process
    (its resource differs: a server traced by other means, the context carried by OpenInference's MCP
    instrumentation, say). A tool that calls a tool of its own name in process makes two calls."""
    remote = is_mcp_span(inner.attributes) or is_mcp_span(outer.attributes) or inner.resource != outer.resource
    return remote and (outer_call.name == inner_call.name or outer_call.name.endswith(inner_call.name))


def _fill(outer: ToolCall, inner: ToolCall, inner_is_mcp: bool) -> ToolCall:
    """The outer call, with what only the inner one recorded; an MCP span's (or the server's own) result is the
    value the tool returned, so it replaces the framework's wrapping of it (LangChain's content blocks, say)."""
    update: dict[str, Any] = {}
    if not outer.args and inner.args:
        update["args"] = inner.args
    if inner.result is not None and (inner_is_mcp or outer.result is None) and outer.error is None:
        update["result"] = inner.result
    if inner.error is not None:
        if outer.error is None:
            update["error"] = inner.error
        if inner_is_mcp:  # the tool failed: what the framework shows the model of its error is no result
            update["result"] = None
    if outer.call_id is None and inner.call_id is not None:
        update["call_id"] = inner.call_id
    return outer.model_copy(update=update) if update else outer
