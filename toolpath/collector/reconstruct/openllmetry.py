"""OpenLLMetry (``traceloop.*``): the LangChain tool input and output it wraps."""

from __future__ import annotations

from typing import Any

from toolpath.collector.reconstruct.span_values import parse_json, str_or_none


def unwrap_tool_io(args: dict[str, Any], result: Any, call_id: str | None) -> tuple[dict[str, Any], Any, str | None]:
    """OpenLLMetry wraps LangChain tool input as ``{"input_str", "inputs", "kwargs": {"tool_call_id"}}`` and the
    output as ``{"output": <serialised ToolMessage>}`` whose ``kwargs.content`` holds the return value."""
    if isinstance(args.get("inputs"), dict):
        call_id = call_id or str_or_none((args.get("kwargs") or {}).get("tool_call_id"))
        args = args["inputs"]
    if isinstance(result, dict) and isinstance(result.get("output"), dict):
        message = result["output"]
        content = (message.get("kwargs") or {}).get("content", message.get("content"))
        result = parse_json(content) if content is not None else message
    return args, result, call_id
