"""Options and checks the commands share: ``--store``, which recorded sessions, thresholds, writable paths."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolpath.config import STORE_ENV, TOKEN_ENV
from toolpath.errors import ConfigError
from toolpath.store.engine import resolve_store_url
from toolpath.store.sqlite_access import url_file

if TYPE_CHECKING:  # SQLAlchemy loads with the store, when a command opens one: `sessions list` reads without it
    from toolpath.store.store import Store

SERVED_JUDGE_IN_FLIGHT, SERVED_JUDGE_CALLS, SERVED_JUDGE_TOKENS = 32, 600, 1_000_000
"""The judge budget of a serving command (``collect``, ``ui``, ``mcp``) unless its options say otherwise: calls in
flight, calls per minute, tokens per minute."""

store_option = click.option(
    "--store",
    envvar=STORE_ENV,
    default=None,
    help=f"Database URL (default: ${STORE_ENV} or sqlite:///toolpath.db).",
)


def token_option(help: str) -> Any:
    """``--token`` (or $TOOLPATH_TOKEN): an empty one, as an unset shell variable gives, is an error, never
    a server without a credential."""

    def nonempty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise click.BadParameter("empty (an unset variable?); give a token, or leave the option out")
        return value

    return click.option("--token", envvar=TOKEN_ENV, default=None, callback=nonempty, help=help)


def judge_budget_options(fn: Any) -> Any:
    """--judge-in-flight / --judge-calls-per-minute / --judge-tokens-per-minute: the judge budget of a command that
    serves requests (every source of judge calls in the process together: docs/collector.md)."""
    fn = click.option(
        "--judge-tokens-per-minute",
        type=click.IntRange(min=1),
        default=SERVED_JUDGE_TOKENS,
        show_default=True,
        help="Judge tokens (in + out) per minute; once spent, requests get 429 with Retry-After.",
    )(fn)
    fn = click.option(
        "--judge-calls-per-minute",
        type=click.IntRange(min=1),
        default=SERVED_JUDGE_CALLS,
        show_default=True,
        help="Judge model calls per minute; more get 429 with Retry-After (online scoring: a result saying so).",
    )(fn)
    return click.option(
        "--judge-in-flight",
        type=click.IntRange(min=1),
        default=SERVED_JUDGE_IN_FLIGHT,
        show_default=True,
        help="Judge model calls in flight at once; more wait for a place.",
    )(fn)


def set_judge_budget(in_flight: int, calls_per_minute: int, tokens_per_minute: int, *, processes: int = 1) -> None:
    """This process's judge budget, its share of the command's when ``processes`` serve together."""
    from toolpath.judges.process_budget import BudgetLimits, process_budget

    limits = BudgetLimits(in_flight, calls_per_minute, tokens_per_minute)
    process_budget().configure(limits.divided(processes) if processes > 1 else limits)


class IsoTime(click.ParamType):
    """A time as ISO 8601 gives it, wherever a command takes one: a date (``2026-11-01``), a date and time
    (``2026-11-01T09:30``, ``2026-11-01 09:30:00``), with ``Z`` or an offset (``+02:00``) — the form ``sessions list
    --json`` prints. Without a zone it is UTC."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            when = value
        else:
            try:
                when = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(
                    f"{value!r} is not an ISO 8601 date or time (2026-11-01, 2026-11-01T09:30, 2026-11-01T09:30:00Z, "
                    "2026-11-01T09:30:00+02:00)",
                    param,
                    ctx,
                )
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def selection_options(fn: Any) -> Any:
    """--session / --since / --agent-name / --limit: which recorded sessions a command works on."""
    fn = click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many sessions.")(fn)
    fn = click.option("--agent-name", default=None, help="Only sessions of this agent.")(fn)
    fn = click.option(
        "--since", type=IsoTime(), default=None, help="Only sessions active since then (e.g. 2026-11-01, UTC)."
    )(fn)
    return click.option("--session", "session_ids", multiple=True, help="A recorded session id (repeatable).")(fn)


def select_sessions(
    store: Store, session_ids: tuple[str, ...], since: Any, agent_name: str | None, limit: int | None
) -> list[Any]:
    """The recorded sessions the selection options pick; none is an error."""
    from datetime import UTC

    from toolpath.evaluation.recorded import recorded_sessions

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
        if not math.isfinite(out[name.strip()]):  # -1e309 is -inf: a gate that can never fail
            raise ConfigError(f"--threshold {item!r}: expected a finite number, got {out[name.strip()]}")
    return out


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


def existing_store_url(url: str | None) -> str:
    """The store URL ``url`` resolves to (``--store``, ``$TOOLPATH_STORE`` or the default); a SQLite file that
    does not exist is a :class:`ConfigError`, never a new empty store."""
    resolved = resolve_store_url(url)
    database = url_file(resolved)
    if database is not None and not os.path.exists(database):
        if not os.path.isabs(database) and not _working_directory_exists():
            raise ConfigError(f"store {database}: a relative path, and the working directory no longer exists")
        raise ConfigError(f"store {database} does not exist (run `toolpath demo`, or set --store / ${STORE_ENV})")
    return resolved


def _working_directory_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def open_existing_store(url: str | None, *, create: bool = True, writing: str | None = None) -> Store:
    """The store at ``url``, which must exist; ``writing``: what the command writes to it (a read-only store is then
    an error before any work: :meth:`~toolpath.store.store.Store.require_writable`)."""
    from toolpath.store.store import Store

    return Store(existing_store_url(url), create=create, writing=writing)
