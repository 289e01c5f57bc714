"""Online results of single turns written to ``online_results``: a batch's rows in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

__all__ = ["insert"]

_COLUMNS = "invocation_id, evaluator, evaluator_version, metric, score, label, explanation, worker, created_at"
_INSERT = (  # plain tuples through the driver's executemany: no per-row SQLAlchemy processing
    f"INSERT INTO online_results ({_COLUMNS}) VALUES ({{marks}})"
)
_INSERT_PG = (  # one statement, one array per column: one round trip for the batch
    f"INSERT INTO online_results ({_COLUMNS}) "
    "SELECT * FROM unnest(CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS text[]), "
    "CAST(%s AS double precision[]), CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS text[]), "
    "CAST(%s AS bigint[]))"
)


def insert(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write ``rows``, each the values of the columns above in their order."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(_INSERT_PG, tuple(list(c) for c in zip(*rows, strict=True)))
    else:
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        conn.exec_driver_sql(_INSERT.format(marks=", ".join([mark] * 9)), rows)
