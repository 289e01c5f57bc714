"""turn text: each turn's searchable text in one indexed row (toolpath.store.turn_text)

On SQLite an FTS5 table with the trigram tokenizer, on PostgreSQL a table with a ``pg_trgm`` GIN index (the
extension is created if missing: it is trusted, so the database's owner may). The turns already stored are
indexed in batches of 2,000, in this migration's transaction.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

from toolpath.store import turn_text

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    turn_text.create(bind)
    turn_text.backfill(bind)


def downgrade() -> None:
    turn_text.drop(op.get_bind())
