"""online evaluators: jobs and results per evaluator, skipped jobs' reasons, each evaluator's hourly use

An online.toml may declare several evaluators, each scoring the turns its own filters and sample admit. A job is
one evaluator's on one invocation (``eval_jobs`` keyed by both), a result names the evaluator and the version
that scored it (``online_results`` keyed by invocation, evaluator and metric), and a job skipped by its
evaluator's limits says why (``reason``). ``online_usage`` counts, per evaluator and clock hour, the targets it
took and the judge tokens it spent, which every process on the store reads before scoring more. Rows stored
before belong to the one evaluator a flat online.toml declares: ``default``, version ``1``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

FLAT = ("default", "1")
"""The name and version of a flat online.toml's evaluator: what the rows stored before were scored by."""
_JOB_COLUMNS = "invocation_id, status, enqueued_at, claimed_by, claimed_at, attempts, finished_at"
_RESULT_COLUMNS = "invocation_id, metric, score, label, explanation, worker, created_at"


def _jobs_table(name: str, *, evaluators: bool) -> None:
    keyed = ("invocation_id", "evaluator") if evaluators else ("invocation_id",)
    op.create_table(
        name,
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        *([sa.Column("evaluator", sa.String(length=64), nullable=False)] if evaluators else []),
        sa.Column("status", sa.String(length=16), nullable=False),
        *([sa.Column("reason", sa.String(length=16), nullable=True)] if evaluators else []),
        sa.Column("enqueued_at", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("claimed_at", sa.BigInteger(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint(*keyed, name=f"{name}_pkey"),
    )


def _results_table(name: str, *, evaluators: bool) -> None:
    keyed = ("invocation_id", "evaluator", "metric") if evaluators else ("invocation_id", "metric")
    op.create_table(
        name,
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        *([sa.Column("evaluator", sa.String(length=64), nullable=False)] if evaluators else []),
        *([sa.Column("evaluator_version", sa.String(length=64), nullable=False)] if evaluators else []),
        sa.Column("metric", sa.String(length=256), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("label", sa.String(length=32), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*keyed, name=f"{name}_pkey"),
    )


def _swap(table: str, copy: str) -> None:
    """Fill ``{table}_next`` by ``copy``, then put it in the place of ``table``."""
    op.execute(copy)
    op.drop_table(table)  # with its indexes
    op.rename_table(f"{table}_next", table)
    if op.get_bind().dialect.name == "postgresql":  # a renamed table keeps its constraint's name: its own again
        op.execute(f"ALTER TABLE {table} RENAME CONSTRAINT {table}_next_pkey TO {table}_pkey")


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if "evaluator" in {c["name"] for c in inspector.get_columns("eval_jobs")}:
        return  # a store made before migrations existed (create_all of today's tables)
    name, version = FLAT
    _jobs_table("eval_jobs_next", evaluators=True)
    _swap(
        "eval_jobs",
        f"INSERT INTO eval_jobs_next ({_JOB_COLUMNS}, evaluator) SELECT {_JOB_COLUMNS}, '{name}' FROM eval_jobs",
    )
    op.create_index("ix_eval_jobs_status", "eval_jobs", ["status", "enqueued_at"], unique=False)
    _results_table("online_results_next", evaluators=True)
    _swap(
        "online_results",
        f"INSERT INTO online_results_next ({_RESULT_COLUMNS}, evaluator, evaluator_version) "
        f"SELECT {_RESULT_COLUMNS}, '{name}', '{version}' FROM online_results",
    )
    op.create_index("ix_online_results_created", "online_results", ["created_at"], unique=False)
    op.create_table(
        "online_usage",
        sa.Column("evaluator", sa.String(length=64), nullable=False),
        sa.Column("hour_start", sa.BigInteger(), nullable=False),
        sa.Column("targets", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("evaluator", "hour_start"),
    )


def downgrade() -> None:
    """Back to one job and one result per invocation (and metric): of several evaluators' rows, the first
    evaluator's by name is kept."""
    op.drop_table("online_usage")
    _jobs_table("eval_jobs_next", evaluators=False)
    _swap(
        "eval_jobs",
        f"INSERT INTO eval_jobs_next ({_JOB_COLUMNS}) SELECT {_JOB_COLUMNS} FROM eval_jobs j WHERE j.evaluator = "
        "(SELECT min(o.evaluator) FROM eval_jobs o WHERE o.invocation_id = j.invocation_id)",
    )
    op.create_index("ix_eval_jobs_status", "eval_jobs", ["status", "enqueued_at"], unique=False)
    _results_table("online_results_next", evaluators=False)
    _swap(
        "online_results",
        f"INSERT INTO online_results_next ({_RESULT_COLUMNS}) SELECT {_RESULT_COLUMNS} FROM online_results r "
        "WHERE r.evaluator = (SELECT min(o.evaluator) FROM online_results o "
        "WHERE o.invocation_id = r.invocation_id AND o.metric = r.metric)",
    )
    op.create_index("ix_online_results_created", "online_results", ["created_at"], unique=False)
