"""Rebuilding the invocations new spans change, and what a rebuild must leave behind (docs/spec.md §3: the stored
state is the same whatever the arrival order): no session whose invocations all went, no job or online score of a
deleted invocation, no score of an invocation's earlier, partial version, and session rows that say what their
invocations say now.

The work follows the new spans, not the size of their trace. An invocation is an outermost agent run (a run span
with no run span above it) and every span below it, so new spans change only the runs they end up under: the
outermost run above each new span (found by walking up from it, parent by parent) is rebuilt from its own spans
(read from it down, through the (trace_id, parent_span_id) index), and a run that used to be outermost and now has
one above it is no longer an invocation. Whatever order the spans come in, each invocation is the one a rebuild of
the whole trace makes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import Connection, delete, text, update

from toolpath.store import schema as t
from toolpath.store import turn_text
from toolpath.store.bulk import EncodedInvocations, delete_of_invocations, insert_span_rows, pg_array, span_rows
from toolpath.store.job_status import JobStatus
from toolpath.store.parent_cycles import closed_cycles
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.turn_usage_spans import UsageAhead

if TYPE_CHECKING:  # the pydantic model is imported where an invocation is built: reading lists needs none
    from toolpath.model import Invocation

_IN_CHUNK = 500
Key = tuple[str, str]
"""(trace id, span id)."""


@dataclass
class Affected:
    """What new spans change: the outermost runs to rebuild, with their spans, and the invocations that are gone."""

    spans: list[SpanRecord] = field(default_factory=list)
    """Each run to rebuild and every span below it."""
    roots: list[Key] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    """Invocation ids of runs that have a run above them now."""
    cycles: list[list[SpanRecord]] = field(default_factory=list)
    """Circles of parents the new spans close (:func:`~.parent_cycles.closed_cycles`): never a run's."""


def ingest(
    store: Any,
    spans: Sequence[SpanRecord],
    rebuild: Callable[[list[SpanRecord]], list[Invocation]],
    is_run: Callable[[SpanRecord], bool],
    limits: Any = None,
) -> int:
    """:meth:`toolpath.store.store.Store.ingest`. What needs no lock is done before the write transaction (the
    spans' rows encoded, a new trace's invocations built and encoded), so that other writers wait less."""
    # an in-memory SQLite store has one connection: the reads below take it in turn with the writes too
    outer, inner = (store.write_lock, nullcontext()) if store.one_connection else (nullcontext(), store.write_lock)
    with outer:
        return _ingest(store, spans, rebuild, is_run, limits, inner)


def _ingest(
    store: Any,
    spans: Sequence[SpanRecord],
    rebuild: Callable[[list[SpanRecord]], list[Invocation]],
    is_run: Callable[[SpanRecord], bool],
    limits: Any,
    write_lock: AbstractContextManager[Any],
) -> int:
    from toolpath.model import invocation_key

    trace_ids = sorted({s.trace_id for s in spans})
    # built before the write lock is taken: what other writers need not wait for (used if the trace is new)
    prebuilt = prebuild(store, spans, rebuild, is_run)
    offered = {(s.trace_id, s.span_id): s for s in spans}
    rows = dict(zip(offered, span_rows(list(offered.values())), strict=True))
    encoded = EncodedInvocations(inv for built in prebuilt.values() for inv in built.invocations)
    ahead = UsageAhead((built.runs, built.invocations) for built in prebuilt.values())
    with store.durable_write(write_lock) as conn:
        if store.dialect == "sqlite":  # the write lock now: what is read below stays true until the commit
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            seeks_only(conn)
        lock_traces(conn, trace_ids)
        counts: Counter[str] = Counter()  # spans stored per trace; a trace with none is new, read nothing of it
        counts.update(dict(_rows_in(conn, _STORED_PER_TRACE, trace_ids)))
        maybe_stored = sorted(key for key in offered if key[0] in counts)
        stored = {(row[0], row[1]) for row in _spans_at(conn, "spans.trace_id, spans.span_id", "span_id", maybe_stored)}
        new = [s for key, s in offered.items() if key not in stored]
        if limits is not None and limits.max_spans_per_trace is not None and new:
            new = limits.admit(counts, new)
        if not new:
            return 0
        insert_span_rows(conn, [rows[s.trace_id, s.span_id] for s in new], new=True)
        fresh = {s.trace_id for s in new if s.trace_id not in counts}
        # a new trace built before the lock from all the spans it took: its runs are known, nothing to walk
        taken = Counter(s.trace_id for s in new)
        ready = {trace for trace in fresh if trace in prebuilt and taken[trace] == len(prebuilt[trace].offered)}
        affected = affected_runs(conn, [s for s in new if s.trace_id not in ready], is_run, fresh=fresh - ready)
        _add_built(conn, affected, [prebuilt[trace] for trace in sorted(ready)], is_run)
        if affected.cycles and limits is not None:  # stored, never a run: the writer says so
            limits.closed_cycles(affected.cycles)
        invocations = _rebuilt(affected.spans, rebuild, prebuilt, fresh, ready)
        if limits is not None:
            invocations = limits.cap(invocations)
        ids = [invocation_key(*root) for root in affected.roots] + affected.gone
        # invocation -> session, as stored before these spans came
        before = dict(_rows_in(conn, _INVOCATION_SESSIONS, ids))
        made = {i.invocation_id for i in invocations}
        gone = [*affected.gone, *(i for i in before if i not in made and i not in affected.gone)]
        forget_invocations(conn, gone)
        rescore(conn, [i for i in before if i in made])  # scored before these spans came: scored again
        if invocations:
            usage = ahead.of(affected.spans, invocations)  # a new trace's computed before the lock
            store._write_invocations(conn, invocations, [i for i in before if i in made], encoded, usage)
        # whatever order the spans came in, sessions say what their invocations say now (none: no session)
        refresh_sessions(conn, {*before.values(), *(i.session_id for i in invocations)})
    return len(invocations)


