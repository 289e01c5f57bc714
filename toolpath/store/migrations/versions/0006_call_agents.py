"""which agent made each call and answered each turn

A multi-agent run (an ADK transfer or ``AgentTool``, a LangGraph supervisor's sub-agents, an OpenInference AGENT
span) was stored as if its root agent had made every call and given every answer. ``tool_calls.agent_name`` names
the agent that made the call, ``invocations.answered_by`` the one that gave the final response; both are null in
rows stored before (unknown, not the root agent).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, column in (("tool_calls", "agent_name"), ("invocations", "answered_by")):
        # a store made before migrations existed may have it already (create_all of today's tables)
        if column not in {c["name"] for c in inspector.get_columns(table)}:
            with op.batch_alter_table(table) as batch_op:
                batch_op.add_column(sa.Column(column, sa.String(length=256), nullable=True))


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN in place (SQLite ≥ 3.35): a batch copy of invocations would break the foreign keys
    # of the rows that name it
    op.execute("ALTER TABLE invocations DROP COLUMN answered_by")
    op.execute("ALTER TABLE tool_calls DROP COLUMN agent_name")
