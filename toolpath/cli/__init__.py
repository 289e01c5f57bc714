"""The ``toolpath`` command: one module per command group; commands stay thin (they parse options and call the
library).

Every :class:`ToolpathError` (missing file, bad JSON line, unknown metric, bad store URL) and every usage error
(an unknown option, a value out of range) is printed as one ``error:`` line and exits 2, without a traceback; an
output file that could not be written whole (a full disk, a file-size limit: :class:`~toolpath.errors.OutputError`)
is one such line too, and exits 1. A write past the file-size limit fails with ``EFBIG`` rather than ending the
process (``SIGXFSZ`` is ignored while a command runs), so it is reported and nothing half-written is left.

With a console encoding that cannot write every character (``PYTHONIOENCODING=ascii``, a legacy code page), a
command still prints all it has: text goes out with Python's escapes for the characters the encoding lacks
(``\\u2014`` for an em dash) rather than stopping at the first one, and JSON is printed as ASCII, whose ``\\uXXXX``
escapes read back as the same strings (an escape of Python's would not be JSON).
"""

from __future__ import annotations

import codecs
import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

import click

from toolpath.errors import Interrupted, ToolpathError

COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module of toolpath.cli, its command object, the command's short help as `toolpath --help` lists it)
    "demo": ("demo_command", "demo", "Run the bundled smart-home agent over 24 cases and score its trajectories."),
    "eval": ("eval_command", "eval_command",
             "Score a JSONL/CSV/JSON dataset with metrics, or run ADK eval sets against an agent."),
    "metrics": ("metrics_command", "metrics_command", "List every metric: the columns it reads, its range, which way "
                "is better, its default pass mark, and for a judge metric whose judge scores it (adk: ADK's own "
                "prompts and reading, from the installed google-adk; toolpath: toolpath's prompts)."),
    "collect": ("collect", "collect",
                "Receive OTLP traces from agents in other processes and store their invocations."),
    "ingest": ("ingest_command", "ingest_command", "Store trace files: OTLP/JSON lines (the OpenTelemetry Collector's "
               "file exporter), an OTLP/JSON or protobuf export, or Jaeger's JSON, through the collector's decoding, "
               "redaction and reconstruction."),
    "runs": ("runs", "runs", "Evaluation runs saved in the store."),
    "report": ("runs", "report", "Write one self-contained HTML report of an evaluation run or a replay (the latest "
               "one by default)."),
    "sessions": ("sessions", "sessions", "Browse what the store holds."),
    "watch": (
        "sessions",
        "watch",
        "Live tables of the turns and the sessions the online evaluators score, and each evaluator's judge spend "
        "(Ctrl-C to stop).",
    ),
    "replay": ("replay_command", "replay", "Re-run recorded sessions against an agent and show what changed."),
    "export": ("replay_command", "export_command", "Turn recorded sessions into an ADK eval set, Vertex-style JSONL "
               "or Google's agent_data JSONL, to run with `toolpath eval`."),
    "db": ("db", "db", "The store's schema (Alembic migrations; opening a store also upgrades it)."),
    "ui": ("ui_command", "ui_command", "Browse sessions and trajectories, turn sessions into eval cases, run and "
           "compare evaluations."),
    "mcp": ("mcp_command", "mcp_command", "Serve the store to MCP clients (coding assistants): list and search "
            "sessions, show trajectories, score a session or an eval set; read-only unless --allow-write."),
}  # fmt: skip
"""Every command, loaded when it runs (or its help is asked for): a command's module and what it imports cost
nothing to the others, and ``toolpath --help`` lists them from here (a test checks the help against each
command's own)."""


class _Commands(dict[str, click.Command]):
    """The group's commands by name, each imported from its module the first time it is looked up."""

    def __missing__(self, name: str) -> click.Command:
        module, attribute, _ = COMMANDS[name]
        command: click.Command = getattr(importlib.import_module(f"toolpath.cli.{module}"), attribute)
        self[name] = command
        return command

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*COMMANDS, *dict.keys(self)}))

    def __len__(self) -> int:
        return len({*COMMANDS, *dict.keys(self)})

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def keys(self) -> Any:
        return list(self)

    def values(self) -> Any:
        return [self[name] for name in self]

    def items(self) -> Any:
        return [(name, self[name]) for name in self]


