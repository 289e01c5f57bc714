"""A store read through its database driver alone (``sqlite3``, psycopg), without SQLAlchemy: for the commands
that only read the sessions list, whose whole run costs less than SQLAlchemy's import.

:func:`reading` opens a SQLite file or a ``postgresql+psycopg://`` URL with the driver, and reads on when the
schema is at :data:`toolpath.store.migrate.HEAD` (the one query opening a :class:`~toolpath.store.store.Store`
makes too). Anything else — an older or empty schema that needs migrating, another driver, an in-memory database,
a URL with options only SQLAlchemy reads — opens a ``Store`` as every other command does, and reads through its
engine: the same queries (:mod:`toolpath.store.session_list`), the same answers, the same errors.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from toolpath.errors import ConfigError
from toolpath.store.engine import display_url, hide_store_password, resolve_store_url, warn_if_store_shared
from toolpath.store.migrate import HEAD, revision
from toolpath.store.session_list import Reader
from toolpath.store.sqlite_access import cannot_open_hint, sqlite_file

_SQLITE = "sqlite:///"
_PSYCOPG = "postgresql+psycopg://"


@contextlib.contextmanager
def reading(url: str | None = None) -> Iterator[Reader]:
    """A :class:`Reader` of the store at ``url`` (resolved as :class:`~toolpath.store.store.Store` resolves it):
    through the driver alone when it can, else through a ``Store`` (which brings the schema to its head, as
    opening one does). A database that cannot be opened is a :class:`ConfigError`, as ``Store`` makes it."""
    resolved = resolve_store_url(url)
    opened = _open(resolved)
    if opened is None:
        from toolpath.store.store import Store

        store = Store(resolved)
        try:
            with store.opening_errors(), store.engine.connect() as conn:
                yield Reader.of_connection(conn)
        finally:
            store.close()
        return
    connection, reader = opened
    try:
        with _opening_errors(resolved):
            yield reader
    finally:
        connection.close()


def _open(url: str) -> tuple[Any, Reader] | None:
    """A driver's connection to ``url`` and its reader, if ``url`` is one this module opens and its schema is at
    the head; ``None`` otherwise (nothing is left open, nothing created)."""
    if url.startswith(_SQLITE) and "?" not in url:
        path = unquote(url.removeprefix(_SQLITE))
        if path in ("", ":memory:") or not Path(path).is_file():
            return None
        target = sqlite_file(path, {}, url)  # read-only on a read-only file system, as the Store opens it (no password)
        warn_if_store_shared(path)
        import sqlite3

        with _opening_errors(url, target.path):
            # the file SQLAlchemy's sqlite3 would open, with the options it would give it
            connection: Any = sqlite3.connect(target.uri or path, timeout=30, uri=target.uri is not None)
            reader, at_head = _read_revision(connection, "sqlite")
    elif url.startswith(_PSYCOPG):
        try:
            import psycopg
        except ImportError:
            return None  # the Store says which extra to install
        with _opening_errors(url):
            try:
                connection = psycopg.connect("postgresql://" + url.removeprefix(_PSYCOPG), autocommit=True)
            except psycopg.ProgrammingError:  # an option libpq does not know: SQLAlchemy's reading of the URL decides
                return None
            reader, at_head = _read_revision(connection, "postgresql")
    else:
        return None
    if not at_head:
        connection.close()
        return None
    return connection, reader


def _read_revision(connection: Any, dialect: str) -> tuple[Reader, bool]:
    """A reader of the driver's ``connection`` and whether its schema is at the head (the connection is closed if
    reading the revision fails)."""
    reader = Reader.of_driver(connection, dialect)
    try:
        return reader, revision(reader) == HEAD
    except BaseException:
        connection.close()
        raise


@contextlib.contextmanager
def _opening_errors(url: str, path: Path | None = None) -> Iterator[None]:
    """The driver's "cannot open" errors inside the block as one :class:`ConfigError`, worded as
    :meth:`toolpath.store.store.Store.opening_errors` words them (integrity and programming errors stay bugs);
    ``path``: a SQLite store's file, for the hint when a read-only place is why."""
    try:
        yield
    except Exception as exc:
        if not _cannot_open(exc):
            raise
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = cannot_open_hint(path, reason) if path is not None else ""
        raise ConfigError(f"store {display_url(url)}: cannot open ({hide_store_password(reason, url)}){hint}") from None


def _cannot_open(exc: Exception) -> bool:
    """``exc`` is a driver's OperationalError (cannot connect, cannot open the file) or its bare DatabaseError
    ("file is not a database")."""
    for module in ("sqlite3", "psycopg"):
        driver = sys.modules.get(module)
        if driver is not None and isinstance(exc, driver.DatabaseError):
            return isinstance(exc, driver.OperationalError) or type(exc) is driver.DatabaseError
    return False
