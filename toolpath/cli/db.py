"""``toolpath db``: the store's schema migrations."""

from __future__ import annotations

import click

from toolpath.cli.common import open_existing_store, store_option
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
    click.echo(f"{the_store.url}: schema at revision {current or 'none'} (newest: {migrate.HEAD})")
