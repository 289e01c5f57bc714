"""What the commands print: the console, tables or JSON, progress bars, the line that names a run.

The console prints what it is given as it is given: never read as rich's markup (``[red]``, ``[link=…]``) or
emoji codes (``:smile:``). Session ids, prompts, tool names and arguments, answers, error messages, metric and
file names reach the terminal as stored, whichever command prints them and however they are put together. Our
own styling (``FAILED`` in red) comes as rich ``Text`` made by :func:`styled`, never as markup in a string."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.style import StyleType
from rich.text import Text

from toolpath.cli import json_as_ascii


def make_console() -> Console:
    """The commands' console: strings printed as they are (no markup, no emoji codes); see the module's doc."""
    return Console(markup=False, emoji=False)


console = make_console()


def styled(*parts: str | tuple[str, StyleType]) -> Text:
    """One printed line or cell of ``parts``: a string is shown as it is, a ``(text, style)`` pair as it is in
    that style (``styled(("FAILED", "red"), f" {name}")``); nothing in either is read as markup."""
    return Text.assemble(*parts)


class Bar:
    """A progress bar's handle: ``advance()`` one step; ``phase(description, total)`` starts the next phase
    (again from zero) unless it is the phase already shown."""

    def __init__(self, progress: Any = None, task: Any = None, description: str = "") -> None:
        self._progress, self._task, self._description = progress, task, description

    def advance(self, *_: Any) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def phase(self, description: str, total: int) -> None:
        if self._progress is not None and description != self._description:
            self._description = description
            self._progress.reset(self._task, total=total, description=description)


@contextlib.contextmanager
def progress(total: int, description: str, quiet: bool) -> Iterator[Bar]:
    """A rich progress bar with rate and ETA (nothing with --quiet, or when the output is not a terminal);
    yields its :class:`Bar`."""
    if quiet or not console.is_terminal:
        yield Bar()
        return
    # rich's progress bars load here, with the commands that show one (their import is a tenth of a listing's run)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
    )

    class RateColumn(ProgressColumn):
        """Steps per second, readable: ``12.3/s`` (``0.25/s`` when slow)."""

        def render(self, task: Task) -> Text:
            return Text(format_rate(task.speed), style="progress.data.speed")

    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), RateColumn())
    with Progress(*columns, TimeRemainingColumn(), console=console, transient=True) as bar:
        yield Bar(bar, bar.add_task(description, total=total), description)


def format_rate(per_second: float | None) -> str:
    if not per_second:
        return ""
    return f"{per_second:.1f}/s" if per_second >= 1 else f"{per_second:.2f}/s"


def print_run_line(result: Any, output: Path | None, *, stored: bool = True) -> None:
    usage = result.judge_usage
    if usage:
        console.print(
            f"judge: {usage['requests']} request(s), {usage['cached']} from the cache, {usage['retries']} retried, "
            f"{usage['errors']} failed, {usage['over_budget']} over budget; "
            f"{usage['input_tokens']} input and {usage['output_tokens']} output token(s)"
        )
    written = f"results written to {output}" if output else ""
    if stored:
        console.print(f"run {result.run_id}" + (f": {written}" if written else ""))
    else:  # no run id to print: nothing could show it later
        console.print((f"{written}; " if written else "") + "not stored (give --store to keep this run)")


def emit(rows: Any, as_json: bool, render: Any) -> None:
    """Print ``rows`` as JSON, or as the table ``render`` makes of them."""
    if as_json:
        click.echo(json.dumps(rows, indent=2, ensure_ascii=json_as_ascii(), default=str))
    else:
        console.print(render(rows))
