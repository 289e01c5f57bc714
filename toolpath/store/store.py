"""The SQL store: sessions, invocations, tool calls and raw spans (SQLite by default, PostgreSQL too).

Writes are idempotent upserts keyed by ids, batched with executemany, one transaction per batch, so a batch
written twice (a retry, a span re-sent) leaves the same rows.
"""

from __future__ import annotations

import contextlib
import functools
import json
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DatabaseError, OperationalError
from sqlalchemy.pool import StaticPool

from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.store import bulk, durability, ingest, lock_waits, migrate, reads, session_list
from toolpath.store import schema as t
from toolpath.store.engine import (
    DEFAULT_STORE_URL,
    SQLITE_BUSY_SECONDS,
    STORE_ENV,
    changed_settings,
    display_url,
    hide_store_password,
    make_engine,
    resolve_store_url,
)
from toolpath.store.session_list import Reader, iso
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.sqlite_access import cannot_open_hint
from toolpath.store.turn_usage_spans import TurnUsage, turn_usages
from toolpath.store.writelock import WriteLock, database_file_lock, sqlite_file

if TYPE_CHECKING:  # the pydantic model is imported where an invocation is built: reading lists needs none
    from toolpath.model import Invocation, Session, ToolCall

__all__ = ["DEFAULT_STORE_URL", "STORE_ENV", "Store", "display_url", "resolve_store_url"]
_IN_CHUNK = 500
_PG_BOUNDS = text(
    "SELECT set_config('lock_timeout', :lock, true),"
    " set_config('statement_timeout', COALESCE(:statement, current_setting('statement_timeout')), true)"
)
"""A bounded write's ``lock_timeout`` and ``statement_timeout`` (kept as it is without a deadline), in milliseconds,
until the transaction ends (:mod:`toolpath.store.lock_waits`)."""
_T = TypeVar("_T")


