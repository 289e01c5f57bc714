"""Jaeger's JSON trace export (the Jaeger UI's "Download JSON", the query API's ``/api/traces``) as an OTLP/JSON
``ExportTraceServiceRequest``, so that a Jaeger file goes through the same decoder and reconstruction as OTLP.

Jaeger keeps what OTLP has in fields of its own as tags, and they are read back as the OpenTelemetry Collector's
Jaeger translator writes them: ``span.kind``, ``otel.status_code`` / ``otel.status_description`` (or ``error``),
``otel.scope.name`` / ``otel.scope.version`` (``otel.library.*`` from older exporters); the process is the
resource (``serviceName`` is ``service.name``); a log is an event named by its ``event`` field; times are
microseconds. Arrays and maps the translator wrote as JSON text stay text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["JaegerFormatError", "is_jaeger", "jaeger_traces", "otlp_request"]

_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS = {"OK": 1, "ERROR": 2}
_SCOPE_NAME = ("otel.scope.name", "otel.library.name")
_SCOPE_VERSION = ("otel.scope.version", "otel.library.version")
_SPECIAL = {
    "span.kind",
    "otel.status_code",
    "otel.status_description",
    "error",
    *_SCOPE_NAME,
    *_SCOPE_VERSION,
    "internal.span.format",
}


class JaegerFormatError(ValueError):
    """A Jaeger trace the conversion cannot read; the message names what is wrong."""


def is_jaeger(document: Any) -> bool:
    """Whether a parsed JSON document is a Jaeger export: ``{"data": [trace, …]}`` or a single trace, a trace
    having ``traceID`` and ``spans``."""
    if not isinstance(document, dict):
        return False
    if isinstance(document.get("data"), list):
        return all(isinstance(t, dict) and "spans" in t for t in document["data"])
    return "traceID" in document and isinstance(document.get("spans"), list)


def jaeger_traces(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The traces of a Jaeger export (see :func:`is_jaeger`)."""
    data = document.get("data")
    return list(data) if isinstance(data, list) else [document]


def otlp_request(trace: Mapping[str, Any]) -> dict[str, Any]:
    """One Jaeger trace as an OTLP/JSON request: a resource per process, a scope per instrumentation."""
    processes = trace.get("processes") or {}
    if not isinstance(processes, dict):
        raise JaegerFormatError("'processes' is not an object")
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    spans = trace.get("spans")
    if not isinstance(spans, list):
        raise JaegerFormatError("'spans' is not a list")
    for number, span in enumerate(spans, start=1):
        if not isinstance(span, dict):
            raise JaegerFormatError(f"span {number} is not an object")
        tags = _tags(span.get("tags"), f"span {number}")
        scope = _first(tags, _SCOPE_NAME), _first(tags, _SCOPE_VERSION)
        groups.setdefault((str(span.get("processID") or ""), *scope), []).append(_span(span, tags, number))
    resource_spans: dict[str, dict[str, Any]] = {}
    for (process_id, scope_name, scope_version), converted in groups.items():
        holder = resource_spans.get(process_id)
        if holder is None:
            holder = resource_spans[process_id] = {"resource": _resource(processes.get(process_id)), "scopeSpans": []}
        named = {"name": scope_name} | ({"version": scope_version} if scope_version else {})
        holder["scopeSpans"].append({"scope": named, "spans": converted})
    return {"resourceSpans": list(resource_spans.values())}


def _span(span: Mapping[str, Any], tags: list[tuple[str, dict[str, Any]]], number: int) -> dict[str, Any]:
    where = f"span {number}"
    trace_id, span_id = _id(span.get("traceID"), 32, f"{where} traceID"), _id(span.get("spanID"), 16, f"{where} spanID")
    start = _micros(span.get("startTime"), f"{where} startTime")
    duration = _micros(span.get("duration", 0), f"{where} duration")
    out: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": str(span.get("operationName") or ""),
        "startTimeUnixNano": str(start * 1000),
        "endTimeUnixNano": str((start + duration) * 1000),
        "attributes": [{"key": key, "value": value} for key, value in tags if key not in _SPECIAL],
    }
    parent = _parent(span, trace_id, where)
    if parent:
        out["parentSpanId"] = parent
    plain = dict(tags)
    kind = _text(plain.get("span.kind"))
    out["kind"] = _KINDS.get((kind or "internal").lower(), 1)
    code = _text(plain.get("otel.status_code"))
    failed = plain.get("error", {}).get("boolValue") is True or _text(plain.get("error")) == "true"
    status: dict[str, Any] = {}
    if code in _STATUS or failed:
        status["code"] = _STATUS.get(code or "ERROR", 2)
    message = _text(plain.get("otel.status_description"))
    if message:
        status["message"] = message
    if status:
        out["status"] = status
    events = [_event(log, f"{where} log {i}") for i, log in enumerate(span.get("logs") or [], start=1)]
    if events:
        out["events"] = events
    return out


