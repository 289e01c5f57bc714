"""What the commands share: the console, the ``--store`` option, stores, agents, progress bars, tables."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import ProgressColumn, Task
from rich.text import Text

from toolpath.errors import ConfigError
from toolpath.store.store import STORE_ENV, Store, resolve_store_url

console = Console()

store_option = click.option(
    "--store",
    envvar=STORE_ENV,
    default=None,
    help=f"Database URL (default: ${STORE_ENV} or sqlite:///toolpath.db).",
)


def selection_options(fn: Any) -> Any:
    """--session / --since / --agent-name / --limit: which recorded sessions a command works on."""
    fn = click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many sessions.")(fn)
    fn = click.option("--agent-name", default=None, help="Only sessions of this agent.")(fn)
    fn = click.option(
        "--since", type=click.DateTime(), default=None, help="Only sessions active since then (e.g. 2026-11-01)."
    )(fn)
    return click.option("--session", "session_ids", multiple=True, help="A recorded session id (repeatable).")(fn)


def select_sessions(
    store: Store, session_ids: tuple[str, ...], since: Any, agent_name: str | None, limit: int | None
) -> list[Any]:
    """The recorded sessions the selection options pick; none is an error."""
    from datetime import UTC

    from toolpath.evaluation.replay import recorded_sessions

    since_utc = since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since
    sessions = recorded_sessions(store, session_ids=session_ids, agent_name=agent_name, since=since_utc, limit=limit)
    if not sessions:
        raise ConfigError(f"no recorded sessions in {store.url} match the selection")
    return sessions


def parse_thresholds(items: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--threshold {item!r}: expected metric=number") from None
        if not eq or not name.strip():
            raise ConfigError(f"--threshold {item!r}: expected metric=number")
    return out


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn())
    with Progress(*columns, TimeRemainingColumn(), console=console, transient=True) as bar:
        yield Bar(bar, bar.add_task(description, total=total), description)


class RateColumn(ProgressColumn):
    """Steps per second, readable: ``12.3/s`` (``0.25/s`` when slow)."""

    def render(self, task: Task) -> Text:
        return Text(format_rate(task.speed), style="progress.data.speed")


def format_rate(per_second: float | None) -> str:
    if not per_second:
        return ""
    return f"{per_second:.1f}/s" if per_second >= 1 else f"{per_second:.2f}/s"


def writable(path: Path | None, option: str) -> Path | None:
    """``path`` if a file can be written there, checked before any work: a :class:`ConfigError` when it is a
    folder, its folder does not exist, or it may not be written."""
    if path is None:
        return None
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ConfigError(f"{option} {path}: not writable")
    return path


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
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
    else:
        console.print(render(rows))


def open_existing_store(url: str | None, *, create: bool = True) -> Store:
    resolved = resolve_store_url(url)
    if resolved.startswith("sqlite:///") and not resolved.endswith(":memory:"):
        path = Path(resolved.removeprefix("sqlite:///"))
        if not path.exists():
            raise ConfigError(f"store {path} does not exist (run `toolpath demo`, or set --store / ${STORE_ENV})")
    return Store(resolved, create=create)


def load_object(reference: str) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted), or a whole module or package (``my_agent``,
    ``my_agent.agent``, or the path of an agent folder, as ``adk eval`` takes it); the working directory is
    importable."""
    module_name, sep, attr = reference.partition(":")
    if sep and (not module_name or not attr):
        raise ConfigError(f"--agent {reference!r}: expected module:attribute, e.g. my_app.agent:answer")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    folder = Path(module_name)
    if not sep and ("/" in module_name or module_name.endswith(".py")) and folder.exists():
        folder = folder.resolve()
        if str(folder.parent) not in sys.path:
            sys.path.insert(0, str(folder.parent))
        module_name = folder.name.removesuffix(".py")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--agent {reference!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            raise ConfigError(f"--agent {reference!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def load_agent(reference: str) -> Any:
    """The :class:`~toolpath.evaluation.targets.Target` of ``--agent``: checked before anything is run or created,
    so an object toolpath cannot run is one error line."""
    from toolpath.evaluation.targets import resolve_target

    obj = load_object(reference)
    try:
        return resolve_target(obj)
    except ConfigError as exc:
        raise ConfigError(f"--agent {reference!r}: {exc}") from None