class Store:
    """Read and write toolpath records in a SQL database."""

    def __init__(
        self, url: str | None = None, *, create: bool = True, echo: bool = False, writing: str | None = None
    ) -> None:
        resolved = resolve_store_url(url)
        self.url = display_url(resolved)
        """The URL as it may be shown: its password hidden (the engine holds the real one)."""
        self.engine, sqlite_target = make_engine(resolved, echo=echo)
        self.read_only = sqlite_target.read_only if sqlite_target is not None else None
        """Why this store may not be written (``mode=ro``, ``immutable=1``, ``on a read-only file system``: a SQLite
        file opened read-only, :mod:`toolpath.store.sqlite_access`), or ``None``."""
        if writing is not None:
            self.require_writable(writing)
        if sqlite_target is not None and sqlite_target.options.get("mode") != "memory":
            self.database_file: str | None = sqlite_file(str(sqlite_target.path))  # links resolved: one lock a file
        else:
            self.database_file = sqlite_file(self.engine.url.database) if self.engine.dialect.name == "sqlite" else None
        """A SQLite store's file, its path made absolute (``None``: in memory, or not SQLite)."""
        self.write_lock: contextlib.AbstractContextManager[Any] = (
            WriteLock(self.database_file) if self.engine.dialect.name == "sqlite" else contextlib.nullcontext()
        )
        """Held by :meth:`ingest` across its write transaction on SQLite: one writer at a time in this process and
        across processes (the file has one write lock, and queueing for it beats polling for it:
        :mod:`toolpath.store.writelock`); PostgreSQL's writers run side by side, a lock per trace making a trace's
        writes take turns."""
        self.one_connection = isinstance(self.engine.pool, StaticPool)
        """An in-memory SQLite database: one connection that threads must take in turn, reads too."""
        self.on_invocations: Callable[[Any, Sequence[Invocation]], None] | None = None
        """Called with the connection and the invocations inside every transaction that writes invocations
        (the online evaluator's job queue enqueues there, so a stored invocation and its job commit together)."""
        if create:
            self.upgrade()

    def upgrade(self, revision: str = "head") -> str | None:
        """Bring the schema to ``revision`` (what opening a store does); returns the revision reached. A file
        that is not a database, a server that cannot be reached, a schema a newer toolpath made, or a read-only
        store whose schema needs changing is a :class:`ConfigError`."""
        with self.opening_errors():
            return migrate.upgrade(
                self.engine, revision, database_file_lock(self.database_file), shown=self.url, read_only=self.read_only
            )

    def require_writable(self, doing: str) -> None:
        """A :class:`ConfigError` when this store is read-only; ``doing`` says what the command would write."""
        if self.read_only is not None:
            raise ConfigError(f"store {self.url} is read-only ({self.read_only}): {doing}")

    @contextlib.contextmanager
    def opening_errors(self) -> Iterator[None]:
        """Turn the driver's "cannot open" errors inside the block into one :class:`ConfigError`."""
        try:
            yield
        except DatabaseError as exc:
            # OperationalError: cannot connect, cannot open the file; a bare DatabaseError: "file is not a
            # database". Integrity and programming errors are bugs, and stay what they are.
            if not isinstance(exc, OperationalError) and type(exc) is not DatabaseError:
                raise
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
            hint = cannot_open_hint(Path(self.database_file), reason) if self.database_file is not None else ""
            raise ConfigError(f"store {self.url}: cannot open ({self.hide_password(reason)}){hint}") from None

    def hide_password(self, text: str) -> str:
        """``text`` (an error message) with this store's password hidden."""
        return hide_store_password(text, self.engine.url.render_as_string(hide_password=False))

    def pseudonym_key(self) -> bytes:
        """The store's secret key of the pseudonyms of redacted identifiers (:meth:`toolpath.redact.Redactor.
        pseudonym`): made at random once, in the store (by its migration, or here if it is gone), so every process
        that opens the store gets the same one. Never printed, logged or exported."""
        secrets_table = t.store_secrets
        query = select(secrets_table.c.value).where(secrets_table.c.name == "pseudonym")
        with self.engine.begin() as conn:
            value = conn.execute(query).scalar()
            if value is None:  # whoever inserts first wins; everyone reads the winner
                insert = self.dialect_insert(secrets_table).on_conflict_do_nothing(index_elements=["name"])
                conn.execute(insert, [{"name": "pseudonym", "value": secrets.token_hex(32)}])
                value = conn.execute(query).scalar_one()
        return bytes.fromhex(value)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        if self.dialect == "sqlite" and self.read_only is None:
            # what the write-ahead log holds goes into the database file, and the log is emptied: a clean
            # shutdown leaves no data (nor deleted data) behind in the -wal file
            with contextlib.suppress(Exception), self.engine.connect() as conn:
                # at once or not at all: another process holding the database (a writer, a reader's snapshot)
                # must never make a stop wait; the last process to close empties the log
                conn.exec_driver_sql("PRAGMA busy_timeout = 0")
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        self.engine.dispose()
        if isinstance(self.write_lock, WriteLock):
            self.write_lock.close()

    # --- writes ----------------------------------------------------------------------------------------

    def write(self, invocations: Sequence[Invocation] = (), spans: Sequence[SpanRecord] = ()) -> None:
        """Upsert invocations (with their sessions and tool calls) and raw spans in one transaction."""
        with self.engine.begin() as conn:
            usage: dict[str, TurnUsage] = {}
            if spans and invocations:  # a turn of a trace new to the store: its usage is that of its spans here
                stored = set(ingest.traces_stored(conn, sorted({inv.trace_id or "" for inv in invocations})))
                usage = turn_usages(spans, [inv for inv in invocations if (inv.trace_id or "") not in stored])
            bulk.insert_spans(conn, spans)
            if invocations:
                self._write_invocations(conn, invocations, usage=usage)

    def _write_invocations(
        self,
        conn: Connection,
        invocations: Sequence[Invocation],
        existing: Iterable[str] | None = None,
        encoded: bulk.EncodedInvocations | None = None,
        usage: Mapping[str, TurnUsage] | None = None,
    ) -> None:
        """:func:`toolpath.store.bulk.write_invocations`, then the ``on_invocations`` hook."""
        bulk.write_invocations(conn, invocations, existing, encoded, usage)
        if self.on_invocations is not None:
            self.on_invocations(conn, invocations)

    @contextlib.contextmanager
    def redoable_write(self) -> Iterator[Any]:
        """A write transaction (after the write lock) whose loss in a power cut costs a redo, not a promise: the
        online queue's claims and results (a lost claim is claimed again, lost results are scored again). Its
        commit does not wait for the disk (SQLite ``synchronous=NORMAL``, PostgreSQL ``synchronous_commit=off``,
        for this transaction only; see :mod:`toolpath.store.durability`)."""
        with self.write_lock, self.engine.connect() as conn:
            if self.dialect == "postgresql":
                with conn.begin():
                    conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
                    yield conn
            elif self._log_file is not None:
                with durability.relaxed(conn), conn.begin():
                    yield conn
            else:
                with conn.begin():
                    yield conn

    @contextlib.contextmanager
    def durable_write(self, lock: contextlib.AbstractContextManager[Any] | None = None) -> Iterator[Any]:
        """A write transaction under ``lock`` (default: the write lock), on disk when the ``with`` ends. On a
        SQLite file the wait for the disk comes after the lock is let go (:mod:`toolpath.store.durability`), so
        the next writer does not wait for this one's disk flush."""
        log = self._log_file
        with contextlib.ExitStack() as held:
            held.enter_context(lock if lock is not None else self.write_lock)
            conn = held.enter_context(self.engine.connect())
            if log is not None:
                held.enter_context(durability.relaxed(conn))
            bound = lock_waits.wait_bound()  # read once the write lock is held: what is left of the caller's time
            if bound is not None and self.dialect == "sqlite":
                held.enter_context(_sqlite_busy_timeout(conn, bound.lock_wait))
            with conn.begin():
                if bound is not None and self.dialect == "postgresql":  # for this transaction, in one round trip
                    statement = None if bound.statement is None else str(_ms(bound.statement))
                    conn.execute(_PG_BOUNDS, {"lock": str(_ms(bound.lock_wait)), "statement": statement})
                yield conn
        if log is not None:
            durability.sync_file(log)

    @functools.cached_property
    def _log_file(self) -> str | None:
        """The SQLite WAL file commits append to (``None``: not a SQLite file in WAL mode)."""
        return durability.wal_file(self.engine, self.database_file)

    def ingest(
        self,
        spans: Sequence[SpanRecord],
        rebuild: Callable[[list[SpanRecord]], list[Invocation]],
        is_run: Callable[[SpanRecord], bool],
        limits: Any = None,
    ) -> int:
        """Store ``spans`` and, in the same transaction, the invocations they change: ``rebuild(spans)`` of each
        outermost run (``is_run``) above a new span, with every span below it (see :mod:`toolpath.store.ingest`;
        the work follows the new spans, not their traces' size). Returns the number of invocations written.
        Idempotent, and independent of arrival order. ``limits`` (:class:`~toolpath.collector.limits.Limits`) caps
        spans per trace and tool calls per invocation."""
        return ingest.ingest(self, spans, rebuild, is_run, limits)

    def judge_replies(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Cached judge replies by request key (the judge's cache; see :mod:`toolpath.judges.client`)."""
        jc = t.judge_cache
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(jc.c.key, jc.c.reply, jc.c.input_tokens, jc.c.output_tokens).where(jc.c.key.in_(keys))
            )
            return {row.key: dict(row._mapping) for row in rows}

    def save_judge_replies(self, rows: list[dict[str, Any]], *, replace: bool = False) -> None:
        """Add judge replies to the cache; a key already there keeps its first reply (``replace``: takes the new)."""
        now = time.time_ns()
        with self.engine.begin() as conn:
            for chunk in _chunks(rows):
                insert = self.dialect_insert(t.judge_cache)
                stmt = (
                    insert.on_conflict_do_update(
                        index_elements=["key"],
                        set_={c: insert.excluded[c] for c in ("reply", "input_tokens", "output_tokens", "created_at")},
                    )
                    if replace
                    else insert.on_conflict_do_nothing(index_elements=["key"])
                )
                conn.execute(stmt, [{**row, "created_at": now} for row in chunk])

    def write_eval_run(self, run: dict[str, Any], results: Sequence[dict[str, Any]]) -> None:
        """Save an evaluation run (``eval_runs`` columns) and its result rows (``eval_results`` columns)."""
        with self.engine.begin() as conn:
            conn.execute(t.eval_runs.insert(), [_json_safe(run)])
            if results:
                conn.execute(t.eval_results.insert(), [_json_safe(r) for r in results])

    def list_eval_runs(self, *, limit: int | None = 50) -> list[dict[str, Any]]:
        """Evaluation runs, newest first."""
        query = select(t.eval_runs).order_by(t.eval_runs.c.started_at.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            return [_run_dict(row) for row in conn.execute(query)]

    def get_eval_run(self, run_id: str) -> dict[str, Any] | None:
        """One run with its result rows, or ``None``."""
        with self.engine.connect() as conn:
            row = conn.execute(select(t.eval_runs).where(t.eval_runs.c.run_id == run_id)).first()
            if row is None:
                return None
            results = conn.execute(
                select(t.eval_results).where(t.eval_results.c.run_id == run_id).order_by(t.eval_results.c.position)
            )
            run = _run_dict(row)
            run["results"] = [dict(r._mapping) for r in results]
        return run

    def dialect_insert(self, table: Any) -> Any:
        """An INSERT with the dialect's ``on_conflict_do_nothing`` / ``on_conflict_do_update``."""
        return (postgresql.insert if self.dialect == "postgresql" else sqlite.insert)(table)

    # --- reads -----------------------------------------------------------------------------------------

    def list_sessions(self, *, agent_name: str | None = None, limit: int | None = 100) -> list[dict[str, Any]]:
        """Sessions, newest first, each with its row of the list (:func:`toolpath.store.session_list.listed`:
        turns, failures, tool calls, slowest turn, first prompt; times as ISO 8601)."""
        with self.engine.connect() as conn:
            return session_list.listed(Reader.of_connection(conn), agent_name=agent_name, limit=limit)

    def count_sessions(self, *, agent_name: str | None = None) -> int:
        """How many sessions :meth:`list_sessions` would list without a limit."""
        with self.engine.connect() as conn:
            return session_list.count(Reader.of_connection(conn), agent_name=agent_name)

    def get_session(self, session_id: str) -> Session | None:
        """The session ``session_id``; an id redaction turned into a pseudonym (``chat-jane@example.com``) finds
        its session too, by the pseudonym the default rules and this store's key make of it."""
        query = select(t.sessions).where(t.sessions.c.session_id == session_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            pseudonym = Redactor(pseudonym_key=self.pseudonym_key()).identifier(session_id)
            if pseudonym == session_id:
                return None
            return self.get_session(pseudonym)
        from toolpath.model import Session

        return Session(
            session_id=row.session_id,
            agent_name=row.agent_name,
            invocations=self.list_invocations(session_id=session_id, limit=None),
        )

    def list_invocations(
        self,
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        since_ns: int | None = None,
        limit: int | None = 1000,
    ) -> list[Invocation]:
        """Invocations in start order, with their tool calls."""
        inv = t.invocations
        query = select(inv).order_by(inv.c.started_at, inv.c.invocation_id)
        if session_id is not None:
            query = query.where(inv.c.session_id == session_id)
        if agent_name is not None:
            query = query.where(inv.c.agent_name == agent_name)
        if since_ns is not None:
            query = query.where(inv.c.started_at >= since_ns)
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            calls = self._tool_calls(conn, [r.invocation_id for r in rows])
        return [_invocation_from_row(r, calls.get(r.invocation_id, [])) for r in rows]

    def invocations_by_id(self, invocation_ids: Sequence[str]) -> list[Invocation]:
        """The stored invocations among ``invocation_ids``, with their tool calls, in the order asked (read in
        bulk: :mod:`toolpath.store.reads`)."""
        with self.engine.connect() as conn:
            return reads.invocations_by_id(conn, invocation_ids)

    def turns_by_id(self, invocation_ids: Sequence[str]) -> list[reads.StoredTurn]:
        """What online scoring reads of the stored invocations among ``invocation_ids``, in the order asked."""
        with self.engine.connect() as conn:
            return reads.turns_by_id(conn, invocation_ids)

    def get_invocation(self, invocation_id: str) -> Invocation | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(t.invocations).where(t.invocations.c.invocation_id == invocation_id)).first()
            if row is None:
                return None
            calls = self._tool_calls(conn, [invocation_id])
        return _invocation_from_row(row, calls.get(invocation_id, []))

    def spans_of_trace(self, trace_id: str) -> list[SpanRecord]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.spans).where(t.spans.c.trace_id == trace_id).order_by(t.spans.c.start_time))
            return [SpanRecord(**row._asdict()) for row in rows]

    def counts(self) -> dict[str, int]:
        """Row counts of every table."""
        with self.engine.connect() as conn:
            return {
                name: conn.execute(select(func.count()).select_from(table)).scalar_one()
                for name, table in t.metadata.tables.items()
            }

    @staticmethod
    def _tool_calls(conn: Connection, invocation_ids: Sequence[str]) -> dict[str, list[ToolCall]]:
        return reads.tool_calls(conn, invocation_ids)