class Built(NamedTuple):
    """A new trace's runs and invocations, as the spans offered alone make them."""

    keys: frozenset[Key]
    """The spans of its runs."""
    invocations: list[Invocation]
    roots: list[Key]
    runs: list[SpanRecord]
    """Every span below the roots, then the roots."""
    offered: frozenset[Key]
    """Every span of the trace offered."""


Prebuilt = dict[str, Built]


def prebuild(
    store: Any,
    spans: Sequence[SpanRecord],
    rebuild: Callable[[list[SpanRecord]], list[Invocation]],
    is_run: Callable[[SpanRecord], bool],
) -> Prebuilt:
    """The invocations of each trace whose offered spans are whole (every parent among them), hold a run, and had
    none of theirs stored a moment ago: what :func:`ingest` writes for such a trace if it is still new under the
    lock (the usual case), built before the lock, so that other writers need not wait for it."""
    traces: dict[str, dict[Key, SpanRecord]] = {}
    for s in spans:  # the last of a key, as ingest takes it
        traces.setdefault(s.trace_id, {})[(s.trace_id, s.span_id)] = s
    whole: dict[str, tuple[dict[Key, SpanRecord], list[Key]]] = {}
    for trace_id, known in traces.items():
        if any(s.parent_span_id is not None and (trace_id, s.parent_span_id) not in known for s in known.values()):
            continue  # its ancestors may be stored: read under the lock
        tops = set(_outermost_runs(known.values(), known, is_run).values())
        roots = sorted(top for top in tops if top is not None and top != _IN_RUN_CYCLE)
        if roots and _IN_RUN_CYCLE not in tops:
            whole[trace_id] = (known, roots)
    if not whole:
        return {}
    with store.engine.connect() as conn:
        for trace_id in traces_stored(conn, sorted(whole)):
            whole.pop(trace_id, None)
    built: Prebuilt = {}
    for trace_id, (known, roots) in whole.items():
        runs = [*_Below(None, known, {trace_id})(roots), *(known[root] for root in roots)]
        keys = frozenset((s.trace_id, s.span_id) for s in runs)
        built[trace_id] = Built(keys, rebuild(runs), roots, runs, frozenset(known))
    return built


def _add_built(
    conn: Connection, affected: Affected, built: Sequence[Built], is_run: Callable[[SpanRecord], bool]
) -> None:
    """What :func:`affected_runs` finds of new traces :func:`prebuild` built, added to ``affected``: their roots,
    their runs' spans, and the stored invocations of the runs below their roots."""
    from toolpath.model import invocation_key

    inner: set[str] = set()
    for trace in built:
        roots = set(trace.roots)
        below = (s for s in trace.runs if (s.trace_id, s.span_id) not in roots and is_run(s))
        inner.update(invocation_key(s.trace_id, s.span_id) for s in below)
        affected.roots.extend(trace.roots)
        affected.spans.extend(trace.runs)
    affected.roots.sort()
    affected.gone += _stored_invocations(conn, sorted(inner))


