"""The store's schema, managed by Alembic migrations (``toolpath/collector/migrations``), on SQLite and PostgreSQL.

Opening a store brings its schema to the newest revision. A store already at :data:`HEAD` costs one query and
never imports Alembic. A database made before migrations existed (tables present, no ``alembic_version``) is
stamped with the first revision, then upgraded. Collectors that start together migrate one after another:
on PostgreSQL under an advisory lock, on SQLite under a file lock of the database file.

    toolpath db upgrade --store postgresql+psycopg://…    # what opening the store does
    toolpath db current --store …
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolpath.errors import ConfigError
from toolpath.store.session_list import Reader

if TYPE_CHECKING:  # SQLAlchemy loads where a revision is read or changed: HEAD is read without it
    from sqlalchemy.engine import Connection, Engine

STORE_SECRETS_REVISION = "0004"
"""The revision that adds ``store_secrets``: its migration reads its id from here, so renumbering it is one edit
(with its ``down_revision``)."""
HEAD = "0014"
"""The newest revision in ``migrations/versions`` (a test keeps the two in step)."""
INITIAL = "0001"
_LOCK_KEY = 7_202_611_001  # pg_advisory_xact_lock key shared by every toolpath process migrating a store
MIGRATIONS = Path(__file__).with_name("migrations")


def current_revision(conn: Connection) -> str | None:
    """The revision the schema of ``conn``'s database is at (``None``: no ``alembic_version`` table)."""
    if conn.dialect.name in ("sqlite", "postgresql"):
        return revision(Reader.of_connection(conn))
    from sqlalchemy import inspect, text

    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def revision(reader: Reader) -> str | None:
    """:func:`current_revision` on any DB-API connection of SQLite or PostgreSQL (what opening a store asks
    first; :mod:`toolpath.store.direct` asks it of a connection the driver opened alone)."""
    exists = (
        "SELECT to_regclass('alembic_version') IS NOT NULL"
        if reader.dialect == "postgresql"
        else "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
    )
    if not reader.rows(exists)[0][0]:
        return None
    found = reader.rows("SELECT version_num FROM alembic_version")
    return str(found[0][0]) if found else None


def upgrade(
    engine: Engine,
    revision: str = "head",
    lock: contextlib.AbstractContextManager[Any] | None = None,
    *,
    shown: str = "the store",
    read_only: str | None = None,
) -> str | None:
    """Bring the schema to ``revision``; returns the revision it is at afterwards. Processes that open a new or
    older store at once migrate it one after another: on PostgreSQL under an advisory lock, on SQLite under
    ``lock`` (a file lock of the database, held across processes), each looking again at the revision once it
    holds it. A schema this toolpath cannot take (:func:`check_schema`; ``shown``: the store as errors name it) is a
    :class:`ConfigError`, as is a change to a ``read_only`` store (why it is read-only)."""
    from sqlalchemy import inspect, text

    if revision == "head" and (engine.dialect.name != "postgresql" or read_only is not None):
        with engine.connect() as conn:
            current = current_revision(conn)
            if current == HEAD:  # the common case: no lock, no file beside the database
                return HEAD
            if current is not None or read_only is not None:  # none: maybe another process migrating, not done
                check_schema(conn, current, shown)
            if read_only is not None:
                at = f"at revision {current}, older than" if current is not None else "without"
                raise ConfigError(
                    f"store {shown} is read-only ({read_only}) and its schema is {at} this toolpath's ({HEAD}): "
                    "upgrade it once where it can be written (toolpath db upgrade)"
                )
    with lock or contextlib.nullcontext(), engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        current = current_revision(conn)
        check_schema(conn, current, shown)
        if current == HEAD and revision == "head":
            return current
        from alembic import command  # only when there is something to do

        config = alembic_config(conn)
        if current is None and inspect(conn).has_table("spans"):
            command.stamp(config, INITIAL)  # made by an earlier toolpath with create_all
        command.upgrade(config, revision)
        return current_revision(conn)


def known_revisions() -> frozenset[str]:
    """The revisions of ``migrations/versions``, read from their file names (``0003_online_evaluation.py``): no
    Alembic import (a test keeps the names and the revisions in step)."""
    return frozenset(path.name.split("_", 1)[0] for path in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))


def check_schema(conn: Connection, current: str | None, shown: str) -> None:
    """A :class:`ConfigError` when the schema of ``conn``'s database is one this toolpath cannot upgrade: at a
    revision it does not know (a newer toolpath's), or with toolpath's tables but no revision recorded (an emptied
    ``alembic_version``: which migrations ran is unknown). Asked under the migration lock: a SQLite store being
    created has its tables a moment before its revision row."""
    if current is not None:
        if current not in known_revisions():
            raise ConfigError(
                f"store {shown} was made or upgraded by a newer toolpath: its schema is at revision {current!r}, "
                f"which this toolpath does not know (its newest is {HEAD}); upgrade toolpath to open it"
            )
        return
    from sqlalchemy import inspect

    tables = inspect(conn)
    if tables.has_table("alembic_version") and tables.has_table("spans"):
        raise ConfigError(
            f"store {shown}: table alembic_version records no revision, so which migrations its tables have is "
            "unknown; put back the row it held (the revision the store was at), or use a new store"
        )


def check_revision(revision: str) -> None:
    """A :class:`ConfigError` unless ``revision`` names a revision of ``migrations/versions`` (or ``head``)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS))
    try:
        found = script.get_revisions(revision)
    except Exception:  # alembic raises several kinds (CommandError, ResolutionError, RangeNotAncestorError…)
        found = ()
    if not found:
        known = ", ".join(sorted(r.revision for r in script.walk_revisions()))
        raise ConfigError(f"--revision {revision!r}: no such revision (known: {known}, head)")


def alembic_config(conn: Connection) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config
