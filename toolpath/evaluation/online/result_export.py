"""Online scores out over OTLP: a ``gen_ai.evaluation.result`` event per score, parented to the evaluated agent
span (its trace and span ids) and naming the evaluator, its version and its target kind, and two OTel metrics
labelled by metric, agent and evaluator:

- ``gen_ai.evaluation.score`` (histogram of the scores),
- ``gen_ai.evaluation.results`` (counter; ``gen_ai.evaluation.score.label`` is a
  :class:`~toolpath.store.job_status.ResultLabel`: ``pass``, ``fail``, ``error`` or ``scored``).

The standard OTLP/HTTP exporters are used, so ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``…_HEADERS`` and the per-signal
variants apply; an explicit endpoint (``http://host:4318``) overrides them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from toolpath.evaluation.online.selection import TargetKind
from toolpath.store.job_status import ResultLabel
from toolpath.tracer import semconv as sc

EVENT_NAME = "gen_ai.evaluation.result"
JUDGE_CALLS = "toolpath.judge.calls"
"""Requests the judge made for a result (cache hits apart: ``toolpath.judge.cached``)."""
JUDGE_CACHED = "toolpath.judge.cached"
JUDGE_SECONDS = "toolpath.judge.seconds"
"""The time those requests took, added up."""
SCORE_HISTOGRAM = "gen_ai.evaluation.score"
RESULT_COUNTER = "gen_ai.evaluation.results"


class ResultExporter:
    def __init__(
        self, endpoint: str | None = None, *, service_name: str = "toolpath-online", interval_seconds: float = 5.0
    ) -> None:
        base = endpoint.rstrip("/") if endpoint else None
        resource = Resource.create({"service.name": service_name})
        metric_exporter = OTLPMetricExporter(endpoint=f"{base}/v1/metrics") if base else OTLPMetricExporter()
        self._reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=interval_seconds * 1000)
        self.meters = MeterProvider(metric_readers=[self._reader], resource=resource)
        meter = self.meters.get_meter("toolpath.online")
        self.histogram = meter.create_histogram(SCORE_HISTOGRAM, unit="1", description="Online evaluation scores")
        self.counter = meter.create_counter(RESULT_COUNTER, description="Online evaluation results by pass/fail")
        self.logs = LoggerProvider(resource=resource)
        log_exporter = OTLPLogExporter(endpoint=f"{base}/v1/logs") if base else OTLPLogExporter()
        self.logs.add_log_record_processor(BatchLogRecordProcessor(log_exporter, schedule_delay_millis=500))
        self.logger = self.logs.get_logger("toolpath.online")

    def record(
        self,
        *,
        trace_id: str | None,
        span_id: str,
        agent_name: str | None,
        metric: str,
        score: float | None,
        label: ResultLabel,
        explanation: str | None,
        evaluator: str = "default",
        evaluator_version: str = "1",
        target: TargetKind = TargetKind.TURN,
        judge_usage: Mapping[str, Any] | None = None,
    ) -> None:
        """One result; ``judge_usage``: what the judge spent on it (its requests' model, count, tokens and time),
        carried as ``gen_ai.usage.*`` and ``toolpath.judge.*`` attributes."""
        labels = {
            sc.GEN_AI_EVALUATION_NAME: metric,
            sc.GEN_AI_AGENT_NAME: agent_name or "unknown",
            sc.GEN_AI_EVALUATION_EVALUATOR_NAME: evaluator,
        }
        if score is not None:
            self.histogram.record(score, labels)
        self.counter.add(1, {**labels, sc.GEN_AI_EVALUATION_SCORE_LABEL: label})
        attributes: dict[str, Any] = {
            sc.GEN_AI_EVALUATION_NAME: metric,
            sc.GEN_AI_EVALUATION_SCORE_LABEL: label,
            sc.GEN_AI_EVALUATION_EVALUATOR_NAME: evaluator,
            sc.GEN_AI_EVALUATION_EVALUATOR_VERSION: evaluator_version,
            sc.GEN_AI_EVALUATION_TARGET: str(target),
        }
        if score is not None:
            attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] = float(score)
        if explanation:
            attributes[sc.GEN_AI_EVALUATION_EXPLANATION] = explanation
        if agent_name:
            attributes[sc.GEN_AI_AGENT_NAME] = agent_name
        if judge_usage:
            attributes |= _usage_attributes(judge_usage)
        context = None
        if trace_id:
            parent = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
            context = trace.set_span_in_context(NonRecordingSpan(parent))
        self.logger.emit(event_name=EVENT_NAME, context=context, attributes=attributes)

    def flush(self) -> None:
        self.logs.force_flush()
        self.meters.force_flush()

    def shutdown(self) -> None:
        self.flush()
        self.logs.shutdown()
        self.meters.shutdown()


def _usage_attributes(usage: Mapping[str, Any]) -> dict[str, Any]:
    """A result's judge usage as attributes: the usage conventions' names for the model and tokens, ours for the
    rest."""
    out: dict[str, Any] = {
        sc.GEN_AI_USAGE_INPUT_TOKENS: int(usage.get("input_tokens") or 0),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: int(usage.get("output_tokens") or 0),
        JUDGE_CALLS: int(usage.get("calls") or 0),
        JUDGE_CACHED: int(usage.get("cached") or 0),
        JUDGE_SECONDS: float(usage.get("seconds") or 0.0),
    }
    if usage.get("model"):
        out[sc.GEN_AI_REQUEST_MODEL] = str(usage["model"])
    return out
