"""How far the store the UI reads (``toolpath ui --read-store``, a streaming replica) is behind the primary, as
its pages' header says it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from toolpath.store.store import Store

logger = logging.getLogger("toolpath.ui")

# A replica that has replayed all it received is not behind, however long ago the primary last committed (an idle
# primary sends nothing: the age of the last replayed transaction would grow without any lag).
_LAG_SQL = text(
    "SELECT pg_is_in_recovery(), CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 "
    "ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END"
)


@dataclass(frozen=True)
class ReplicaStatus:
    """What the header shows of the read store: ``text`` (``replica 0.3 s behind``), ``stale`` when it is behind
    by more than a few seconds or could not be asked."""

    text: str
    stale: bool


STALE_SECONDS = 5.0


def lag_seconds(store: Store) -> float | None:
    """Seconds the PostgreSQL replica ``store`` is behind its primary (0: it has replayed all it received);
    ``None`` when it is not in recovery (a promoted replica, a primary, or not PostgreSQL)."""
    if store.engine.dialect.name != "postgresql":
        return None
    with store.engine.connect() as conn:
        row = conn.execute(_LAG_SQL).one()
    in_recovery, lag = row
    if not in_recovery:
        return None
    return max(0.0, float(lag)) if lag is not None else 0.0


def replica_status(store: Store) -> ReplicaStatus:
    """The header's line about the read store ``store``."""
    try:
        lag = lag_seconds(store)
    except DBAPIError as exc:
        logger.warning("toolpath ui: the read store's lag is unknown: %s", type(exc.orig or exc).__name__)
        return ReplicaStatus("replica: lag unknown (unreachable)", True)
    if lag is None:
        return ReplicaStatus("reading a separate store (not a replica in recovery)", False)
    return ReplicaStatus(f"replica {lag:.1f} s behind", lag > STALE_SECONDS)
