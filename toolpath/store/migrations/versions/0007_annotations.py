"""annotations: a reviewer's label, score and comment on a stored turn, with its author and time

The human-review loop of the UI: a turn is labelled pass or fail, given a score, or commented on, by a named
reviewer; each annotation is a row of its own (a turn keeps every review, the newest last). ``invocation_id`` is
not a foreign key, so pruning a turn never waits on its reviews.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("annotations"):
        return  # a store made before migrations existed (create_all of today's tables)
    op.create_table(
        "annotations",
        sa.Column("annotation_id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("author", sa.String(length=256), nullable=False),
        sa.Column("label", sa.String(length=16), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("annotation_id"),
    )
    op.create_index("ix_annotations_invocation", "annotations", ["invocation_id", "created_at"])
    op.create_index("ix_annotations_label", "annotations", ["label", "invocation_id"])


def downgrade() -> None:
    op.drop_index("ix_annotations_label", table_name="annotations")
    op.drop_index("ix_annotations_invocation", table_name="annotations")
    op.drop_table("annotations")
