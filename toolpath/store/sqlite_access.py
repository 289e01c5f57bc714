"""How a SQLite store's file is opened: the options its URL gives (``?mode=ro``, ``?immutable=1``), a file on a
read-only file system, and what to say when it cannot be opened or written.

SQLite reads its own options (``mode``, ``immutable``, ``cache``…) only from a ``file:`` URI, and SQLAlchemy's
driver drops them from a plain path with a warning: ``sqlite:///base.db?mode=ro`` would open the file read-write.
:func:`sqlite_file` turns such a URL into the URI SQLite reads, so the option holds; an option neither SQLite nor
the driver knows is an error, never ignored.

A store on a read-only file system (a read-only mount, a CD, a snapshot) opens read-only by itself: with
``mode=ro``, and ``immutable=1`` when no ``-wal`` file holds commits (SQLite cannot read a database in WAL mode
read-only without the ``-shm`` file it would create beside it; nothing can change a file there, so immutable is
exact). ``immutable=1`` on a file whose ``-wal`` holds commits is refused: SQLite would not read them.

Nothing here loads SQLAlchemy: :mod:`toolpath.store.direct` opens the same file through ``sqlite3`` alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from toolpath.errors import ConfigError

SQLITE_PREFIX = "sqlite:///"
URI_OPTIONS = ("cache", "immutable", "mode", "modeof", "nolock", "psow", "vfs")
"""The options SQLite reads from a ``file:`` URI (sqlite.org/uri.html)."""
DRIVER_OPTIONS = ("cached_statements", "check_same_thread", "detect_types", "isolation_level", "timeout", "uri")
"""The options SQLAlchemy's ``sqlite3`` driver reads from the URL itself."""
MODES = ("ro", "rw", "rwc", "memory")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
SQLITE_READONLY = 8
"""SQLite's result code for a write to a database opened read-only (extended codes keep it in the low byte)."""


@dataclass(frozen=True)
class SqliteFile:
    """A SQLite store's file as toolpath opens it."""

    path: Path
    """The database file, absolute."""
    options: dict[str, str] = field(default_factory=dict)
    """SQLite's URI options (the URL's, and those a read-only file system adds); none: the file opens as a path."""
    driver_options: dict[str, str] = field(default_factory=dict)
    """The URL's options for the driver (``timeout``…), kept for SQLAlchemy to read."""
    read_only: str | None = None
    """Why the store may not be written (``mode=ro``, ``immutable=1``, ``on a read-only file system``), or ``None``."""

    @property
    def uri(self) -> str | None:
        """The ``file:`` URI SQLite opens when options are given (``None``: the plain path)."""
        if not self.options:
            return None
        query = "&".join(f"{key}={quote(value, safe='')}" for key, value in sorted(self.options.items()))
        return f"file:{quote(str(self.path))}?{query}"


def sqlite_file(database: str, query: Mapping[str, str | tuple[str, ...]], shown: str) -> SqliteFile:
    """The file of a SQLite URL's ``database`` part and ``query`` (``shown``: the URL as errors name it). An option
    neither SQLite nor the driver knows, a value SQLite would not read, a relative path whose working directory is
    gone, or ``immutable=1`` over unread commits is a :class:`ConfigError`."""
    options: dict[str, str] = {}
    driver: dict[str, str] = {}
    for key, value in query.items():
        if not isinstance(value, str):
            raise ConfigError(f"store {shown}: option {key!r} given {len(value)} times")
        if key in URI_OPTIONS:
            options[key] = value
        elif key in DRIVER_OPTIONS:
            driver[key] = value
        else:
            known = ", ".join(sorted((*URI_OPTIONS, *DRIVER_OPTIONS)))
            raise ConfigError(f"store {shown}: unknown option {key!r} (SQLite's and its driver's: {known})")
    mode = options.get("mode")
    if mode is not None and mode not in MODES:
        raise ConfigError(f"store {shown}: mode={mode!r} is not one of SQLite's modes ({', '.join(MODES)})")
    immutable = _flag(options, "immutable", shown)
    path = absolute(database, shown)
    if immutable and pending_log(path):
        raise ConfigError(
            f"store {shown}: immutable=1 would not read the commits {path.name}-wal holds (SQLite ignores the log "
            "of an immutable database): open it with ?mode=ro"
        )
    read_only = "mode=ro" if mode == "ro" else "immutable=1" if immutable else None
    read_only_media = mode != "memory" and on_read_only_file_system(path)
    if read_only_media and mode is None and read_only is None:
        options["mode"], read_only = "ro", "on a read-only file system"
    if read_only_media and options.get("mode") == "ro" and "immutable" not in options and not pending_log(path):
        options["immutable"] = "1"  # nothing can change the file there, and SQLite could not make the -shm it wants
    return SqliteFile(path, options, driver, read_only)


def url_file(url: str) -> str | None:
    """The file a ``sqlite:///`` URL names, its options left off (``None``: another database, in memory, or a
    ``file:`` URI of the URL's own)."""
    if not url.startswith(SQLITE_PREFIX):
        return None
    database = unquote(url.removeprefix(SQLITE_PREFIX).partition("?")[0])
    return None if database in ("", ":memory:") or database.startswith("file:") else database


def absolute(database: str, shown: str) -> Path:
    """``database`` (a path, ``~`` expanded) made absolute; a relative one needs the working directory to exist."""
    path = Path(database).expanduser()
    if not path.is_absolute():
        try:
            path = Path.cwd() / path
        except FileNotFoundError:
            raise ConfigError(
                f"store {shown}: the working directory no longer exists, so the relative path {database!r} names no "
                "file: give an absolute path, or run the command from a folder that exists"
            ) from None
    return Path(os.path.normpath(path))


def on_read_only_file_system(path: Path) -> bool:
    """``path``'s folder is on a file system mounted read-only (a missing folder is not)."""
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def pending_log(path: Path) -> bool:
    """A ``-wal`` file beside ``path`` holds commits the database file does not (it exists and is not empty)."""
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except OSError:
        return False


def cannot_open_hint(path: Path, reason: str) -> str:
    """What to add to SQLite's ``reason`` for not opening ``path`` ("unable to open database file") when a read-only
    place is why; else nothing."""
    if "unable to open" not in reason or not path.is_file():
        return ""
    if on_read_only_file_system(path):
        return (
            f"; it is on a read-only file system and {path.name}-wal holds commits that SQLite cannot read there "
            "without the -shm file beside it: open the store once where it can be written (any toolpath command "
            "folds the log into the file when it closes)"
        )
    if not os.access(path.parent, os.W_OK):
        return (
            f"; its folder {path.parent} is read-only to this user, and SQLite makes a -shm file beside a store in "
            "WAL mode to read it: give ?immutable=1 when nothing writes the store meanwhile"
        )
    return ""


def read_only_write_error(shown: str, read_only: str | None, reason: str) -> ConfigError:
    """The error for SQLite's refusal of a write (``reason``: its message) to the store ``shown``."""
    if read_only is not None:
        return ConfigError(f"store {shown} is read-only ({read_only}): this command writes to it")
    return ConfigError(
        f"store {shown}: cannot write to it ({reason}): the file or its folder is read-only to this user"
    )


def _flag(options: dict[str, str], key: str, shown: str) -> bool:
    value = options.get(key)
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ConfigError(f"store {shown}: {key}={value!r}: expected 1 or 0")
