"""Store URLs and engines: which database a URL names (``$TOOLPATH_STORE``, SQLite paths), how it is shown (its
password hidden, everywhere toolpath prints or logs it), and the SQLAlchemy engine that opens it.

SQLAlchemy is imported where a URL is parsed or an engine made, not with this module: a command that resolves a
store URL and reads it through its driver alone (:mod:`toolpath.store.direct`) never pays for its import."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from toolpath.config import DEFAULT_STORE_URL, STORE_ENV
from toolpath.errors import ConfigError
from toolpath.private_files import create_private, warn_if_shared
from toolpath.store.sqlite_access import SQLITE_READONLY, SqliteFile, read_only_write_error, sqlite_file

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

logger = logging.getLogger("toolpath.store.engine")

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
SQLITE_SYNCHRONOUS = "FULL"
"""Every commit waits for the disk (with WAL, NORMAL can lose the last commits in a power cut): a 2xx from the
collector promises that what it acknowledged is stored."""
SQLITE_AUTOCHECKPOINT = 1000
"""Pages in the log after which a commit copies them into the database (SQLite's default; the collector's writes
wait longer: :mod:`toolpath.store.durability`)."""
SQLITE_BUSY_SECONDS = 30
"""How long a SQLite connection waits for a lock another connection holds before it gives up ("database is
locked"); a caller with a deadline waits less (:mod:`toolpath.store.lock_waits`)."""
SQLITE_LOWER = "toolpath_lower"
"""A SQLite function every connection of a store's engine has: its text argument in lower case, every letter (SQLite's
own ``lower()`` and ``LIKE`` fold ASCII letters only); what a text search beyond ASCII compares
(:mod:`toolpath.store.session_filter`)."""
SQLITE_SIDE_FILES = ("-wal", "-shm")
"""The files SQLite keeps beside a database file in WAL mode (with the database file's mode)."""
STORE_HOLDS = "recorded runs and the key of the store's pseudonyms"
"""What a store's files hold, as a warning about who may read them says it."""
STORE_EXAMPLES = "e.g. sqlite:///toolpath.db, ./toolpath.db or postgresql+psycopg://user@localhost:5432/toolpath"


def resolve_store_url(url: str | None = None) -> str:
    """``url``, else ``$TOOLPATH_STORE``, else ``sqlite:///toolpath.db``.

    A store is a SQLAlchemy URL (``scheme://…``) or a SQLite file path that looks like one: it ends in ``.db``,
    ``.sqlite`` or ``.sqlite3``, or it has a folder in it (``data/store``). Anything else (``localhost:5432``,
    a libpq ``host=… dbname=…`` string, a typo) is a :class:`ConfigError`, never a new file of that name.
    """
    url = url or os.environ.get(STORE_ENV) or DEFAULT_STORE_URL
    if "://" in url:
        return url
    if url.lower().endswith(SQLITE_SUFFIXES) or "/" in url or os.sep in url:
        return f"sqlite:///{url}"
    from toolpath.redact import hide_passwords  # the rules load where a URL is shown: resolving shows none

    raise ConfigError(
        f"store {hide_passwords(url)!r} is neither a database URL nor a SQLite file path ({STORE_EXAMPLES})"
    )


def display_url(url: str) -> str:
    """A store URL as toolpath shows it anywhere (start-up lines, errors, logs): its password hidden as ``***``,
    in the user info and in the query (``?password=…``)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from toolpath.redact import hide_passwords

    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        shown = url
    return hide_passwords(shown)


def hide_store_password(text: str, url: str) -> str:
    """``text`` (a driver's error message) with ``url``'s password hidden wherever it appears."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from toolpath.redact import hide_passwords

    text = hide_passwords(text)
    try:
        password = make_url(url).password
    except ArgumentError:
        password = None
    if password and len(str(password)) >= 3:  # shorter ones would hide ordinary letters; the patterns hide those
        text = text.replace(str(password), "***")
    return text


def make_engine(real_url: str, *, echo: bool) -> tuple[Engine, SqliteFile | None]:
    """The engine of the store at ``real_url``, and for a SQLite file the file as it is opened (its options, and why
    it is read-only if it is: :mod:`toolpath.store.sqlite_access`)."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError
    from sqlalchemy.pool import StaticPool

    url = display_url(real_url)
    try:
        parsed = make_url(real_url)
    except ArgumentError:
        raise ConfigError(f"store URL {url!r} is not a database URL (e.g. sqlite:///toolpath.db)") from None
    kwargs: dict[str, Any] = {"echo": echo}
    is_sqlite = parsed.get_backend_name() == "sqlite"
    target: SqliteFile | None = None
    read_only: str | None = None
    if is_sqlite:
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_SECONDS}
        if parsed.database in (None, "", ":memory:") or parsed.query.get("mode") == "memory":
            kwargs["poolclass"] = StaticPool  # one shared connection, or each thread sees its own empty db
        if parsed.database not in (None, "", ":memory:") and not parsed.database.startswith("file:"):
            target = sqlite_file(parsed.database, parsed.query, url)
            if target.path.is_dir():
                raise ConfigError(f"store {url}: {parsed.database} is a folder, not a database file")
            if not target.path.parent.is_dir():
                raise ConfigError(f"store {url}: folder {target.path.parent} does not exist")
            warn_if_store_shared(parsed.database)
            if target.uri is not None:  # SQLite reads its options from a file: URI only
                parsed = parsed.set(database=target.uri, query={**target.driver_options, "uri": "true"})
            read_only = target.read_only
        elif parsed.database is not None and parsed.database.startswith("file:"):  # a URI of the URL's own
            query = {key: str(value) for key, value in parsed.query.items()}
            immutable = query.get("immutable", "0").lower() in ("1", "true", "yes", "on")
            read_only = "mode=ro" if query.get("mode") == "ro" else "immutable=1" if immutable else None
    try:
        engine = create_engine(parsed, **kwargs)
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        hint = " (pip install 'toolpath[postgres]')" if parsed.get_backend_name() == "postgresql" else ""
        why = hide_store_password(str(exc), real_url)
        raise ConfigError(f"store {url}: no driver for this URL{hint}: {why}") from None
    if is_sqlite:
        event.listen(engine, "do_connect", _private_database_file)
        event.listen(engine, "connect", _sqlite_pragmas if read_only is None else _sqlite_read_pragmas)
        event.listen(engine, "handle_error", _refused_writes(url, read_only))
    return engine, target


def warn_if_store_shared(database: str) -> None:
    """One warning line when other users may read a SQLite store's file or its ``-wal`` / ``-shm`` (a file made
    before toolpath made them 0600, or by another program): their modes are the owner's to change."""
    warn_if_shared((database, *(f"{database}{suffix}" for suffix in SQLITE_SIDE_FILES)), STORE_HOLDS)


def _private_database_file(_dialect: Any, _record: Any, cargs: Sequence[Any], cparams: dict[str, Any]) -> None:
    """Before SQLite opens a database file that does not exist, create it 0600: SQLite would create it with the
    umask's mode (0644 by default), and gives its ``-wal`` and ``-shm`` files the database file's mode."""
    database = cargs[0] if cargs else cparams.get("database")
    if isinstance(database, str) and database not in ("", ":memory:") and not cparams.get("uri"):
        with contextlib.suppress(OSError):  # a folder that refuses it: SQLite says so when it opens the file
            create_private(database)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    _enter_wal(cursor)
    cursor.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
    cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_AUTOCHECKPOINT}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    dbapi_connection.create_function(SQLITE_LOWER, 1, _lower, deterministic=True)


