"""The collector's OTLP/gRPC front end: ``TraceService/Export`` served by grpcio, each request handed to the
:class:`~toolpath.collector.ingestor.Ingestor` as the HTTP front end hands its own; and the unary methods its
command adds (:class:`~toolpath.collector.routes.GrpcMethod`), behind the same token and message size limit."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent import futures
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from toolpath.collector import otlp
from toolpath.collector.genai_logs import LOGS_SERVICE, decode_logs, logs_reply
from toolpath.collector.ingestor import Busy, Ingestor
from toolpath.collector.routes import ROUTE_THREADS, GrpcMethod, RpcError
from toolpath.errors import ConfigError
from toolpath.store.spool import SpoolFull

logger = logging.getLogger("toolpath.collector.ingestor")
TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


def make_grpc_server(ingestor: Ingestor, host: str, port: int, methods: Sequence[GrpcMethod] = ()) -> Any:
    import grpc

    def export(body: bytes, context: Any) -> ExportTraceServiceResponse:
        started = time.perf_counter()
        try:
            reply = _export(body, context)
        except BaseException:  # context.abort raises, with the code set
            code = context.code() if hasattr(context, "code") else None
            ingestor.metrics.request("grpc", getattr(code, "name", "UNKNOWN"), started)
            raise
        ingestor.metrics.request("grpc", "OK", started)
        return reply

    def _export(body: bytes, context: Any) -> ExportTraceServiceResponse:
        """``TraceService/Export``, its request read here (not by gRPC) so that one span protobuf cannot decode
        is left out alone, as over HTTP."""
        metadata = dict(context.invocation_metadata())
        if not ingestor.authorized(metadata.get("authorization")):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            with ingestor.admitted():
                return _decode_and_store(body, context)
        except Busy as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        raise AssertionError("unreachable: abort raises")

    def _decode_and_store(body: bytes, context: Any) -> ExportTraceServiceResponse:
        rejected: list[str] = []
        try:
            records = otlp.decode(body, "application/x-protobuf", rejected)
        except otlp.OtlpDecodeError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, ingestor.said(str(exc)))
        if rejected and not records:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, ingestor.said(rejected[0]))
        try:
            left = ingestor.store_records(records)
        except SpoolFull as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except Exception:
            logger.exception("toolpath: storing %d span(s) failed", len(records))
            context.abort(grpc.StatusCode.UNAVAILABLE, "the store is unavailable")
        return ingestor.outcome(rejected, left)

    server = grpc.server(  # the extra methods' threads come on top of Export's, which they never take
        futures.ThreadPoolExecutor(
            max_workers=4 + (ROUTE_THREADS if methods else 0), thread_name_prefix="toolpath-grpc"
        ),
        options=[("grpc.max_receive_message_length", ingestor.max_body_bytes)],
    )
    handler: Any = grpc.unary_unary_rpc_method_handler(
        export, request_deserializer=None, response_serializer=ExportTraceServiceResponse.SerializeToString
    )  # no deserializer: the raw body
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": handler}),))
    logs: Any = grpc.unary_unary_rpc_method_handler(
        _logs_export(ingestor),
        request_deserializer=None,
        response_serializer=ExportLogsServiceResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": logs}),))
    services: dict[str, dict[str, Any]] = defaultdict(dict)
    slots = threading.BoundedSemaphore(ROUTE_THREADS)
    for method in methods:
        services[method.service][method.method] = grpc.unary_unary_rpc_method_handler(
            _served(method, ingestor, slots), request_deserializer=None, response_serializer=None
        )  # bytes in, bytes out: the method reads and writes its own messages
    for service, handlers in services.items():
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    bound = server.add_insecure_port(f"{host}:{port}")
    if not bound:
        raise ConfigError(f"cannot bind gRPC on {host}:{port}")
    return server


def _logs_export(ingestor: Ingestor) -> Any:
    """``LogsService/Export``: the GenAI events among the logs, stored as ``/v1/logs`` stores them."""
    import grpc

    def export(body: bytes, context: Any) -> ExportLogsServiceResponse:
        started = time.perf_counter()
        metadata = dict(context.invocation_metadata())
        if not ingestor.authorized(metadata.get("authorization")):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            with ingestor.admitted():
                try:
                    decoded = decode_logs(body, "application/x-protobuf")
                except otlp.OtlpDecodeError as exc:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, ingestor.said(str(exc)))
                try:
                    left = ingestor.store_records(decoded.records)
                except SpoolFull as exc:
                    context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
                except Exception:
                    logger.exception("toolpath: storing %d GenAI event(s) failed", len(decoded.records))
                    context.abort(grpc.StatusCode.UNAVAILABLE, "the store is unavailable")
        except Busy as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        ingestor.metrics.request("grpc", "OK", started)
        return logs_reply(decoded, left, ingestor.said)

    return export


def _served(method: GrpcMethod, ingestor: Ingestor, slots: threading.BoundedSemaphore) -> Any:
    """``method`` behind the token, on one of ``slots`` (all taken: UNAVAILABLE, which clients retry, so that the
    extra methods never take Export's threads); an :class:`RpcError` is its status, any other failure INTERNAL
    (logged)."""
    import grpc

    def serve(body: bytes, context: Any) -> bytes:
        metadata = dict(context.invocation_metadata())
        if not ingestor.authorized(metadata.get("authorization")):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        if not slots.acquire(blocking=False):
            context.abort(grpc.StatusCode.UNAVAILABLE, f"{ROUTE_THREADS} requests of this kind in flight; retry")
        try:
            return method.call(body)
        except RpcError as exc:
            code = getattr(grpc.StatusCode, exc.code, grpc.StatusCode.UNKNOWN)
            context.abort(code, exc.message)
        except Exception:
            logger.exception("toolpath: /%s/%s failed", method.service, method.method)
            context.abort(grpc.StatusCode.INTERNAL, "internal error (logged by the server)")
        finally:
            slots.release()
        raise AssertionError("unreachable: abort raises")

    return serve
