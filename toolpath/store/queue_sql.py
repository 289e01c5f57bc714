"""The SQL of the online job queue's claims and closes, built once for a queue (on SQLite run by the driver itself:
:mod:`toolpath.store.sqlite_driver`)."""

from __future__ import annotations

import functools

__all__ = ["claim_sql", "close_held_sql"]

_CLOSE_HELD = (  # SQLite: the jobs a worker holds, closed
    "UPDATE {table} SET status = ?, reason = ?, finished_at = ? WHERE status = ? AND claimed_by = ? "
    "AND ({key}, evaluator) IN (VALUES {keys}) RETURNING {key}, evaluator"
)


@functools.lru_cache(maxsize=64)
def close_held_sql(table: str, key: str, jobs: int) -> str:
    """SQLite: the statement closing ``jobs`` jobs a worker holds (status, reason, finished_at, the claimed status
    and the worker, then each job's key and evaluator), returning the key and evaluator of those closed."""
    return _CLOSE_HELD.format(table=table, key=key, keys=", ".join(["(?, ?)"] * jobs))


def claim_sql(table: str, key: str, which: str, order: str, names: str, *, postgres: bool) -> str:
    """The claim of the jobs ``which`` selects among the evaluators ``names`` (``:names``, expanding, or a list of
    parameters), the least ``order`` first, up to ``:limit``, returning their key, evaluator and attempts."""
    keys = f"{key}, evaluator"
    row, rows = (f"({keys})", keys) if postgres else ("rowid", "rowid")  # SQLite: rowid, each row's own integer key
    skip_locked = " FOR UPDATE SKIP LOCKED" if postgres else ""
    return (
        f"UPDATE {table} SET status = :claimed, claimed_by = :worker, claimed_at = :now, attempts = attempts + 1 "
        f"WHERE {row} IN (SELECT {rows} FROM {table} WHERE {which} AND evaluator IN {names} "
        f"ORDER BY {order} LIMIT :limit{skip_locked}) RETURNING {key}, evaluator, attempts"
    )
