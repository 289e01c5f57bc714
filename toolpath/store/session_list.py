"""The sessions list: which sessions, newest first (a page at a time, by keyset cursors), how many there are, and
each one's row (turns, failures, tool calls, slowest turn, first prompt, evaluation or not). One home for what
``toolpath sessions list``, :meth:`toolpath.store.store.Store.list_sessions` (the MCP tool, replays) and the UI's
sessions pages show: the UI's filters (:mod:`toolpath.store.session_filter`) are :class:`Condition` s given here,
and its pages in another order (:mod:`toolpath.store.session_order`) take their rows and counts from here.

The SQL goes to the database driver itself (DB-API: ``sqlite3``, psycopg), through a :class:`Reader` over either a
connection of the store's SQLAlchemy engine or one the driver opened alone (:mod:`toolpath.store.direct`): a
command that only lists never imports SQLAlchemy, whose import alone costs more than the whole listing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

EVALUATION_PREFIXES = ("eval-", "replay-")
"""Session ids the evaluators give the sessions they run when none is given (``toolpath eval``, eval sets,
``toolpath replay``, and the runs the UI starts): evaluation traffic, not production's. The turns evaluations run
are also marked (``toolpath.evaluation``), whatever their session id; the prefixes keep older stores' apart."""
_IN_CHUNK = 500
_HEAD = (
    "SELECT sessions.session_id, sessions.agent_name, sessions.first_started_at, sessions.last_started_at FROM sessions"
)


CALLS_DROPPED = "toolpath.tool_calls_dropped"
"""The invocation attribute where the collector counts the tool calls its ``--max-tool-calls`` left out of a turn
(``toolpath.tracer.semconv.TOOLPATH_TOOL_CALLS_DROPPED``, which the store does not import)."""


_DIGITS = 9
_MOST = 10**_DIGITS - 1
"""The largest count :func:`calls_dropped_sql` reads: far more calls than one turn's trace holds, and a session's
sum stays within 64 bits however many turns it has."""


def calls_dropped_sql(dialect: str, column: str = "attributes") -> str:
    """The calls a cap left out of an invocation, read from its JSON ``column`` without decoding it in Python: the
    :data:`CALLS_DROPPED` count when it is a positive whole number, else 0 (absent, or a value the collector does
    not write: no value under that name can fail the query or count as calls)."""
    if dialect == "postgresql":
        value = f"({column} ->> '{CALLS_DROPPED}')"
        whole = f"jsonb_typeof({column} -> '{CALLS_DROPPED}') = 'number' AND {value} ~ '^[0-9]{{1,{_DIGITS}}}$'"
        return f"(CASE WHEN {whole} THEN CAST({value} AS BIGINT) ELSE 0 END)"
    path = f"'$.\"{CALLS_DROPPED}\"'"  # SQLite types a whole number past 64 bits integer, and reads it as real
    whole = f"json_type({column}, {path}) = 'integer' AND json_extract({column}, {path}) BETWEEN 0 AND {_MOST}"
    return f"(CASE WHEN {whole} THEN json_extract({column}, {path}) ELSE 0 END)"


class Reader:
    """Runs a query written with ``?`` marks on one database connection and returns its rows as tuples."""

    def __init__(self, dialect: str, run: Callable[[str, tuple[Any, ...]], Sequence[Sequence[Any]]]) -> None:
        self.dialect = dialect
        """``sqlite`` or ``postgresql``."""
        self._run = run

    @classmethod
    def of_connection(cls, conn: Any) -> Reader:
        """Over a SQLAlchemy ``Connection`` (its transaction, if one is open)."""
        return cls(conn.dialect.name, lambda sql, params: conn.exec_driver_sql(sql, params).all())

    @classmethod
    def of_driver(cls, connection: Any, dialect: str) -> Reader:
        """Over a DB-API connection (``sqlite3``'s or psycopg's)."""

        def run(sql: str, params: tuple[Any, ...]) -> Sequence[Sequence[Any]]:
            cursor = connection.cursor()
            try:
                cursor.execute(sql, params)
                return cursor.fetchall()
            finally:
                cursor.close()

        return cls(dialect, run)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Sequence[Any]]:
        if self.dialect == "postgresql":  # psycopg's marks are %s (none of these queries holds a literal % or ?)
            sql = sql.replace("?", "%s")
        return self._run(sql, tuple(params))