class _LazyGroup(click.Group):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``, from :data:`COMMANDS` for the commands not loaded."""
        names = list(self.commands)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            if dict.__contains__(self.commands, name):
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
            else:
                rows.append((name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="toolpath")
def cli() -> None:
    """Trace the tool calls of LLM agents, store them, and score them."""


def main(argv: list[str] | None = None) -> None:
    global _terminated
    _terminated = False
    escape_what_cannot_print()  # PYTHONIOENCODING=ascii: escapes for what it lacks, never a UnicodeEncodeError
    previous = _handle_sigterm()
    file_size = _ignore_file_size_signal()
    try:
        code = cli.main(args=argv, prog_name="toolpath", standalone_mode=False)
        if _terminated:  # a command that ends on an interrupt by itself (watch): still a SIGTERM's exit
            click.echo("terminated", err=True)
            _exit_within(TERMINATED_GRACE_SECONDS)
            sys.exit(TERMINATED)
        if isinstance(code, int) and code:  # an Exit raised inside a command comes back as a return value
            sys.exit(code)
    except ToolpathError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        signal.signal(signal.SIGINT, _stop_at_once)  # writing what was traced now: a second Ctrl-C ends that
        if previous is not None:
            signal.signal(signal.SIGTERM, _stop_at_once)
        code = TERMINATED if _terminated else INTERRUPTED
        said = "terminated" if _terminated else "interrupted"
        if _terminated:  # threads a command left (a server's stdin reader, a call in flight) never hold it up
            _exit_within(TERMINATED_GRACE_SECONDS)
        cause = exc.__cause__
        click.echo(
            f"{said}: {cause}" if isinstance(cause, Interrupted) else said if _terminated else "aborted", err=True
        )
        _shutdown_tracing()
        if isinstance(cause, Interrupted) and cause.unfinished:
            sys.stdout.flush()
            os._exit(code)  # agent runs still going in threads would hold the interpreter's exit
        sys.exit(code)
    except click.UsageError as exc:  # a bad option or argument is bad input too: one line, the help to read
        command = exc.ctx.command_path if exc.ctx is not None else "toolpath"
        click.echo(f"error: {exc.format_message()} (see '{command} --help')", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    finally:
        _shutdown_tracing()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if file_size is not None:
            signal.signal(signal.SIGXFSZ, file_size)


INTERRUPTED, TERMINATED = 130, 143
"""Exit codes after Ctrl-C and after SIGTERM (128 + the signal's number, as a shell reports them)."""
TERMINATED_GRACE_SECONDS = 5.0
"""How long a terminated command's exit may wait for threads it leaves behind before the process ends anyway."""


def _exit_within(seconds: float) -> None:
    """End the process with :data:`TERMINATED` after ``seconds`` if it has not ended by then: SIGTERM's exit runs
    the usual cleanup (tracing written, stores closed), but a thread blocked on a read (an MCP server's stdin) or
    on a judge's reply would otherwise keep the process alive long after it said it stopped."""

    def end() -> None:
        time.sleep(seconds)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(TERMINATED)

    threading.Thread(target=end, name="toolpath-exit", daemon=True).start()


_terminated = False


def _handle_sigterm() -> Any:
    """SIGTERM (what ``timeout``, CI runners, Kubernetes and systemd send) handled as the first Ctrl-C: the command
    finishes what it can, keeps what ran and says so, then exits 143; a second SIGTERM stops at once. The handler it
    replaces, to put back (``None`` off the main thread, where none can be set). A command that serves (``collect``)
    installs its own."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminated(*_: object) -> None:
        global _terminated
        _terminated = True
        raise KeyboardInterrupt  # where Ctrl-C would land: the same finishing, on the main thread

    return signal.signal(signal.SIGTERM, terminated)


_ANY_TEXT = "\u2014\u00e9\u4e2d\U0001f600"
"""Characters from across Unicode: an encoding that writes these writes anything."""


def writes_all(stream: IO[Any] | None) -> bool:
    """``stream`` encodes every character (UTF-8, UTF-16…), or says no encoding (it takes text as it is)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        codecs.encode(_ANY_TEXT, encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def escape_what_cannot_print() -> None:
    """Standard output and error print escapes for the characters their encoding lacks, rather than fail."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not writes_all(stream):
            reconfigure(errors="backslashreplace")


def json_as_ascii(stream: IO[Any] | None = None) -> bool:
    """Whether JSON printed to ``stream`` (standard output by default) must be ASCII: its encoding lacks some
    characters."""
    return not writes_all(sys.stdout if stream is None else stream)


def _ignore_file_size_signal() -> Any:
    """``SIGXFSZ`` ignored (a write past ``RLIMIT_FSIZE`` then fails with ``EFBIG``, which is reported, instead of
    killing the process with its temporary files left behind); the handler it replaces, to put back (``None`` off
    the main thread, or where there is no such signal)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGXFSZ"):
        return None
    return signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _shutdown_tracing() -> None:
    """``toolpath.shutdown()`` when a command started tracing (nothing to do, nor to import, otherwise)."""
    tracing = sys.modules.get("toolpath.tracing")
    if tracing is not None:
        tracing.shutdown()


def _stop_at_once(signum: int, _: object = None) -> None:
    """A second Ctrl-C (or SIGTERM): stop now; what the store committed stays."""
    said = b"terminated" if signum == signal.SIGTERM else b"interrupted"
    os.write(2, said + b" again: stopped at once; what was already stored is kept\n")
    os._exit(TERMINATED if signum == signal.SIGTERM else INTERRUPTED)


if __name__ == "__main__":
    main()
