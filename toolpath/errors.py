"""Exceptions raised by toolpath, in two trees that never mix.

User errors — something the user can fix; the CLI prints the message as one ``error:`` line and exits 2:

    ToolpathError
    ├── ConfigError(ValueError)   bad arguments to init(), an unknown store URL, a bad --agent spec
    ├── DatasetError(ValueError)  a dataset file, line or field that cannot be read
    ├── MetricError(ValueError)   an unknown metric name or bad metric parameters
    └── OutputError(OSError)      a file that could not be written whole (a full disk, a file-size limit): a
                                  failure of the run rather than of its input, so the CLI exits 1

Internal signals — one part of toolpath telling another what happened; each is caught where it is meant to be
and never reaches the user as such (one that escapes is a bug, and shows as one, with its traceback):

    InternalSignal
    ├── metrics.base.MissingInput            a row a metric cannot score: score null with the reason
    ├── collector.otlp.OtlpDecodeError       a body that is not OTLP: a 400 reply
    ├── collector.otlp_values.Undecodable    one span's value that cannot be decoded: that span is rejected
    ├── collector.ingestor.Busy              too many exports in flight: a 503, the exporter retries
    ├── collector.otlp_replies.TooLarge      a gzip body past the limit: a 413
    ├── judges.parse.JudgeParseError         a judge reply that cannot be read: that sample's error
    ├── judges.messages.TransientError       a judge request worth retrying
    └── evalsets.simulation.SimulatorError   the user simulator gave no message: the case's error

``Interrupted`` (a ``KeyboardInterrupt``) is neither: Ctrl-C stopped a batch of agent runs, and it says what was
kept; the CLI prints it and exits 130.

Telemetry paths (the tracer, the collector's worker) never raise either kind into the agent: they log and count.
"""

__all__ = [
    "ConfigError",
    "DatasetError",
    "InternalSignal",
    "Interrupted",
    "MetricError",
    "OutputError",
    "ToolpathError",
]


class ToolpathError(Exception):
    """Base class of toolpath's own errors."""

    exit_code = 2
    """The CLI's exit code for it: 2, bad input (1 for a failure of the run itself)."""


class ConfigError(ToolpathError, ValueError):
    """A configuration mistake."""


class DatasetError(ToolpathError, ValueError):
    """A dataset that cannot be read; the message names the file, line and field."""


class MetricError(ToolpathError, ValueError):
    """An unknown metric or bad metric parameters."""


class OutputError(ToolpathError, OSError):
    """A file that could not be written whole (no space left, a file-size limit, an I/O error); what the path held
    before is left as it was. Its ``errno`` is the system's."""

    exit_code = 1


class InternalSignal(Exception):
    """Base class of the signals toolpath's parts raise for each other (never a user error)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a batch of agent runs part-way: no new run was started, the traces of the finished ones were
    written, and the runs still going were waited for a bounded time. A ``KeyboardInterrupt``, so code that stops
    on Ctrl-C still stops; it says what was kept."""

    def __init__(self, finished: int, total: int, unfinished: int) -> None:
        super().__init__(finished, total, unfinished)
        self.finished, self.total, self.unfinished = finished, total, unfinished

    def __str__(self) -> str:
        never = self.total - self.finished - self.unfinished
        return (
            f"{self.finished} of {self.total} agent runs finished (their traces are stored); "
            f"{self.unfinished} still running were left, {never} never started"
        )
