"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_runs",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("dataset", sa.Text(), nullable=False),
        sa.Column("agent", sa.String(length=512), nullable=True),
        sa.Column(
            "metrics", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=False),
        sa.Column("row_count", sa.Integer(), nullable=False),
        sa.Column("failed_count", sa.Integer(), nullable=True),
        sa.Column(
            "summary", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.PrimaryKeyConstraint("run_id"),
    )
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.create_index("ix_eval_runs_started", ["started_at"], unique=False)

    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(length=256), nullable=False),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("first_started_at", sa.BigInteger(), nullable=False),
        sa.Column("last_started_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("session_id"),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index("ix_sessions_agent_name", ["agent_name"], unique=False)
        batch_op.create_index("ix_sessions_last_started_at", ["last_started_at"], unique=False)

    op.create_table(
        "spans",
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("parent_span_id", sa.String(length=16), nullable=True),
        sa.Column("name", sa.String(length=1024), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("start_time", sa.BigInteger(), nullable=False),
        sa.Column("end_time", sa.BigInteger(), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("status_message", sa.Text(), nullable=True),
        sa.Column(
            "attributes", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column(
            "events", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column(
            "resource", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("scope", sa.String(length=256), nullable=True),
        sa.PrimaryKeyConstraint("trace_id", "span_id"),
    )
    with op.batch_alter_table("spans", schema=None) as batch_op:
        batch_op.create_index("ix_spans_start", ["start_time"], unique=False)

    op.create_table(
        "eval_results",
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("case_id", sa.String(length=512), nullable=True),
        sa.Column("invocation_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=True),
        sa.Column(
            "scores", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("row", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["eval_runs.run_id"],
        ),
        sa.PrimaryKeyConstraint("run_id", "position"),
    )
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.create_index("ix_eval_results_invocation", ["invocation_id"], unique=False)

    op.create_table(
        "invocations",
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=256), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("agent_name", sa.String(length=256), nullable=True),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column(
            "intermediate_responses",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("latency_seconds", sa.Float(), nullable=True),
        sa.Column("failure", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column(
            "attributes", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
        ),
        sa.PrimaryKeyConstraint("invocation_id"),
    )
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.create_index("ix_invocations_agent_started", ["agent_name", "started_at"], unique=False)
        batch_op.create_index("ix_invocations_session", ["session_id", "started_at"], unique=False)
        batch_op.create_index("ix_invocations_started", ["started_at"], unique=False)
        batch_op.create_index("ix_invocations_trace", ["trace_id"], unique=False)

    op.create_table(
        "tool_calls",
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("args", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True),
        sa.Column(
            "result", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True
        ),
        sa.Column("call_id", sa.String(length=256), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("start_time", sa.BigInteger(), nullable=True),
        sa.Column("end_time", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["invocation_id"],
            ["invocations.invocation_id"],
        ),
        sa.PrimaryKeyConstraint("invocation_id", "position"),
    )
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.create_index("ix_tool_calls_name", ["name"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.drop_index("ix_tool_calls_name")

    op.drop_table("tool_calls")
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.drop_index("ix_invocations_trace")
        batch_op.drop_index("ix_invocations_started")
        batch_op.drop_index("ix_invocations_session")
        batch_op.drop_index("ix_invocations_agent_started")

    op.drop_table("invocations")
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.drop_index("ix_eval_results_invocation")

    op.drop_table("eval_results")
    with op.batch_alter_table("spans", schema=None) as batch_op:
        batch_op.drop_index("ix_spans_start")

    op.drop_table("spans")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_sessions_last_started_at")
        batch_op.drop_index("ix_sessions_agent_name")

    op.drop_table("sessions")
    with op.batch_alter_table("eval_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_eval_runs_started")

    op.drop_table("eval_runs")
