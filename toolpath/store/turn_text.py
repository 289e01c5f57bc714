"""Each turn's searchable text in one indexed row (``turn_text``, migration 0012), kept as the turn is written: its
prompt, response, error, attributes, user, and its tool calls' names, arguments, results and errors. The sessions
search finds a text of three characters or more through it instead of reading every turn and call: on SQLite an
FTS5 table with the trigram tokenizer (a quoted phrase matches any substring, ASCII case ignored), on PostgreSQL a
plain table with a ``pg_trgm`` GIN index (``ILIKE``). The parts are joined by a unit separator (U+001F), which a
search text holding it never matches across.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the sessions filter imports this module: no SQLAlchemy loaded for it
    from sqlalchemy import Connection

from toolpath.store.turn_usage import each_batch

SEPARATOR = "\x1f"
MIN_LENGTH = 3
"""Shorter texts have no trigram: they are searched by a scan."""
_CHUNK = 500


def create(conn: Connection) -> None:
    """The table (and on PostgreSQL the extension and index) on ``conn``'s database."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("CREATE VIRTUAL TABLE IF NOT EXISTS turn_text USING fts5(invocation_id UNINDEXED, "
                             "body, tokenize = 'trigram')")  # fmt: skip
        return
    conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS turn_text (invocation_id VARCHAR(64) PRIMARY KEY, "
                         "body TEXT NOT NULL)")  # fmt: skip
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_turn_text_body ON turn_text USING gin (body gin_trgm_ops)")


def drop(conn: Connection) -> None:
    conn.exec_driver_sql("DROP TABLE IF EXISTS turn_text")


def _body_sql(dialect: str, marks: str) -> str:
    sep = "char(31)" if dialect == "sqlite" else "chr(31)"

    def text(column: str, json: bool = False) -> str:
        return f"COALESCE(CAST({column} AS TEXT), '')" if json else f"COALESCE({column}, '')"

    call = " || ".join(f"{text(c, j)} || {sep}" for c, j in (("c.name", False), ("c.args", True),
                                                           ("c.result", True), ("c.error", False)))  # fmt: skip
    if dialect == "sqlite":
        calls = f"(SELECT group_concat({call}, '') FROM tool_calls c WHERE c.invocation_id = i.invocation_id)"
    else:
        calls = (f"(SELECT string_agg({call}, '' ORDER BY c.position) FROM tool_calls c "
                 "WHERE c.invocation_id = i.invocation_id)")  # fmt: skip
    parts = [text("i.prompt"), text("i.response"), text("i.error"), text("i.attributes", True), text("i.user_id"),
             f"COALESCE({calls}, '')"]  # fmt: skip
    body = f" || {sep} || ".join(parts)
    return f"INSERT INTO turn_text (invocation_id, body) SELECT i.invocation_id, {body} FROM invocations i " \
           f"WHERE i.invocation_id IN ({marks})"  # fmt: skip


def refresh(conn: Connection, invocation_ids: Sequence[str]) -> None:
    """The rows of ``invocation_ids`` from their turns and calls as stored now (a turn gone: its row goes)."""
    dialect = conn.dialect.name
    mark = "?" if dialect == "sqlite" else "%s"
    for start in range(0, len(invocation_ids), _CHUNK):
        chunk = tuple(invocation_ids[start : start + _CHUNK])
        marks = ", ".join([mark] * len(chunk))
        conn.exec_driver_sql(f"DELETE FROM turn_text WHERE invocation_id IN ({marks})", chunk)
        conn.exec_driver_sql(_body_sql(dialect, marks), chunk)


def forget(conn: Connection, invocation_ids: Sequence[str]) -> None:
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    for start in range(0, len(invocation_ids), _CHUNK):
        chunk = tuple(invocation_ids[start : start + _CHUNK])
        conn.exec_driver_sql(f"DELETE FROM turn_text WHERE invocation_id IN ({', '.join([mark] * len(chunk))})", chunk)


def backfill(conn: Connection, batch: int = 2_000) -> int:
    """:func:`refresh` of every stored turn, ``batch`` at a time in the order of their ids; the number of turns."""
    return each_batch(conn, refresh, batch)


def matching(dialect: str, text: str) -> tuple[str, tuple[str, ...]] | None:
    """The SQL (and its parameters) of the sessions with a turn holding ``text``, through the index; ``None``
    where the index cannot answer (too short, or holding the separator)."""
    if len(text) < MIN_LENGTH or SEPARATOR in text:
        return None
    select = "SELECT invocations.session_id FROM turn_text JOIN invocations " \
             "ON invocations.invocation_id = turn_text.invocation_id WHERE "  # fmt: skip
    if dialect == "sqlite":
        return select + "turn_text MATCH ?", ('body : "' + text.replace('"', '""') + '"',)
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return select + "turn_text.body ILIKE ? ESCAPE '\\'", (pattern,)
