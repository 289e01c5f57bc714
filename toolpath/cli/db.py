"""``toolpath db``: the store's schema migrations."""

from __future__ import annotations

import click

from toolpath.cli.options import open_existing_store, store_option
from toolpath.store.store import Store


@click.group()
def db() -> None:
    """The store's schema (Alembic migrations; opening a store also upgrades it)."""


@db.command(name="upgrade")
@store_option
@click.option("--revision", default="head", show_default=True, help="Alembic revision to upgrade to.")
def db_upgrade(store: str | None, revision: str) -> None:
    """Create the store's tables, or bring them to the newest schema."""
    from toolpath.store import migrate

    migrate.check_revision(revision)  # before the store is opened: a typo creates no file
    the_store = Store(store, create=False)
    reached = the_store.upgrade(revision)
    click.echo(f"{the_store.url}: schema at revision {reached} (newest: {migrate.HEAD})")


@db.command(name="current")
@store_option
def db_current(store: str | None) -> None:
    """Print the store's schema revision."""
    from toolpath.store import migrate

    the_store = open_existing_store(store, create=False)
    with the_store.opening_errors(), the_store.engine.connect() as conn:
        current = migrate.current_revision(conn)
    newer = current is not None and current not in migrate.known_revisions()
    said = f"newest this toolpath knows: {migrate.HEAD}; made by a newer toolpath" if newer else None
    said = said or f"newest: {migrate.HEAD}"
    click.echo(f"{the_store.url}: schema at revision {current or 'none'} ({said})")


@db.command(name="prune")
@store_option
@click.option("--older-than", required=True, help="Age past which records go: a number and s, m, h, d or w (30d).")
@click.option("--spans-only", is_flag=True, help="Only raw spans; invocations, their tool calls and scores stay.")
@click.option("--dry-run", is_flag=True, help="Count what would go; delete nothing.")
@click.option(
    "--exact",
    is_flag=True,
    help="Spans partitioned by day (PostgreSQL): also delete, by batches, the spans older than the cutoff in the "
    "day it falls inside (by default they wait for their day to go whole: up to a day more). SQLite, or spans in "
    "one table: retention is exact already and this changes nothing.",
)
@click.option(
    "--batch-size",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows per transaction (short transactions never hold a running collector up for long).",
)
def db_prune(store: str | None, older_than: str, spans_only: bool, dry_run: bool, exact: bool, batch_size: int) -> None:
    """Delete spans (whole traces, once their newest span is that old) and invocations older than an age, with
    their tool calls, online jobs and scores, and the sessions they leave empty. Evaluation runs stay."""
    from toolpath.store import partitions
    from toolpath.store.retention import parse_duration, prune

    age = parse_duration(older_than, "--older-than")  # before the store is opened: a typo creates no file
    writing = None if dry_run else "toolpath db prune deletes from it"
    the_store = open_existing_store(store, create=False, writing=writing)
    with the_store.opening_errors():
        the_store.upgrade()
        counts = prune(
            the_store,
            spans_older_than=age,
            invocations_older_than=None if spans_only else age,
            dry_run=dry_run,
            batch_size=batch_size,
            pause=0.0 if dry_run else 0.01,
            exact=exact,
        )
        with the_store.engine.connect() as conn:
            partitioned = partitions.is_partitioned(conn)
    said = f"{the_store.url}: {'would prune' if dry_run else 'pruned'} {counts} older than {older_than}"
    if exact:  # said either way: never a flag that silently does nothing
        said += (
            " (--exact: to the cutoff, inside its day's partition too)"
            if partitioned
            else " (--exact: spans are one table here, retention is exact without it)"
        )
    click.echo(said)


@db.command(name="partitions")
@store_option
@click.option(
    "--ahead", default=7, show_default=True, type=click.IntRange(0, 1000), help="Periods to make after the current one."
)
@click.option("--period", default=None, help="Width of the partitions made from now on (1d, 1w); else the store's.")
def db_partitions(store: str | None, ahead: int, period: str | None) -> None:
    """On PostgreSQL, make the spans' time partitions of the current period and the next ones (a collector's
    retention rounds make them too), then list them."""
    import time
    from datetime import UTC, datetime

    from toolpath.errors import ConfigError
    from toolpath.store import partitions
    from toolpath.store.retention import parse_duration

    width = None
    if period is not None:  # before the store is opened: a typo creates no file
        seconds = parse_duration(period, "--period")
        if seconds < 3600 or seconds != int(seconds):
            raise ConfigError(f"--period {period!r}: at least an hour, in whole seconds (e.g. 1d, 1w)")
        width = int(seconds) * 10**9
    the_store = open_existing_store(store, create=False, writing="toolpath db partitions makes partitions in it")
    with the_store.opening_errors():
        the_store.upgrade()
        with the_store.engine.begin() as conn:
            made = partitions.ensure_partitions(conn, time.time_ns(), ahead=ahead, period_ns=width)
            found = partitions.list_partitions(conn)
    if not found:
        click.echo(f"{the_store.url}: spans are one table (partitions by time are PostgreSQL's)")
        return

    def shown(ns: int | None, unbounded: str) -> str:
        return unbounded if ns is None else datetime.fromtimestamp(ns / 10**9, UTC).strftime("%Y-%m-%d %H:%M")

    click.echo(f"{the_store.url}: {len(found)} partition(s) of spans, {len(made)} made now")
    for p in found:
        where = "any other time" if p.default else f"{shown(p.lower, 'the oldest')} to {shown(p.upper, '')} UTC"
        click.echo(f"  {p.name}: {where}{' (new)' if p.name in made else ''}")
