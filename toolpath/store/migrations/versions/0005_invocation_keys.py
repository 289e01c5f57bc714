"""invocations keyed by trace and span id; spans found by parent

An invocation rebuilt from spans was keyed by its agent span's id alone, so a second trace reusing that span id
overwrote it. Its id becomes ``{trace_id}-{span_id}`` (:func:`toolpath.model.invocation_key`), in the invocation
and in every row that names it; invocations that were not rebuilt from a stored span keep their id. The index on
(trace_id, parent_span_id) lets the collector rebuild only the runs new spans touch.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from toolpath.store.migrate import STORE_SECRETS_REVISION

revision = "0005"
down_revision = STORE_SECRETS_REVISION
branch_labels = None
depends_on = None

_COLUMNS = (
    "session_id, trace_id, agent_name, prompt, response, intermediate_responses, latency_seconds, failure, error, "
    "started_at, attributes"
)
_REFERRING = ("tool_calls", "eval_jobs", "online_results", "eval_results")
_KEYED = "i.trace_id || '-' || i.invocation_id"


def upgrade() -> None:
    # a store made before migrations existed may have it already (create_all of today's tables)
    if "ix_spans_parent" not in {index["name"] for index in sa.inspect(op.get_bind()).get_indexes("spans")}:
        with op.batch_alter_table("spans") as batch_op:
            batch_op.create_index("ix_spans_parent", ["trace_id", "parent_span_id"], unique=False)
    # the invocations rebuilt from a stored agent span: their id is that span's id
    old = (
        "SELECT i.invocation_id FROM invocations i "
        "JOIN spans s ON s.trace_id = i.trace_id AND s.span_id = i.invocation_id"
    )
    _rekey(old, _KEYED)


def downgrade() -> None:
    keyed = (
        "SELECT i.invocation_id FROM invocations i WHERE i.trace_id <> '' "
        "AND i.invocation_id = i.trace_id || '-' || substr(i.invocation_id, length(i.trace_id) + 2)"
    )
    _rekey(keyed, "substr(i.invocation_id, length(i.trace_id) + 2)")
    with op.batch_alter_table("spans") as batch_op:
        batch_op.drop_index("ix_spans_parent")


def _rekey(selected: str, new_id: str) -> None:
    """Give the invocations ``selected`` (a query of their ids) the id ``new_id`` (an expression over ``i``): a
    copy under the new id first, then the rows naming them, then the old rows (foreign keys hold throughout)."""
    conn = op.get_bind()
    conn.execute(sa.text(
        f"CREATE TEMPORARY TABLE toolpath_rekey AS SELECT i.invocation_id AS old_id, {new_id} AS new_id "
        f"FROM invocations i WHERE i.invocation_id IN ({selected})"
    ))  # fmt: skip
    conn.execute(sa.text(
        f"INSERT INTO invocations (invocation_id, {_COLUMNS}) SELECT r.new_id, {_COLUMNS} "
        "FROM invocations JOIN toolpath_rekey r ON r.old_id = invocations.invocation_id"
    ))  # fmt: skip
    for table in _REFERRING:
        conn.execute(sa.text(
            f"UPDATE {table} SET invocation_id = (SELECT r.new_id FROM toolpath_rekey r "
            f"WHERE r.old_id = {table}.invocation_id) WHERE invocation_id IN (SELECT old_id FROM toolpath_rekey)"
        ))  # fmt: skip
    conn.execute(sa.text("DELETE FROM invocations WHERE invocation_id IN (SELECT old_id FROM toolpath_rekey)"))
    conn.execute(sa.text("DROP TABLE toolpath_rekey"))