class SessionHead(NamedTuple):
    """A session as the ``sessions`` table holds it (times: nanoseconds since the epoch)."""

    session_id: str
    agent_name: str | None
    first_started_at: int
    last_started_at: int


Cursor = tuple[int, str]
"""A place in the newest-first order: a session's ``last_started_at`` and its id."""


class Condition(NamedTuple):
    """A condition on the ``sessions`` table (its columns named ``sessions.<column>``), written with ``?`` marks,
    and its parameters: what narrows the list (:func:`of_agent`; the UI's filters,
    :func:`toolpath.store.session_filter.conditions`)."""

    sql: str
    params: tuple[Any, ...] = ()


class NewestPage(NamedTuple):
    """A page of the list newest first, and where the pages beside it start."""

    heads: list[SessionHead]
    older: Cursor | None
    """Where the next (older) page starts (``after``); ``None`` on the last page."""
    newer: Cursor | None
    """Where the previous (newer) page ends (``before``); ``None`` on the first page."""


def of_agent(agent_name: str | None) -> list[Condition]:
    """Only the sessions of ``agent_name`` (none: every session)."""
    return [] if agent_name is None else [Condition("sessions.agent_name = ?", (agent_name,))]


def newest_page(
    reader: Reader,
    conditions: Sequence[Condition] = (),
    *,
    limit: int | None = None,
    after: Cursor | None = None,
    before: Cursor | None = None,
) -> NewestPage:
    """Up to ``limit`` sessions matching ``conditions``, newest first (by last activity, ties by id): the first,
    those after the ``after`` cursor (older ones) or those before the ``before`` cursor (newer ones). A keyset on
    the indexed ``(last_started_at, session_id)``: the first page of a large store is one index walk."""
    where = list(conditions)
    order = "sessions.last_started_at DESC, sessions.session_id"
    if before is not None:
        at, session_id = before
        later = "sessions.last_started_at > ? OR (sessions.last_started_at = ? AND sessions.session_id < ?)"
        where.append(Condition(f"({later})", (at, at, session_id)))
        order = "sessions.last_started_at, sessions.session_id DESC"
    elif after is not None:
        at, session_id = after
        earlier = "sessions.last_started_at < ? OR (sessions.last_started_at = ? AND sessions.session_id > ?)"
        where.append(Condition(f"({earlier})", (at, at, session_id)))
    sql, params = _where(_HEAD, where)
    sql += f" ORDER BY {order}"
    if limit is not None:
        sql, params = f"{sql} LIMIT ?", [*params, limit + 1]
    found = [SessionHead(*row) for row in reader.rows(sql, params)]
    heads = found if limit is None else found[:limit]
    more = len(heads) < len(found)
    if before is not None:
        heads.reverse()
    older = (heads[-1].last_started_at, heads[-1].session_id) if heads and (before is not None or more) else None
    newer = (
        (heads[0].last_started_at, heads[0].session_id) if heads and (after is not None or (before and more)) else None
    )
    return NewestPage(heads, older, newer)


def newest(reader: Reader, *, agent_name: str | None = None, limit: int | None = None) -> list[SessionHead]:
    """Sessions (of ``agent_name``), newest first (:func:`newest_page`'s first page)."""
    return newest_page(reader, of_agent(agent_name), limit=limit).heads


def count(reader: Reader, *, agent_name: str | None = None) -> int:
    """How many sessions (of ``agent_name``) there are."""
    return counted(reader, of_agent(agent_name))[0]


