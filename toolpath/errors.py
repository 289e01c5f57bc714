"""Exceptions raised by toolpath, in two trees that never mix.

User errors — something the user can fix; the CLI prints the message as one ``error:`` line and exits 2:

    ToolpathError
    ├── ConfigError(ValueError)   bad arguments to init(), an unknown store URL, a bad --agent spec
    ├── DatasetError(ValueError)  a dataset file, line or field that cannot be read
    └── MetricError(ValueError)   an unknown metric name or bad metric parameters

Internal signals — one part of toolpath telling another what happened; each is caught where it is meant to be
and never reaches the user as such (one that escapes is a bug, and shows as one, with its traceback):

    InternalSignal
    ├── metrics.base.MissingInput            a row a metric cannot score: score null with the reason
    ├── collector.otlp.OtlpDecodeError       a body that is not OTLP: a 400 reply
    ├── collector.otlp_values.Undecodable    one span's value that cannot be decoded: that span is rejected
    ├── collector.ingestor.Busy              too many exports in flight: a 503, the exporter retries
    ├── collector.otlp_replies.TooLarge      a gzip body past the limit: a 413
    ├── judges.parse.JudgeParseError         a judge reply that cannot be read: that sample's error
    ├── judges.client.TransientError         a judge request worth retrying
    └── evalsets.simulation.SimulatorError   the user simulator gave no message: the case's error

Telemetry paths (the tracer, the collector's worker) never raise either kind into the agent: they log and count.
"""

__all__ = ["ConfigError", "DatasetError", "InternalSignal", "MetricError", "ToolpathError"]


class ToolpathError(Exception):
    """Base class of toolpath's own errors."""


class ConfigError(ToolpathError, ValueError):
    """A configuration mistake."""


class DatasetError(ToolpathError, ValueError):
    """A dataset that cannot be read; the message names the file, line and field."""


class MetricError(ToolpathError, ValueError):
    """An unknown metric or bad metric parameters."""


class InternalSignal(Exception):
    """Base class of the signals toolpath's parts raise for each other (never a user error)."""
