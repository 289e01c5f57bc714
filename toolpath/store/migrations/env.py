"""Alembic environment for the store: run by :mod:`toolpath.store.migrate` on the store's own connection."""

from __future__ import annotations

from alembic import context

from toolpath.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