def counted(reader: Reader, conditions: Sequence[Condition] = (), *, cap: int | None = None) -> tuple[int, bool]:
    """How many sessions match ``conditions``, and whether the count stopped at ``cap`` (given conditions: a
    count of every session is the table's, never capped)."""
    if not conditions or cap is None:
        sql, params = _where("SELECT count(*) FROM sessions", conditions)
        return int(reader.rows(sql, params)[0][0]), False
    sql, params = _where("SELECT sessions.session_id FROM sessions", conditions)
    found = int(reader.rows(f"SELECT count(*) FROM ({sql} LIMIT ?) capped", [*params, cap + 1])[0][0])
    return min(found, cap), found > cap


def _where(sql: str, conditions: Sequence[Condition]) -> tuple[str, list[Any]]:
    if not conditions:
        return sql, []
    return f"{sql} WHERE " + " AND ".join(c.sql for c in conditions), [p for c in conditions for p in c.params]


def listed(
    reader: Reader,
    *,
    agent_name: str | None = None,
    limit: int | None = 100,
    evaluation_attribute: str | None = None,
) -> list[dict[str, Any]]:
    """Sessions newest first with each its row (:func:`session_rows`), times as ISO 8601 UTC: what the CLI, the
    MCP tool and :meth:`Store.list_sessions` give."""
    rows = session_rows(reader, newest(reader, agent_name=agent_name, limit=limit), evaluation_attribute)
    for row in rows:
        row["first_started_at"] = iso(row["first_started_at"])
        row["last_started_at"] = iso(row["last_started_at"])
    return rows


def session_rows(reader: Reader, page: Sequence[Any], evaluation_attribute: str | None = None) -> list[dict[str, Any]]:
    """The list's row of each session of ``page`` (rows with ``session_id``, ``agent_name``, ``first_started_at``
    and ``last_started_at``): its turns, failed turns, total and slowest latency, tool calls and failed ones, the
    calls caps left out of its turns (``tool_calls_dropped``: not stored, so not among ``tool_calls``), first
    prompt, its turns' ``users`` (sorted), and ``evaluation``: an evaluation ran it (an id of
    :data:`EVALUATION_PREFIXES`, or, given ``evaluation_attribute``, a turn that attribute marks ``true``)."""
    ids = [r.session_id for r in page]
    evaluated = {r.session_id for r in page if r.session_id.startswith(EVALUATION_PREFIXES)}
    stats: dict[str, Sequence[Any]] = {}
    calls: dict[str, tuple[int, int]] = {}
    prompts: dict[str, str | None] = {}
    users: dict[str, list[str]] = {}
    failing: dict[str, tuple[str | None, str]] = {}
    for chunk, marks in _chunks(ids):
        if evaluation_attribute is not None:
            marked, key = marked_true(reader.dialect, evaluation_attribute)
            sql = f"SELECT DISTINCT session_id FROM invocations WHERE session_id IN ({marks}) AND {marked}"
            evaluated.update(r[0] for r in reader.rows(sql, [*chunk, key]))
        sql = (
            "SELECT session_id, count(*), coalesce(sum(CASE WHEN failure > 0 THEN 1 ELSE 0 END), 0), "
            f"max(latency_seconds), sum(latency_seconds), sum({calls_dropped_sql(reader.dialect)}) FROM invocations "
            f"WHERE session_id IN ({marks}) GROUP BY session_id"
        )
        stats.update((r[0], r) for r in reader.rows(sql, chunk))
        sql = (
            "SELECT i.session_id, count(*), sum(CASE WHEN c.error IS NOT NULL THEN 1 ELSE 0 END) FROM tool_calls c "
            f"JOIN invocations i ON i.invocation_id = c.invocation_id WHERE i.session_id IN ({marks}) "
            "GROUP BY i.session_id"
        )
        calls.update((r[0], (int(r[1]), int(r[2] or 0))) for r in reader.rows(sql, chunk))
        sql = (
            f"SELECT i.session_id, i.prompt FROM invocations i WHERE i.session_id IN ({marks}) AND i.started_at = "
            "(SELECT min(e.started_at) FROM invocations e WHERE e.session_id = i.session_id)"
        )
        prompts.update((r[0], r[1]) for r in reader.rows(sql, chunk))
        sql = (
            "SELECT DISTINCT session_id, user_id FROM invocations "
            f"WHERE session_id IN ({marks}) AND user_id IS NOT NULL"
        )
        for session_id, user in reader.rows(sql, chunk):
            users.setdefault(session_id, []).append(user)
        failing.update(_latest_failures(reader, chunk, marks))
    rows = []
    for r in page:
        stat = stats.get(r.session_id)
        called, call_errors = calls.get(r.session_id, (0, 0))
        rows.append(
            {
                "session_id": r.session_id,
                "agent_name": r.agent_name,
                "first_started_at": r.first_started_at,
                "last_started_at": r.last_started_at,
                "invocations": int(stat[1]) if stat is not None else 0,
                "failures": int(stat[2]) if stat is not None else 0,
                "latency": float(stat[4]) if stat is not None and stat[4] is not None else None,
                "slowest": float(stat[3]) if stat is not None and stat[3] is not None else None,
                "tool_calls": called,
                "tool_calls_dropped": int(stat[5] or 0) if stat is not None else 0,
                "tool_errors": call_errors,
                "prompt": prompts.get(r.session_id),
                "evaluation": r.session_id in evaluated,
                "users": sorted(users.get(r.session_id, [])),
                "failing_tool": failing[r.session_id][0] if r.session_id in failing else None,
                "failing_error": failing[r.session_id][1] if r.session_id in failing else None,
            }
        )
    return rows


