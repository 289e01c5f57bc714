"""Trace files read as the collector reads exports: OTLP/JSON (one ``ExportTraceServiceRequest`` per line, as the
OpenTelemetry Collector's ``file`` exporter writes, or one document), OTLP protobuf (one request, or requests
each after its length: 4 bytes big-endian as the Collector's exporter writes them, or a varint as protobuf's
delimited streams), gzip-compressed or not, and Jaeger's JSON export (:mod:`.jaeger_json`). OTLP logs
(``ExportLogsServiceRequest``: lines of the Collector's ``file`` exporter, one document, protobuf framed as traces
are) give their GenAI events, as ``collect`` takes them on ``/v1/logs`` (:mod:`.genai_logs`), so content sent as
events rebuilds from files too.

Each line (message, Jaeger trace) is decoded by :func:`toolpath.collector.otlp.decode` on its own, as one export:
one that cannot be read is a :class:`BadPart` naming it, and the others still count; a span the decoder leaves
out (no valid ids) is rejected with its reason, as ``collect`` rejects it."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from toolpath.collector import genai_logs, otlp
from toolpath.collector.jaeger_json import JaegerFormatError, is_jaeger, jaeger_traces, otlp_request
from toolpath.errors import ConfigError
from toolpath.store.spanrecord import SpanRecord

__all__ = ["BadPart", "TraceFile", "read_trace_file"]

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
_GZIP_MAGIC = b"\x1f\x8b"
_SPANS_KEYS = frozenset({"resourceSpans", "resource_spans"})
_LOGS_KEYS = frozenset({"resourceLogs", "resource_logs"})


@dataclass(frozen=True)
class BadPart:
    """A line (message, trace) of a file that could not be read: nothing of it was taken."""

    path: str
    where: str
    """``line 3``, ``message 2``, ``trace 1``."""
    reason: str

    def describe(self) -> str:
        return f"{self.path} {self.where}: {self.reason}"


@dataclass
class TraceFile:
    """What one file held: its format, its exports' span records in file order, the spans the decoder left out
    (with reasons) and the parts it could not read."""

    path: str
    format: str
    """``otlp-json-lines``, ``otlp-json``, ``otlp-protobuf``, ``otlp-protobuf-framed`` (4-byte lengths),
    ``otlp-protobuf-delimited`` (varint lengths), ``jaeger-json``."""
    batches: list[list[SpanRecord]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    bad: list[BadPart] = field(default_factory=list)

    @property
    def spans(self) -> int:
        return sum(len(batch) for batch in self.batches)


def read_trace_file(path: Path) -> TraceFile:
    """The spans of the trace file at ``path``. A file that cannot be opened, is empty, or is no trace format
    at all is a :class:`ConfigError` naming it; a bad line or message inside one is a :class:`BadPart`."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if raw.startswith(_GZIP_MAGIC):
        try:
            raw = zlib.decompress(raw, wbits=31)
        except zlib.error as exc:
            raise ConfigError(f"{path}: not a readable gzip file: {exc}") from None
    if not raw.strip():
        raise ConfigError(f"{path}: empty: no trace in it")
    if raw.lstrip()[:1] in (b"{", b"["):
        return _read_json(str(path), raw)
    return _read_protobuf(str(path), raw)


def _read_json(path: str, raw: bytes) -> TraceFile:
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        document = None  # several lines (or a bad one): read line by line below
    if is_jaeger(document):
        return _read_jaeger(path, document)
    if isinstance(document, dict):
        one_line = b"\n" not in raw.strip()  # the Collector's file with one export in it
        out = TraceFile(path, "otlp-json-lines" if one_line else "otlp-json")
        logs = bool(_LOGS_KEYS & set(document)) and not _SPANS_KEYS & set(document)
        (_decode_logs_part if logs else _decode_part)(out, "line 1" if one_line else "document", raw, JSON)
        if out.bad:
            raise ConfigError(out.bad[0].describe())
        return out
    out = TraceFile(path, "otlp-json-lines")
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except RecursionError:
            data = {"resourceSpans": None}  # the decoder flattens what is nested too deeply
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            out.bad.append(BadPart(path, f"line {number}", f"not valid JSON: {exc}"))
            continue
        if isinstance(data, dict) and _LOGS_KEYS & set(data) and not _SPANS_KEYS & set(data):
            _decode_logs_part(out, f"line {number}", line, JSON)
            continue
        if not isinstance(data, dict) or not (_SPANS_KEYS & set(data)):
            out.bad.append(BadPart(path, f"line {number}", "not an OTLP ExportTraceServiceRequest (no resourceSpans) "
                                   "nor ExportLogsServiceRequest (no resourceLogs)"))  # fmt: skip
            continue
        _decode_part(out, f"line {number}", line, JSON)
    if not out.batches and not out.bad:
        raise ConfigError(f"{path}: no trace in it")
    return out


