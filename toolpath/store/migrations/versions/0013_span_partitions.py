"""span partitions: on PostgreSQL, ``spans`` partitioned by range of start time (toolpath.store.partitions)

The plain table becomes the partition ``spans_before`` (every time up to the end of the current day), attached in
place: no row is copied and no index rebuilt; attaching reads the table once, and writers wait for that read.
Its spans of later days (a clock ahead) move to their days' partitions, made with the next seven days' and the
default one. SQLite: nothing changes. Going back copies every span into one plain table again (offline).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07
"""

from __future__ import annotations

import time

from alembic import op

from toolpath.store import partitions

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    partitions.partition_spans(op.get_bind(), time.time_ns())


def downgrade() -> None:
    partitions.unpartition_spans(op.get_bind())
