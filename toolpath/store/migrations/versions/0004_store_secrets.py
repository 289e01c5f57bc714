"""store secrets: the key of the pseudonyms of redacted identifiers, generated at random in the store

Revision ID: 0004 (toolpath.store.migrate.STORE_SECRETS_REVISION)
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

from toolpath.store.migrate import STORE_SECRETS_REVISION

revision = STORE_SECRETS_REVISION
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "store_secrets",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.bulk_insert(table, [{"name": "pseudonym", "value": secrets.token_hex(32)}])


def downgrade() -> None:
    op.drop_table("store_secrets")