def _enter_wal(cursor: Any) -> None:
    """Put the database in WAL mode, waiting up to :data:`SQLITE_BUSY_SECONDS` for others doing the same: processes
    that open one new file at once each turn it to WAL, and SQLite answers "database is locked" at once, without its
    busy wait, to all but one of them (a wait could deadlock); once it is in WAL mode, asking again is a read."""
    deadline = time.monotonic() + SQLITE_BUSY_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _sqlite_read_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """A read-only connection's settings: the journal mode is the file's (setting it would be a write)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    dbapi_connection.create_function(SQLITE_LOWER, 1, _lower, deterministic=True)


def _refused_writes(url: str, read_only: str | None) -> Any:
    """A ``handle_error`` listener: SQLite's refusal of a write ("attempt to write a readonly database") becomes one
    :class:`ConfigError` saying the store is read-only, and why when the URL or the file system says so."""

    def refused(context: Any) -> None:
        error = context.original_exception
        code = getattr(error, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF == SQLITE_READONLY:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise read_only_write_error(url, read_only, reason) from None

    return refused


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


@contextlib.contextmanager
def changed_settings(conn: Connection, during: Sequence[str], after: Sequence[str], what: str) -> Iterator[None]:
    """``during`` (statements such as ``PRAGMA``) run on ``conn``'s driver connection for the ``with``, then
    ``after`` to set it back before it returns to the pool. When setting back fails the connection is invalidated
    (closed: never pooled again with ``what`` changed) and the failure logged; it never replaces an error of the
    ``with`` (it is noted on it), and after a ``with`` that ended well it is not raised: its work is done (a write
    committed), and only the connection is lost. A connection already invalidated (another setting failed to go
    back) is left as it is."""
    driver = conn.connection.driver_connection
    assert driver is not None  # an open connection
    for statement in during:
        driver.execute(statement)
    try:
        yield
    except BaseException as exc:
        failure = _set_back(conn, after, what)
        if failure is not None:
            exc.add_note(f"the connection's {what} could not be set back ({failure!r}): the connection was discarded")
        raise
    _set_back(conn, after, what)


def _set_back(conn: Connection, statements: Sequence[str], what: str) -> Exception | None:
    if conn.invalidated:
        return None
    try:
        driver = conn.connection.driver_connection
        assert driver is not None  # an open connection
        for statement in statements:
            driver.execute(statement)
    except Exception as exc:
        conn.invalidate(exc)
        logger.warning("toolpath: a store connection's %s could not be set back (%r): it was discarded", what, exc)
        return exc
    return None
