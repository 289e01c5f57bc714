"""online evaluation: job claims and results

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_jobs",
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("enqueued_at", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("claimed_at", sa.BigInteger(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("invocation_id"),
    )
    op.create_index("ix_eval_jobs_status", "eval_jobs", ["status", "enqueued_at"], unique=False)
    op.create_table(
        "online_results",
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("metric", sa.String(length=256), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("label", sa.String(length=32), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("invocation_id", "metric"),
    )
    op.create_index("ix_online_results_created", "online_results", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_online_results_created", table_name="online_results")
    op.drop_table("online_results")
    op.drop_index("ix_eval_jobs_status", table_name="eval_jobs")
    op.drop_table("eval_jobs")
