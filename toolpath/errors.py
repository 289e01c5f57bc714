"""Exceptions raised by toolpath: every exception toolpath raises on purpose derives from ToolpathError.

    ToolpathError            base of everything below; the CLI prints its message and exits 2
    ├── ConfigError(ValueError)   bad arguments to init(), an unknown store URL, a bad --agent spec
    ├── DatasetError(ValueError)  a dataset file, line or field that cannot be read
    └── MetricError(ValueError)   an unknown metric name or bad metric parameters

Internal signals derive from ToolpathError too and never reach the user as such:
``evaluators.metrics.registry.MissingInput`` (a row a metric cannot score: score null with the reason),
``collector.otlp.OtlpDecodeError`` (a 400 reply), ``evaluators.judge.parse.JudgeParseError`` and
``evaluators.judge.client.TransientError`` (a sample's error, a retry).

Telemetry paths (the tracer, the collector's worker) never raise these into the agent: they log and count.
"""


class ToolpathError(Exception):
    """Base class of toolpath's own errors."""


class ConfigError(ToolpathError, ValueError):
    """A configuration mistake."""


class DatasetError(ToolpathError, ValueError):
    """A dataset that cannot be read; the message names the file, line and field."""


class MetricError(ToolpathError, ValueError):
    """An unknown metric or bad metric parameters."""
