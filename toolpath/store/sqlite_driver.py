"""Statements run by SQLite's driver itself inside a SQLAlchemy connection's transaction: where a worker runs the
same few statements batch after batch (online scoring's claims, closes and reads), SQLAlchemy's run of each (its
execution context, its result's columns, a row object a row) costs as much as the statement does.

A statement that fails is not run again: its failure may have come after its changes (a ``RETURNING`` row read
after every row was written), or after the lock's whole busy wait. It is raised as SQLAlchemy raises the driver's
error for any statement — except a write refused because the store is read-only, which changed nothing and waited
for nothing: that one is run through SQLAlchemy, whose handler says why the store is read-only
(:mod:`toolpath.store.engine`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from toolpath.store.sqlite_access import SQLITE_READONLY

__all__ = ["driver_rows"]


def driver_rows(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    """``sql`` run on ``conn``'s SQLite connection by the driver, in its transaction; its rows, the driver's
    tuples."""
    driver = conn.connection.driver_connection
    assert driver is not None  # an open connection
    try:
        return list(driver.execute(sql, params).fetchall())
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF == SQLITE_READONLY:
            return list(conn.exec_driver_sql(sql, params).all())  # raises the store's read-only error
        raise DBAPIError.instance(sql, params, exc, sqlite3.Error, dialect=conn.dialect) from exc
