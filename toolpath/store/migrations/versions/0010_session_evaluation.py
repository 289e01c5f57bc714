"""session evaluation: whole sessions scored once they go quiet, their results by revision; judge spend by evaluator

An online evaluator whose target is ``session`` keeps one job per session in ``session_jobs``: due
``idle_seconds`` after the session's latest turn was stored (``due_at``), reopened with ``revision`` one higher
when a turn arrives after it was scored. ``session_results`` keeps each revision's scores: a newer revision's
scores supersede the older ones (``superseded_at``), which stay. ``judge_spend`` counts, per evaluator, clock
hour, judge model and outcome, the calls online scoring made and their tokens and time.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("session_jobs"):
        return  # a store made before migrations existed (create_all of today's tables)
    op.create_table(
        "session_jobs",
        sa.Column("session_id", sa.String(length=256), nullable=False),
        sa.Column("evaluator", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=16), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("due_at", sa.BigInteger(), nullable=False),
        sa.Column("enqueued_at", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("claimed_at", sa.BigInteger(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("session_id", "evaluator", name="session_jobs_pkey"),
    )
    op.create_index("ix_session_jobs_status", "session_jobs", ["status", "due_at"], unique=False)
    op.create_table(
        "session_results",
        sa.Column("session_id", sa.String(length=256), nullable=False),
        sa.Column("evaluator", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=256), nullable=False),
        sa.Column("evaluator_version", sa.String(length=64), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("label", sa.String(length=32), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("last_invocation_id", sa.String(length=64), nullable=True),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("superseded_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("session_id", "evaluator", "revision", "metric", name="session_results_pkey"),
    )
    op.create_index("ix_session_results_created", "session_results", ["created_at"], unique=False)
    op.create_table(
        "judge_spend",
        sa.Column("evaluator", sa.String(length=64), nullable=False),
        sa.Column("hour_start", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("evaluator", "hour_start", "model", "outcome", name="judge_spend_pkey"),
    )


def downgrade() -> None:
    op.drop_table("judge_spend")
    op.drop_table("session_results")
    op.drop_table("session_jobs")