def _sqlite_busy_timeout(conn: Connection, seconds: float) -> contextlib.AbstractContextManager[None]:
    """SQLite's wait for another connection's lock bounded to ``seconds`` on this connection for the ``with``, then
    set back to :data:`~toolpath.store.engine.SQLITE_BUSY_SECONDS` (or the connection discarded)."""
    bounded = f"PRAGMA busy_timeout = {_ms(seconds)}"
    return changed_settings(conn, [bounded], [f"PRAGMA busy_timeout = {SQLITE_BUSY_SECONDS * 1000}"], "busy timeout")


def _ms(seconds: float) -> int:
    """``seconds`` as the whole milliseconds a timeout setting takes (at least one: zero means none)."""
    return max(1, int(seconds * 1000))


def _run_dict(row: Any) -> dict[str, Any]:
    run = dict(row._mapping)
    run["started_at"] = iso(run["started_at"])
    run["finished_at"] = iso(run["finished_at"])
    return run


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    """JSON columns only take JSON: anything else a dataset carried (dates, numpy numbers) becomes text, and
    NaN or infinite numbers (pandas' missing values) become null."""
    return json.loads(json.dumps(value, default=str), parse_constant=lambda _: None) if value else value


def _invocation_from_row(r: Any, calls: list[ToolCall]) -> Invocation:
    from toolpath.model import Invocation, ns_to_datetime

    return Invocation(
        invocation_id=r.invocation_id,
        session_id=r.session_id,
        agent_name=r.agent_name,
        prompt=r.prompt,
        response=r.response,
        tool_calls=calls,
        intermediate_responses=[tuple(pair) for pair in r.intermediate_responses or []],
        latency_seconds=r.latency_seconds,
        failure=r.failure,
        error=r.error,
        trace_id=r.trace_id or None,
        started_at=ns_to_datetime(r.started_at),
        attributes=r.attributes or {},
        answered_by=r.answered_by,
    )


def _chunks(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    for i in range(0, len(items), _IN_CHUNK):
        yield items[i : i + _IN_CHUNK]