_FAILURE_TEXT = 300
"""How much of a failure's text a session's row keeps."""


def _latest_failures(reader: Reader, chunk: Sequence[str], marks: str) -> dict[str, tuple[str | None, str]]:
    """Each session's latest failure, what a row shows first: the tool and error of its last failing tool call,
    else the error of its last failed turn (``None`` as the tool)."""
    out: dict[str, tuple[str | None, str]] = {}
    sql = (
        f"SELECT session_id, error FROM invocations WHERE session_id IN ({marks}) AND failure > 0 "
        "AND error IS NOT NULL ORDER BY started_at, invocation_id"
    )
    for session_id, error in reader.rows(sql, chunk):
        out[session_id] = (None, str(error)[:_FAILURE_TEXT])
    sql = (
        "SELECT i.session_id, c.name, c.error FROM tool_calls c JOIN invocations i ON i.invocation_id = "
        f"c.invocation_id WHERE i.session_id IN ({marks}) AND c.error IS NOT NULL "
        "ORDER BY i.started_at, i.invocation_id, c.position"
    )
    for session_id, name, error in reader.rows(sql, chunk):
        out[session_id] = (name, str(error)[:_FAILURE_TEXT])
    return out


def iso(ns: int | None) -> str | None:
    """Nanoseconds since the epoch as ISO 8601 UTC (as :func:`toolpath.model.ns_to_datetime` reads them)."""
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()


def marked_true(dialect: str, attribute: str, column: str = "attributes") -> tuple[str, str]:
    """The condition that an invocation's ``attribute`` (in its JSON ``column``) is the JSON ``true`` the collector
    writes, and its parameter. Nothing else marks a turn — not ``"yes"`` or ``1`` — and no value under that name
    can fail the query (a cast to boolean would, of ``"banana"``, on PostgreSQL)."""
    if dialect == "postgresql":
        return f"({column} -> CAST(? AS TEXT)) = 'true'::jsonb", attribute
    return f"json_type({column}, ?) = 'true'", '$."{}"'.format(attribute.replace('"', '\\"'))


def _chunks(ids: Sequence[str]) -> list[tuple[list[str], str]]:
    return [
        (list(ids[i : i + _IN_CHUNK]), ", ".join(["?"] * len(ids[i : i + _IN_CHUNK])))
        for i in range(0, len(ids), _IN_CHUNK)
    ]
