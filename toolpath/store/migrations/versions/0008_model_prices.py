"""model prices: the price table the UI prices token counts with, per model, set by the user

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("model_prices"):
        return  # a store made before migrations existed (create_all of today's tables)
    op.create_table(
        "model_prices",
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("input_per_million", sa.Float(), nullable=False),
        sa.Column("output_per_million", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("model"),
    )


def downgrade() -> None:
    op.drop_table("model_prices")