def _parent(span: Mapping[str, Any], trace_id: str, where: str) -> str | None:
    for reference in span.get("references") or []:
        if not isinstance(reference, dict) or reference.get("refType", "CHILD_OF") != "CHILD_OF":
            continue
        if _id(reference.get("traceID"), 32, f"{where} reference") == trace_id:
            return _id(reference.get("spanID"), 16, f"{where} reference")
    parent = span.get("parentSpanID")  # Jaeger's internal model, as some tools dump it
    return _id(parent, 16, f"{where} parentSpanID") if parent and set(str(parent)) != {"0"} else None


def _event(log: Any, where: str) -> dict[str, Any]:
    if not isinstance(log, dict):
        raise JaegerFormatError(f"{where} is not an object")
    fields = _tags(log.get("fields"), where)
    name = next((_text(value) for key, value in fields if key == "event"), None)
    return {
        "timeUnixNano": str(_micros(log.get("timestamp"), f"{where} timestamp") * 1000),
        "name": name or "",
        "attributes": [{"key": key, "value": value} for key, value in fields if key != "event"],
    }


def _resource(process: Any) -> dict[str, Any]:
    if not isinstance(process, dict):
        return {"attributes": []}
    attributes = [{"key": key, "value": value} for key, value in _tags(process.get("tags"), "process")]
    if process.get("serviceName"):
        attributes.insert(0, {"key": "service.name", "value": {"stringValue": str(process["serviceName"])}})
    return {"attributes": attributes}


def _tags(tags: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """Jaeger's typed key-values as OTLP/JSON ``AnyValue`` objects."""
    if tags is None:
        return []
    if not isinstance(tags, list):
        raise JaegerFormatError(f"{where}: tags are not a list")
    out = []
    for tag in tags:
        if not isinstance(tag, dict) or not isinstance(tag.get("key"), str):
            raise JaegerFormatError(f"{where}: a tag without a key")
        out.append((tag["key"], _value(tag.get("type", "string"), tag.get("value"), f"{where} tag {tag['key']!r}")))
    return out


def _value(kind: Any, value: Any, where: str) -> dict[str, Any]:
    kind = str(kind).lower()
    if kind == "bool":
        return {"boolValue": value is True or str(value).lower() == "true"}
    if kind == "int64":
        try:
            return {"intValue": str(int(value))}
        except (TypeError, ValueError):
            raise JaegerFormatError(f"{where}: {value!r} is not an int64") from None
    if kind == "float64":
        try:
            return {"doubleValue": float(value)}
        except (TypeError, ValueError):
            raise JaegerFormatError(f"{where}: {value!r} is not a float64") from None
    if kind == "binary":
        return {"bytesValue": str(value)}  # base64 in both formats
    return {"stringValue": "" if value is None else str(value)}


def _text(value: dict[str, Any] | None) -> str | None:
    if not value:
        return None
    found = next(iter(value.values()))
    return str(found).lower() if isinstance(found, bool) else str(found)


def _first(tags: list[tuple[str, dict[str, Any]]], keys: tuple[str, ...]) -> str:
    plain = dict(tags)
    return next((_text(plain[key]) or "" for key in keys if key in plain), "")


def _id(value: Any, digits: int, where: str) -> str:
    text = str(value or "")
    if not text or len(text) > digits or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise JaegerFormatError(f"{where}: {value!r} is not a hex id of at most {digits} digits")
    return text.lower().rjust(digits, "0")


def _micros(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise JaegerFormatError(f"{where}: {value!r} is not a number of microseconds")
    return int(value)