def _read_jaeger(path: str, document: dict[str, object]) -> TraceFile:
    out = TraceFile(path, "jaeger-json")
    for number, trace in enumerate(jaeger_traces(document), start=1):
        try:
            body = json.dumps(otlp_request(trace)).encode()
        except JaegerFormatError as exc:
            out.bad.append(BadPart(path, f"trace {number}", str(exc)))
            continue
        _decode_part(out, f"trace {number}", body, JSON)
    return out


def _read_protobuf(path: str, raw: bytes) -> TraceFile:
    # a request begins with its first field's tag (0x0a); a length of 4 bytes big-endian with a zero, as any
    # message under 16 MiB has
    framed = _fixed_frames(raw) if raw[:1] == b"\x00" else None
    if framed is not None:
        out = TraceFile(path, "otlp-protobuf-framed")
        for number, frame in enumerate(framed, start=1):
            _decode_part(out, f"message {number}", frame, PROTOBUF)
        return out
    single = TraceFile(path, "otlp-protobuf")
    _decode_part(single, "message 1", raw, PROTOBUF)
    if not single.bad and single.spans:
        return single
    delimited = _varint_frames(raw)
    if delimited is not None and len(delimited) > 1:
        out = TraceFile(path, "otlp-protobuf-delimited")
        for number, frame in enumerate(delimited, start=1):
            _decode_part(out, f"message {number}", frame, PROTOBUF)
        if not out.bad and all(out.batches):  # every message a request with spans: this is the framing
            return out
    if single.bad:
        raise ConfigError(f"{path}: neither OTLP/JSON, OTLP protobuf nor Jaeger JSON ({single.bad[0].reason})")
    raise ConfigError(f"{path}: no trace in it")


def _decode_part(out: TraceFile, where: str, body: bytes, content_type: str) -> None:
    rejected: list[str] = []
    try:
        records = otlp.decode(body, content_type, rejected)
    except otlp.OtlpDecodeError as exc:
        out.bad.append(BadPart(out.path, where, str(exc)))
        return
    if content_type == PROTOBUF and not records and _protobuf_logs(out, where, body):
        return  # a logs request: protobuf does not say which message it is, but no span of it could be read
    out.rejected += [f"{out.path} {where}: {reason}" for reason in rejected]
    out.batches.append(records)


def _decode_logs_part(out: TraceFile, where: str, body: bytes, content_type: str) -> None:
    """The GenAI events of an OTLP logs request, as records under their spans; other log records are not kept."""
    try:
        decoded = genai_logs.decode_logs(body, content_type)
    except otlp.OtlpDecodeError as exc:
        out.bad.append(BadPart(out.path, where, str(exc)))
        return
    out.rejected += [f"{out.path} {where}: {reason}" for reason in decoded.rejected]
    out.batches.append(decoded.records)


def _protobuf_logs(out: TraceFile, where: str, body: bytes) -> bool:
    """Whether ``body`` is an OTLP logs request with GenAI events (then taken as :func:`_decode_logs_part` does)."""
    try:
        decoded = genai_logs.decode_logs(body, PROTOBUF)
    except otlp.OtlpDecodeError:
        return False
    if not decoded.records and not decoded.rejected:
        return False
    out.rejected += [f"{out.path} {where}: {reason}" for reason in decoded.rejected]
    out.batches.append(decoded.records)
    return True


def _fixed_frames(raw: bytes) -> list[bytes] | None:
    """``raw`` cut into messages each after its length as 4 bytes big-endian, if that framing takes it exactly."""
    frames, pos = [], 0
    while pos < len(raw):
        if pos + 4 > len(raw):
            return None
        (size,) = struct.unpack_from(">I", raw, pos)
        pos += 4
        if size == 0 or pos + size > len(raw):
            return None
        frames.append(raw[pos : pos + size])
        pos += size
    return frames or None


def _varint_frames(raw: bytes) -> list[bytes] | None:
    """``raw`` cut into messages each after its length as a varint, if that framing takes it exactly."""
    frames, pos = [], 0
    while pos < len(raw):
        size, shift = 0, 0
        while True:
            if pos >= len(raw) or shift > 35:
                return None
            byte = raw[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if size == 0 or pos + size > len(raw):
            return None
        frames.append(raw[pos : pos + size])
        pos += size
    return frames or None