def _rebuilt(
    spans: list[SpanRecord],
    rebuild: Callable[[list[SpanRecord]], list[Invocation]],
    prebuilt: Prebuilt,
    fresh: set[str],
    ready: set[str],
) -> list[Invocation]:
    """``rebuild(spans)``, taking a new trace's invocations from ``prebuilt`` when they were built from these very
    spans: those of ``ready`` (known to be), and those of another new trace whose spans here are the prebuilt's."""
    by_trace: dict[str, set[Key]] = {}
    for s in spans:
        if s.trace_id not in ready:
            by_trace.setdefault(s.trace_id, set()).add((s.trace_id, s.span_id))
    built = ready | {
        trace
        for trace, keys in by_trace.items()
        if trace in fresh and trace in prebuilt and prebuilt[trace].keys == keys
    }
    rest = [s for s in spans if s.trace_id not in built]
    return [inv for trace in sorted(built) for inv in prebuilt[trace].invocations] + rebuild(rest)


def seeks_only(conn: Connection) -> None:
    """On PostgreSQL, this transaction's statements are index seeks, not JIT-compiled, no scan of a table: until a
    growing table's (a day partition's) first ANALYZE the planner prices a lookup by key at 1/200 of the table, so
    JIT compiles it (6 ms of CPU for a 0.3 ms lookup) and an ``= ANY`` of many keys scans the table. (``= ANY``
    scans an index once a partition of spans: 0.15 ms for 50 new traces in 29 partitions, 2.5 ms a seek a key.)"""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SELECT set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true)")


def lock_traces(conn: Connection, trace_ids: Sequence[str]) -> None:
    """On PostgreSQL, this transaction's lock on each trace (several collectors may share the store: one writer per
    trace), taken in sorted order so that two writers cannot deadlock; one round trip: a function scan of the array
    takes the locks in the array's order."""
    if conn.dialect.name == "postgresql" and trace_ids:
        conn.execute(
            text("SELECT count(pg_advisory_xact_lock(hashtext(t))) FROM unnest(CAST(:ids AS text[])) AS t"),
            {"ids": pg_array(sorted(trace_ids))},
        )


def affected_runs(
    conn: Connection,
    new: Sequence[SpanRecord],
    is_run: Callable[[SpanRecord], bool],
    fresh: set[str] | frozenset[str] = frozenset(),
) -> Affected:
    """The runs ``new`` spans (already stored) change, read from the store by ancestors and descendants only;
    nothing is read of the ``fresh`` traces (no span of theirs was stored before ``new``: all they hold is here)."""
    from toolpath.model import invocation_key

    known: dict[Key, SpanRecord] = {(s.trace_id, s.span_id): s for s in new}
    wanted = {(s.trace_id, s.parent_span_id) for s in new if s.parent_span_id is not None and s.trace_id not in fresh}
    looked: set[Key] = set()
    while wanted := {key for key in wanted if key not in known and key not in looked}:
        looked |= wanted
        found = _spans_with_keys(conn, sorted(wanted))
        known.update(((s.trace_id, s.span_id), s) for s in found)
        wanted = {(s.trace_id, s.parent_span_id) for s in found if s.parent_span_id is not None}
    closed = closed_cycles(new, known)
    tops = _outermost_runs(new, known, is_run)
    roots = sorted({top for top in tops.values() if top not in (None, _IN_RUN_CYCLE)})
    below = _Below(conn, known, fresh)
    affected = Affected(roots=roots, spans=below(roots), cycles=closed)
    # a span that closes a cycle of parents holding a run puts a run above every run of the cycle and below it
    cycles = sorted(key for key, top in tops.items() if top == _IN_RUN_CYCLE)
    below_a_run = [*affected.spans, *map(known.__getitem__, cycles), *below(cycles)]
    # only a run is ever an invocation (an outermost one): the others need not be looked for
    inner = [invocation_key(s.trace_id, s.span_id) for s in below_a_run if is_run(s)]
    affected.gone = _stored_invocations(conn, sorted(set(inner)))
    affected.spans.extend(known[root] for root in roots)
    return affected


