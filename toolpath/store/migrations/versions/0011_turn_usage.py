"""turn usage and users: each turn's model tokens, its reported cost per model, and its user, kept as it is written

``turn_usage`` holds, per turn, model and whether the calls reported their cost, the model calls below the turn's
agent span with their tokens and reported cost; ``invocations`` gains the turn's input and output tokens and its
user (``user.id`` or ``enduser.id`` of a span or its resource). The turns already stored are filled from their
spans, 2,000 turns a statement batch, in this migration's transaction.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from toolpath.store import turn_usage

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    if not inspector.has_table("turn_usage"):
        op.create_table(
            "turn_usage",
            sa.Column("invocation_id", sa.String(length=64), nullable=False),
            sa.Column("model", sa.String(length=256), nullable=False),
            sa.Column("reported", sa.Integer(), nullable=False),
            sa.Column("calls", sa.Integer(), nullable=False),
            sa.Column("input_tokens", sa.BigInteger(), nullable=False),
            sa.Column("output_tokens", sa.BigInteger(), nullable=False),
            sa.Column("cost", sa.Float(), nullable=True),
            sa.ForeignKeyConstraint(["invocation_id"], ["invocations.invocation_id"]),
            sa.PrimaryKeyConstraint("invocation_id", "model", "reported", name="turn_usage_pkey"),
        )
    columns = {c["name"] for c in inspector.get_columns("invocations")}
    if "user_id" not in columns:  # else a store made before migrations existed (create_all of today's tables)
        op.add_column("invocations", sa.Column("input_tokens", sa.BigInteger(), nullable=False, server_default="0"))
        op.add_column("invocations", sa.Column("output_tokens", sa.BigInteger(), nullable=False, server_default="0"))
        op.add_column("invocations", sa.Column("user_id", sa.String(length=256), nullable=True))
        op.create_index("ix_invocations_user", "invocations", ["user_id", "started_at"], unique=False)
    turn_usage.backfill(bind)


def downgrade() -> None:
    op.drop_table("turn_usage")
    op.drop_index("ix_invocations_user", table_name="invocations")
    # ALTER TABLE … DROP COLUMN in place (SQLite ≥ 3.35): a batch copy of invocations would break the foreign keys
    # of the rows that name it
    for column in ("user_id", "output_tokens", "input_tokens"):
        op.execute(f"ALTER TABLE invocations DROP COLUMN {column}")
