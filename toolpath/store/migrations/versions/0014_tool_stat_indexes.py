"""the Tools page's indexes: each call's latency by tool and agent, failed calls, the model calls' usage

Three indexes of :mod:`toolpath.store.stat_indexes`: ``tool_calls`` by tool, agent and latency (the latency an
expression of the call's start and end), the failed calls by tool, agent and start, and the spans that name a
usage key by their model, tokens and cost (expressions of the attributes). The database fills them from the rows
stored (the backfill) and keeps them as rows are written: ingest writes nothing more.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

from toolpath.store import stat_indexes

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    stat_indexes.create(op.get_bind())


def downgrade() -> None:
    stat_indexes.drop(op.get_bind())
