"""``--read-store URL``: where a command's reads go (a streaming replica of ``--store``), its writes staying on
``--store``. The replica is opened as it is, never migrated: its schema comes from the primary's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from toolpath.errors import ConfigError

if TYPE_CHECKING:
    from toolpath.store.store import Store

OPTION = "--read-store"

read_store_option = click.option(
    OPTION,
    "read_store",
    default=None,
    metavar="URL",
    help="Read from this database (a streaming replica of --store); writes still go to --store.",
)


def open_read_store(url: str) -> Store:
    """The store at ``url`` for reads only: one :class:`ConfigError` naming ``--read-store`` when the URL is not a
    database URL, the database cannot be reached, or its schema is not this toolpath's (a replica of a primary
    not yet upgraded: ``toolpath db upgrade --store PRIMARY``)."""
    from toolpath.cli.options import existing_store_url
    from toolpath.store import migrate
    from toolpath.store.store import Store

    if not url.strip():
        raise ConfigError(f"{OPTION}: empty (an unset variable?); give a database URL, or leave the option out")
    try:
        store = Store(existing_store_url(url), create=False)  # a SQLite file that is not there: an error, not a new one
        with store.opening_errors(), store.engine.connect() as conn:
            revision = migrate.current_revision(conn)
    except ConfigError as exc:
        raise ConfigError(f"{OPTION}: {exc}") from None
    if revision != migrate.HEAD:
        at = f"at revision {revision}" if revision is not None else "without toolpath's schema"
        store.close()
        raise ConfigError(
            f"{OPTION} {store.url}: {at}, not {migrate.HEAD}: upgrade the primary (toolpath db upgrade --store URL) "
            "and let the replica catch up"
        )
    return store