class _Below:
    """Every stored span below given spans (not them), read level by level: the children of a fresh trace's spans
    from the new spans, the others' keys from the store and only the spans not at hand read whole."""

    def __init__(self, conn: Connection | None, known: dict[Key, SpanRecord], fresh: set[str] | frozenset[str]) -> None:
        self.conn, self.known = conn, known
        self.children: dict[Key, list[SpanRecord]] = {}
        for s in known.values():
            if s.trace_id in fresh and s.parent_span_id is not None:
                self.children.setdefault((s.trace_id, s.parent_span_id), []).append(s)
        self.fresh = fresh

    def __call__(self, tops: Sequence[Key]) -> list[SpanRecord]:
        found: list[SpanRecord] = []
        seen = set(tops)
        frontier = list(tops)
        while frontier:
            level = [s for key in frontier if key[0] in self.fresh for s in self.children.get(key, ())]
            level += self._stored_children([key for key in frontier if key[0] not in self.fresh])
            below = [s for s in level if (s.trace_id, s.span_id) not in seen]
            seen.update((s.trace_id, s.span_id) for s in below)
            found.extend(below)
            frontier = sorted({(s.trace_id, s.span_id) for s in below})
        return found

    def _stored_children(self, parents: Sequence[Key]) -> list[SpanRecord]:
        if not parents:
            return []
        assert self.conn is not None, "without a connection every trace is fresh: nothing is read back"
        keys = [(row[0], row[1]) for row in _spans_at(self.conn, _KEY_COLUMNS, "parent_span_id", parents)]
        missing = sorted(key for key in keys if key not in self.known)
        self.known.update(((s.trace_id, s.span_id), s) for s in _spans_with_keys(self.conn, missing))
        return [self.known[key] for key in keys if key in self.known]


_IN_RUN_CYCLE: Key = ("", "")
"""What :func:`_outermost_run` says of a span whose parents go round a cycle that holds a run."""


def _outermost_runs(
    spans: Collection[SpanRecord], known: dict[Key, SpanRecord], is_run: Callable[[SpanRecord], bool]
) -> dict[Key, Key | None]:
    """:func:`_outermost_run` of each of ``spans`` (and of the known spans above them), each chain of parents
    walked once: a span's outermost run is its parent's, else itself if it is a run."""
    tops: dict[Key, Key | None] = {}
    for span in spans:
        chain: list[SpanRecord] = []
        on_chain: set[str] = set()
        current: SpanRecord | None = span
        while current is not None and (key := (span.trace_id, current.span_id)) not in tops:
            if current.span_id in on_chain:  # a cycle of parents (rare): each span of the chain walked alone
                tops.update(((span.trace_id, s.span_id), _outermost_run(s, known, is_run)) for s in chain)
                break
            chain.append(current)
            on_chain.add(current.span_id)
            parent = current.parent_span_id
            current = known.get((span.trace_id, parent)) if parent is not None else None
        else:
            above = tops[key] if current is not None else None
            for s in reversed(chain):
                if above is None and is_run(s):
                    above = (s.trace_id, s.span_id)
                tops[(span.trace_id, s.span_id)] = above
    return {(s.trace_id, s.span_id): tops[(s.trace_id, s.span_id)] for s in spans}


def _outermost_run(span: SpanRecord, known: dict[Key, SpanRecord], is_run: Callable[[SpanRecord], bool]) -> Key | None:
    """The run at the top of ``span``'s chain of known ancestors, which has no run above it; ``None`` when there
    is no run, :data:`_IN_RUN_CYCLE` when the chain ends in a cycle that holds one (every run has one above)."""
    chain: list[SpanRecord] = []
    on_chain: set[str] = set()
    current: SpanRecord | None = span
    while current is not None and current.span_id not in on_chain:
        chain.append(current)
        on_chain.add(current.span_id)
        parent = current.parent_span_id
        current = known.get((span.trace_id, parent)) if parent is not None else None
    if current is not None:  # a cycle, from ``current`` up to the end of the chain
        cycle = chain[[s.span_id for s in chain].index(current.span_id) :]
        if any(is_run(s) for s in cycle):
            return _IN_RUN_CYCLE
    top = next((s for s in reversed(chain) if is_run(s)), None)
    return (top.trace_id, top.span_id) if top is not None else None


_KEY_COLUMNS = "spans.trace_id, spans.span_id"
_SPAN_COLUMNS = ", ".join(f"spans.{c.name}" for c in t.spans.columns)
_JSON_FIELDS = tuple(i for i, c in enumerate(t.spans.columns) if c.name in ("attributes", "events", "resource"))


