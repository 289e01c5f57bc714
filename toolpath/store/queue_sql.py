"""The SQL of the online job queue's claims and closes, built once for a queue, and on SQLite run by the driver
itself (:func:`driver_rows`): a worker claims and closes batch after batch, and SQLAlchemy's run of a statement (its
execution context, its result's columns, a row object a row) cost as much as the statement does on a batch of 64."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

__all__ = ["claim_sql", "close_held_sql", "driver_rows"]

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


def driver_rows(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    """SQLite: ``sql`` run by the driver, its rows the driver's tuples. A statement that fails is undone alone while
    its transaction goes on: it is then run again through SQLAlchemy, which raises its failure as any statement's
    (the engine's error handlers see it). One whose failure undid the transaction's earlier statements too is not:
    its failure is raised as SQLAlchemy's error for the driver's."""
    driver = conn.connection.driver_connection
    assert driver is not None  # an open connection
    began = driver.in_transaction
    try:
        return list(driver.execute(sql, params).fetchall())
    except sqlite3.Error as exc:
        if began and not driver.in_transaction:
            raise DBAPIError.instance(sql, params, exc, sqlite3.Error, dialect=conn.dialect) from exc
        return list(conn.exec_driver_sql(sql, params).all())
