"""Online evaluation's judge requests as traces of their own (opt-in: ``judge_traces`` in ``online.toml``): one
``chat`` span per request to the judge model, sent over OTLP/HTTP to the endpoint named, under a service (and
project) of its own, ``toolpath-judge``: each span is a trace's root, never a child of the agent's spans, so the
judge's calls never mix into the agent's sessions. A span names the model, the evaluator and its version, the
tokens the model reported, and how the request ended (``error.type`` when it did not end with an answer); it
holds no prompt nor reply (what the agent said stays where its own redaction put it)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from toolpath.judges.client import JudgeCall, JudgeOutcome
from toolpath.tracer import semconv as sc

__all__ = ["JUDGE_SERVICE", "JudgeTracer"]

JUDGE_SERVICE = "toolpath-judge"
"""The service (and project) the judge's traces are kept under."""
_PROJECT = "openinference.project.name"
"""Where Phoenix reads a trace's project from."""


class JudgeTracer:
    """Sends each judge request as a span to ``endpoint`` (``http://host:4318``)."""

    def __init__(self, endpoint: str) -> None:
        resource = Resource.create({sc.SERVICE_NAME: JUDGE_SERVICE, _PROJECT: JUDGE_SERVICE})
        self.provider = TracerProvider(resource=resource)  # its own: never the application's global one
        exporter = OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
        self.tracer = self.provider.get_tracer("toolpath.judge")

    def record(self, evaluator: str, version: str, calls: Sequence[JudgeCall]) -> None:
        """One span per request of ``calls``, made by ``evaluator`` at ``version``."""
        for call in calls:
            if call.outcome is JudgeOutcome.CACHED:
                continue  # no request was made
            start = call.ended_ns - int(call.seconds * 1e9)
            attributes: dict[str, str | int] = {
                sc.GEN_AI_OPERATION_NAME: "chat",
                sc.GEN_AI_REQUEST_MODEL: call.model,
                sc.GEN_AI_USAGE_INPUT_TOKENS: call.input_tokens,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: call.output_tokens,
                sc.GEN_AI_EVALUATION_EVALUATOR_NAME: evaluator,
                sc.GEN_AI_EVALUATION_EVALUATOR_VERSION: version,
            }
            if call.outcome is not JudgeOutcome.OK:
                attributes[sc.ERROR_TYPE] = str(call.outcome)
            span = self.tracer.start_span(
                f"chat {call.model}", kind=SpanKind.CLIENT, attributes=attributes, start_time=start
            )
            if call.outcome is not JudgeOutcome.OK:
                span.set_status(Status(StatusCode.ERROR, f"judge request {call.outcome}"))
            span.end(end_time=call.ended_ns)

    def flush(self, timeout_seconds: float = 10.0) -> bool:
        return self.provider.force_flush(int(timeout_seconds * 1000))

    def shutdown(self) -> None:
        self.provider.shutdown()