def _spans_at(conn: Connection, columns: str, second: str, pairs: Sequence[Key]) -> Iterator[Any]:
    """``columns`` of the spans whose ``(trace_id, <second>)`` is one of ``pairs`` (distinct), through the driver:
    the pairs are a table joined to ``spans``, so each is one seek of the index on ``(trace_id, <second>)``. (A
    row-value ``IN`` list is a scan of the whole table on SQLite: a cost that grows with the store.)"""
    for chunk in _chunks(pairs):
        join = f"JOIN spans ON spans.trace_id = k.t AND spans.{second} = k.s"
        if conn.dialect.name == "postgresql":
            sql = f"SELECT {columns} FROM unnest(CAST(%s AS text[]), CAST(%s AS text[])) AS k(t, s) {join}"
            arrays = (pg_array([p[0] for p in chunk]), pg_array([p[1] for p in chunk]))
            yield from conn.exec_driver_sql(sql, arrays).fetchall()  # one call for the rows, not one a row
        else:
            mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
            values = ", ".join(f"({mark}, {mark})" for _ in chunk)
            sql = f"WITH k(t, s) AS (VALUES {values}) SELECT {columns} FROM k CROSS {join}"  # k first: the seeks
            yield from conn.exec_driver_sql(sql, tuple(v for pair in chunk for v in pair)).fetchall()


def _spans_with_keys(conn: Connection, keys: Sequence[Key]) -> list[SpanRecord]:
    """The stored spans of ``keys`` (distinct (trace id, span id) pairs)."""
    decode = conn.dialect.name != "postgresql"  # psycopg hands JSONB over decoded; SQLite's JSON is text
    found: list[SpanRecord] = []
    for row in _spans_at(conn, _SPAN_COLUMNS, "span_id", keys):
        values = list(row)
        if decode:
            for i in _JSON_FIELDS:
                values[i] = json.loads(values[i])
        found.append(SpanRecord(*values))
    return found


def traces_stored(conn: Connection, trace_ids: Sequence[str]) -> list[str]:  # those with a span stored (distinct)
    seeks_only(conn)
    return [row[0] for row in _rows_in(conn, _TRACES_STORED, trace_ids)]


def _stored_invocations(conn: Connection, ids: Sequence[str]) -> list[str]:
    return [row[0] for row in _rows_in(conn, _INVOCATIONS_STORED, ids)]


_STORED_PER_TRACE = "SELECT trace_id, count(*) FROM spans WHERE trace_id {in} GROUP BY trace_id"
_TRACES_STORED = "SELECT DISTINCT trace_id FROM spans WHERE trace_id {in}"
_INVOCATION_SESSIONS = "SELECT invocation_id, session_id FROM invocations WHERE invocation_id {in}"
_INVOCATIONS_STORED = "SELECT invocation_id FROM invocations WHERE invocation_id {in}"
_ARRAY = "unnest(CAST(%s AS text[])) AS k(v)"
_BY_INDEX = {
    # on PostgreSQL, each value of the array looked up by index, whatever the table's statistics say: `= ANY` was
    # planned as a scan of the whole table while the statistics lagged behind a growing table (12 ms a query at
    # 60,000 spans, and growing; 0.2-0.4 ms so)
    # but spans, which may be partitioned by time: one scan of an index a partition (seeks_only)
    _STORED_PER_TRACE: _STORED_PER_TRACE.format(**{"in": "= ANY(CAST(%s AS text[]))"}),
    _TRACES_STORED: _TRACES_STORED.format(**{"in": "= ANY(CAST(%s AS text[]))"}),
    _INVOCATION_SESSIONS: f"SELECT i.invocation_id, i.session_id FROM {_ARRAY} CROSS JOIN LATERAL "
    "(SELECT invocation_id, session_id FROM invocations WHERE invocation_id = k.v LIMIT 1) i",
    _INVOCATIONS_STORED: f"SELECT i.invocation_id FROM {_ARRAY} CROSS JOIN LATERAL "
    "(SELECT invocation_id FROM invocations WHERE invocation_id = k.v LIMIT 1) i",
}


def _rows_in(conn: Connection, sql: str, values: Sequence[Any]) -> Iterator[Any]:
    """The rows of ``sql`` whose ``{in}`` is "among ``values``" (see :func:`_execute_in`)."""
    for result in _execute_in(conn, sql, values, _BY_INDEX.get(sql)):
        yield from result.fetchall()


