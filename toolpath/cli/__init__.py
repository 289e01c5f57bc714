"""The ``toolpath`` command: one module per command group; commands stay thin (they parse options and call the
library).

Every :class:`ToolpathError` (missing file, bad JSON line, unknown metric, bad store URL) and every usage error
(an unknown option, a value out of range) is printed as one ``error:`` line and exits 2, without a traceback.
"""

from __future__ import annotations

import os
import signal
import sys

import click

from toolpath import tracing
from toolpath.cli import (
    collect,
    db,
    demo_command,
    eval_command,
    ingest_command,
    mcp_command,
    metrics_command,
    replay_command,
    runs,
    sessions,
    ui_command,
)
from toolpath.errors import Interrupted, ToolpathError


@click.group()
@click.version_option(package_name="toolpath")
def cli() -> None:
    """Trace the tool calls of LLM agents, store them, and score them."""


for _command in (
    demo_command.demo,
    eval_command.eval_command,
    metrics_command.metrics_command,
    collect.collect,
    ingest_command.ingest_command,
    runs.runs,
    runs.report,
    sessions.sessions,
    sessions.watch,
    replay_command.replay,
    replay_command.export_command,
    db.db,
    ui_command.ui_command,
    mcp_command.mcp_command,
):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="toolpath", standalone_mode=False)
        if isinstance(code, int) and code:  # an Exit raised inside a command comes back as a return value
            sys.exit(code)
    except ToolpathError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort as exc:
        signal.signal(signal.SIGINT, _stop_at_once)  # writing what was traced now: a second Ctrl-C ends that
        cause = exc.__cause__
        click.echo(f"interrupted: {cause}" if isinstance(cause, Interrupted) else "aborted", err=True)
        tracing.shutdown()
        if isinstance(cause, Interrupted) and cause.unfinished:
            sys.stdout.flush()
            os._exit(130)  # agent runs still going in threads would hold the interpreter's exit
        sys.exit(130)
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
        tracing.shutdown()


def _stop_at_once(*_: object) -> None:
    """A second Ctrl-C: stop now; what the store committed stays."""
    os.write(2, b"interrupted again: stopped at once; what was already stored is kept\n")
    os._exit(130)


if __name__ == "__main__":
    main()
