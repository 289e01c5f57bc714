"""OTLP replies: the export response or a ``google.rpc.Status`` error, in the request's encoding (protobuf or
JSON), with the gRPC status code OTLP/HTTP pairs with each HTTP status; and a bounded gzip reader."""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from google.protobuf import json_format
from google.rpc.status_pb2 import Status

from toolpath.errors import InternalSignal


@dataclass
class Reply:
    """An HTTP answer: status, body, its content type and extra headers."""

    status: int
    body: bytes = b""
    content_type: str = "application/x-protobuf"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LeftOut:
    """What a write left out of the store of the spans (or GenAI events) it was given, and what it stored that can
    never be a run, each told back to the sender in OTLP's ``partial_success``."""

    quarantined: int = 0
    """Refused by the store even alone, or not redactable."""
    over_trace_limit: int = 0
    """Turned away by the limit of spans per trace."""
    trace_limit: int | None = None
    """That limit (``max_spans_per_trace``)."""
    in_cycles: tuple[str, ...] = ()
    """Why spans now stored close a circle of parents with spans of an earlier export (a warning: stored)."""

    @property
    def rejected(self) -> int:
        """Items not stored."""
        return self.quarantined + self.over_trace_limit

    def with_quarantined(self, more: int) -> LeftOut:
        return replace(self, quarantined=self.quarantined + more)

    def reasons(self, noun: str = "span") -> list[str]:
        """Why, in the words told back: counts first, then the circles (a few)."""
        out = [f"{self.quarantined} {noun}(s) the store refused were quarantined"] if self.quarantined else []
        if self.over_trace_limit:
            out.append(
                f"{self.over_trace_limit} {noun}(s) over the limit of {self.trace_limit} spans per trace "
                "(max_spans_per_trace) were not stored"
            )
        return [*out, *self.in_cycles[:3]]


class GrpcCode(IntEnum):
    """The gRPC status codes an OTLP error carries (``google.rpc.Code``)."""

    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    PERMISSION_DENIED = 7
    UNAVAILABLE = 14
    UNAUTHENTICATED = 16


_GRPC_CODES = {
    400: GrpcCode.INVALID_ARGUMENT,
    401: GrpcCode.UNAUTHENTICATED,
    403: GrpcCode.PERMISSION_DENIED,
    404: GrpcCode.NOT_FOUND,
    408: GrpcCode.DEADLINE_EXCEEDED,
    413: GrpcCode.INVALID_ARGUMENT,
    415: GrpcCode.INVALID_ARGUMENT,
    503: GrpcCode.UNAVAILABLE,
}


class TooLarge(InternalSignal):
    """A gzip body that decompresses past the limit."""


def gunzip(body: bytes, limit: int) -> bytes:
    """Decompress, reading at most one byte past ``limit`` (a small bomb cannot exhaust memory)."""
    with gzip.GzipFile(fileobj=io.BytesIO(body)) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise TooLarge
    return data


def encode_reply(message: Any, status: int, as_json: bool, headers: dict[str, str] | None = None) -> Reply:
    if as_json:
        body = json_format.MessageToJson(message, indent=None).encode()
        return Reply(status, body, "application/json", headers or {})
    return Reply(status, message.SerializeToString(), "application/x-protobuf", headers or {})


def error_reply(status: int, message: str, as_json: bool, *, retry_after: bool = False) -> Reply:
    grpc_code = _GRPC_CODES.get(status, GrpcCode.UNKNOWN)
    return encode_reply(
        Status(code=grpc_code, message=message), status, as_json, {"Retry-After": "1"} if retry_after else None
    )