def _execute_in(conn: Connection, sql: str, values: Sequence[Any], pg_sql: str | None = None) -> list[Any]:
    """Run ``sql`` whose ``{in}`` is "among ``values``", 500 at a time, through the driver (no statement to
    compile): on SQLite an ``IN`` list, on PostgreSQL ``= ANY`` of one array (one parameter, one plan), or
    ``pg_sql``, the same query over the array as its one parameter (:data:`_BY_INDEX`)."""
    results = []
    for chunk in _chunks(values):
        if conn.dialect.name == "postgresql":
            if pg_sql is not None:
                results.append(conn.exec_driver_sql(pg_sql, (pg_array(chunk),)))
            else:
                results.append(
                    conn.exec_driver_sql(sql.format(**{"in": "= ANY(CAST(%s AS text[]))"}), (pg_array(chunk),))
                )
        else:
            marks = ", ".join(("?" if conn.dialect.paramstyle == "qmark" else "%s") for _ in chunk)
            results.append(conn.exec_driver_sql(sql.format(**{"in": f"IN ({marks})"}), tuple(chunk)))
    return results


def forget_invocations(conn: Connection, invocation_ids: Sequence[str]) -> None:
    """Delete invocations a rebuild no longer makes, with their tool calls, job and online scores (their sessions
    then go through :func:`refresh_sessions`)."""
    for chunk in _chunks(invocation_ids):
        delete_of_invocations(conn, t.tool_calls, chunk)
        # the job first: its row lock waits for a worker completing it, whose scores the next delete then sees
        conn.execute(delete(t.eval_jobs).where(t.eval_jobs.c.invocation_id.in_(chunk)))
        delete_of_invocations(conn, t.online_results, chunk)
        conn.execute(delete(t.turn_usage).where(t.turn_usage.c.invocation_id.in_(chunk)))
        turn_text.forget(conn, chunk)
        conn.execute(delete(t.invocations).where(t.invocations.c.invocation_id.in_(chunk)))


def rescore(conn: Connection, invocation_ids: Sequence[str]) -> None:
    """Invocations rebuilt with more spans than they were scored on: their scores go and their jobs (one per
    evaluator) wait again (a job that was shed stays shed, one skipped over its evaluator's limits stays skipped)."""
    jobs = t.eval_jobs
    for chunk in _chunks(invocation_ids):
        # the job first, as in forget_invocations; a waiting job too, so that no worker claims it (and reads the
        # invocation as it was) before this transaction commits
        conn.execute(
            update(jobs)
            .where(jobs.c.invocation_id.in_(chunk), jobs.c.status.not_in((JobStatus.SHED, JobStatus.SKIPPED)))
            .values(status=JobStatus.PENDING, claimed_by=None, claimed_at=None, finished_at=None, attempts=0)
        )
        delete_of_invocations(conn, t.online_results, chunk)


def refresh_sessions(conn: Connection, session_ids: Iterable[str]) -> None:
    """Each session's row from its invocations as stored now: first and last start, the agent of its latest
    invocation that names one; a session left without invocations is deleted. Two statements per 500 sessions
    (each value an index seek on ``(session_id, started_at)``)."""
    ids = sorted(set(session_ids))
    if conn.dialect.name == "postgresql":  # a writer adding to them commits first: the queries below see it
        _execute_in(conn, "SELECT session_id FROM sessions WHERE session_id {in} FOR UPDATE", ids)
    _execute_in(conn, _DELETE_EMPTY_SESSIONS, ids)
    for table in ("session_jobs", "session_results"):  # a session gone takes its whole-session scoring with it
        _execute_in(conn, _DELETE_GONE.format(table=table, into="{in}"), ids)
    _execute_in(conn, _UPDATE_SESSIONS, ids)


_MINE = "FROM invocations i WHERE i.session_id = sessions.session_id"
_DELETE_EMPTY_SESSIONS = f"DELETE FROM sessions WHERE session_id {{in}} AND NOT EXISTS (SELECT 1 {_MINE})"
_DELETE_GONE = (
    "DELETE FROM {table} WHERE session_id {into} AND NOT EXISTS "
    "(SELECT 1 FROM sessions s WHERE s.session_id = {table}.session_id)"
)
_UPDATE_SESSIONS = (
    f"UPDATE sessions SET first_started_at = (SELECT i.started_at {_MINE} ORDER BY i.started_at LIMIT 1), "
    f"last_started_at = (SELECT i.started_at {_MINE} ORDER BY i.started_at DESC LIMIT 1), "
    f"agent_name = (SELECT i.agent_name {_MINE} AND i.agent_name IS NOT NULL "
    "ORDER BY i.started_at DESC, i.invocation_id DESC LIMIT 1) WHERE session_id {in}"
)


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), _IN_CHUNK):
        yield items[i : i + _IN_CHUNK]
