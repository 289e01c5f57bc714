"""The scripted ADK home agent run once, its spans and GenAI log events recorded by the OpenTelemetry SDK as ADK
emits them: ``python -m tests.helpers.adk_log_events FOLDER`` writes ``traces.pb`` and ``logs.pb`` (each an OTLP
export request, encoded by the SDK's own OTLP encoders) and, with ``OTLP_ENDPOINT`` set, also exports both with the
SDK's OTLP/HTTP exporters there (with ``OTLP_GRPC_ENDPOINT``, ``host:port``, its OTLP gRPC exporters). ADK's content capture comes from the environment (``ADK_CAPTURE_MESSAGE_CONTENT_IN_
SPANS``, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``): a process of its own, since the SDK's providers are
set once per process."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


def main(folder: Path) -> None:
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    endpoint = os.environ.get("OTLP_ENDPOINT")
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        headers = {"Authorization": f"Bearer {os.environ['OTLP_TOKEN']}"}
        tracer_provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces", headers=headers))
        )
        logger_provider.add_log_record_processor(
            SimpleLogRecordProcessor(OTLPLogExporter(f"{endpoint}/v1/logs", headers=headers))
        )
    grpc_endpoint = os.environ.get("OTLP_GRPC_ENDPOINT")
    if grpc_endpoint:
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        metadata = {"authorization": f"Bearer {os.environ['OTLP_TOKEN']}"}
        tracer_provider.add_span_processor(
            SimpleSpanProcessor(GrpcSpanExporter(grpc_endpoint, insecure=True, headers=metadata))
        )
        logger_provider.add_log_record_processor(
            SimpleLogRecordProcessor(GrpcLogExporter(grpc_endpoint, insecure=True, headers=metadata))
        )
    trace.set_tracer_provider(tracer_provider)
    _logs.set_logger_provider(logger_provider)

    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from tests.helpers.adk_agent import STATUS, build_home_agent

    async def run() -> None:
        runner = InMemoryRunner(agent=build_home_agent(), app_name="home_app")
        session = await runner.session_service.create_session(app_name="home_app", user_id="ana")
        message = types.Content(role="user", parts=[types.Part(text=STATUS)])
        async for _ in runner.run_async(user_id="ana", session_id=session.id, new_message=message):
            pass

    asyncio.run(run())
    tracer_provider.force_flush()
    logger_provider.force_flush()
    (folder / "traces.pb").write_bytes(encode_spans(spans.get_finished_spans()).SerializeToString())
    (folder / "logs.pb").write_bytes(encode_logs(logs.get_finished_logs()).SerializeToString())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
