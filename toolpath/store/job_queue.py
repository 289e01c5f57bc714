"""The online-evaluation job queue, in the store: one row in ``eval_jobs`` per invocation an evaluator's filters
and sample took (a :class:`Job`: the invocation and the evaluator's name).

Jobs are enqueued in the transaction that writes their invocation, so a stored invocation is never missed and
never enqueued twice for one evaluator. Workers (threads or processes, any number, sharing one store) *claim* a
batch: on PostgreSQL with ``SELECT … FOR UPDATE SKIP LOCKED``, on SQLite by its single writer; only jobs of the
evaluators their queue was given (processes with other ``online.toml`` files may share the store). A claim is a
lease: a job whose worker died is claimed again once the lease has run out. A job is *completed* together with
its results, and only by the worker holding the claim, so every job is scored exactly once. When more than
``max_backlog`` jobs wait, the queue sheds (marks ``shed``) the oldest or the newest, and counts them. An
evaluator with limits (``max_per_hour``, a judge budget) is asked for room as its new jobs are claimed, and those
over them are closed as ``skipped`` with their :class:`~toolpath.store.job_status.SkipReason`
(:mod:`toolpath.store.online_usage`).
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, and_, bindparam, func, select, text, tuple_, update

from toolpath.errors import ConfigError
from toolpath.model import Invocation
from toolpath.store import backlog_shed, judge_holds, judge_spend, online_usage, queue_sql, turn_results
from toolpath.store import schema as t
from toolpath.store.job_status import SHED_POLICIES, JobStatus, ShedPolicy, SkipReason
from toolpath.store.online_usage import UsageLimits
from toolpath.store.sqlite_driver import driver_rows
from toolpath.store.store import Store

_IN_CHUNK = 500
_STALE = "status = :claimed AND claimed_at < :stale"
_WAITING = "status = :pending"
_ENQUEUE = (  # in the ingest's write transaction: plain tuples through the driver, an existing job left as it is
    "INSERT INTO eval_jobs (invocation_id, evaluator, status, enqueued_at, attempts) "
    "VALUES ({mark}, {mark}, {mark}, {mark}, 0) ON CONFLICT (invocation_id, evaluator) DO NOTHING"
)
_ENQUEUE_PG = (
    "INSERT INTO eval_jobs (invocation_id, evaluator, status, enqueued_at, attempts) "
    "SELECT unnest(CAST(%s AS text[])), unnest(CAST(%s AS text[])), %s, %s, 0 "
    "ON CONFLICT (invocation_id, evaluator) DO NOTHING"
)
DEFAULT_EVALUATOR = ("default", "1")
"""The name and version of the one evaluator of a queue made with ``accept=`` (a flat ``online.toml``'s)."""
_RECENT = 100_000
"""Invocations per evaluator whose being outside the sample a queue remembers having counted: a turn rewritten as
its late spans arrive is counted once (while it is among these)."""


class Job(NamedTuple):
    """One evaluator's job on one invocation: the key of its ``eval_jobs`` row."""

    invocation_id: str
    evaluator: str


@dataclass(frozen=True)
class QueueEvaluator:
    """An evaluator as the queue sees it: its name and version (its results name both), which invocations it
    takes (its filters, then its sample), and its limits."""

    name: str
    version: str
    admits: Callable[[Invocation], bool] = lambda invocation: True
    samples: Callable[[str], bool] = lambda invocation_id: True
    limits: UsageLimits | None = None
    """``None``: no limit asked of the store (nothing counted in ``online_usage``)."""
    idle_seconds: float = 0.0
    """Of an evaluator of whole sessions: how long a session must have been quiet before it is scored."""


@dataclass
class QueueStats:
    enqueued: int = 0
    shed: int = 0
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    """Jobs given up after ``max_attempts`` claims."""
    lost_claims: int = 0
    """Completions refused because another worker had taken the job over (its lease had run out)."""
    skipped: collections.Counter[tuple[str, SkipReason]] = field(default_factory=collections.Counter)
    """Targets not scored, by evaluator and reason: outside the sample (as this process stored them), over the
    hour's rate or the judge budget (as its workers claimed them)."""


class JobQueue:
    table = t.eval_jobs
    """The jobs' table: one row per target and evaluator."""
    key = "invocation_id"
    """The column of its target's id."""
    waiting = _WAITING
    """Which of its rows wait to be claimed (``:pending``, ``:now`` given)."""
    order = "enqueued_at"
    """Which waiting rows are claimed first: the least of this column."""

    def __init__(
        self,
        store: Store,
        *,
        accept: Callable[[Invocation], bool] = lambda inv: True,
        evaluators: Sequence[QueueEvaluator] | None = None,
        max_backlog: int | None = None,
        shed: ShedPolicy | str = ShedPolicy.OLDEST,
        max_attempts: int = 3,
    ) -> None:
        """``evaluators``: whose jobs this queue enqueues and claims; ``None``, one (:data:`DEFAULT_EVALUATOR`)
        that takes what ``accept`` says."""
        if shed not in SHED_POLICIES:
            raise ConfigError(f"shed must be one of {', '.join(SHED_POLICIES)}, got {shed!r}")
        self.store = store
        self.evaluators = (
            {e.name: e for e in evaluators}
            if evaluators is not None
            else {DEFAULT_EVALUATOR[0]: QueueEvaluator(*DEFAULT_EVALUATOR, admits=accept)}
        )
        self.limits = {e.name: e.limits for e in self.evaluators.values() if e.limits is not None}
        self._recent: dict[str, collections.OrderedDict[str, None]] = collections.defaultdict(collections.OrderedDict)
        self.max_backlog = max_backlog
        self.shed_policy = ShedPolicy(shed)
        self.max_attempts = max_attempts
        self.stats = QueueStats()
        self._statements: dict[str, Any] = {}
        self.costliest = online_usage.Costliest()
        self._lock = threading.Lock()

    def attach(self) -> JobQueue:
        """Enqueue from now on whenever the store writes invocations."""
        self.store.on_invocations = self.enqueue
        return self

    def detach(self) -> None:
        if self.store.on_invocations == self.enqueue:
            self.store.on_invocations = None

    # --- producer side (inside the store's write transaction) --------------------------------------------

    def enqueue(self, conn: Connection, invocations: Sequence[Invocation]) -> None:
        chosen: list[Job] = []
        outside: list[tuple[str, str]] = []
        for inv in invocations:
            for evaluator in self.evaluators.values():
                if evaluator.admits(inv):
                    if evaluator.samples(inv.invocation_id):
                        chosen.append(Job(inv.invocation_id, evaluator.name))
                    else:
                        outside.append((evaluator.name, inv.invocation_id))
        if outside:
            self._count_outside(outside)
        if not chosen:
            return
        now = time.time_ns()
        if conn.dialect.name == "postgresql":
            ids, names = [j.invocation_id for j in chosen], [j.evaluator for j in chosen]
            result = conn.exec_driver_sql(_ENQUEUE_PG, (ids, names, JobStatus.PENDING, now))
        else:
            mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
            rows = [(*job, JobStatus.PENDING, now) for job in chosen]
            result = conn.exec_driver_sql(_ENQUEUE.format(mark=mark), rows)
        added = max(result.rowcount, 0)
        shed = 0
        if self.max_backlog is not None:
            shed = backlog_shed.shed(conn, self.table, self.key, self.max_backlog, self.shed_policy)
        with self._lock:
            self.stats.enqueued += added
            self.stats.shed += shed

    def _count_outside(self, outside: Iterable[tuple[str, str]]) -> None:
        """Count targets outside their evaluator's sample, each once while it is among the last :data:`_RECENT`."""
        with self._lock:
            for name, invocation_id in outside:
                recent = self._recent[name]
                if invocation_id in recent:
                    continue
                recent[invocation_id] = None
                if len(recent) > _RECENT:
                    recent.popitem(last=False)
                self.stats.skipped[name, SkipReason.NOT_SAMPLED] += 1

    # --- worker side -------------------------------------------------------------------------------------

    def has_work(self, lease_seconds: float) -> bool:
        """Whether a job of this queue's evaluators waits, or a claim's lease ran out: a read, without the write
        lock, so that a worker polling an empty queue writes nothing (the claim that follows decides)."""
        if not self.evaluators:
            return False
        params = {
            "claimed": JobStatus.CLAIMED,
            "pending": JobStatus.PENDING,
            "stale": time.time_ns() - int(lease_seconds * 1e9),
            "names": list(self.evaluators),
            "now": time.time_ns(),
        }
        with self.store.engine.connect() as conn:
            return any(
                conn.execute(
                    text(f"SELECT 1 FROM {self.table.name} WHERE {which} AND evaluator IN :names LIMIT 1").bindparams(
                        bindparam("names", expanding=True)
                    ),
                    params,
                ).first()
                is not None
                for which in (self.waiting, _STALE)
            )

    def claim(self, worker: str, limit: int, lease_seconds: float) -> list[Job]:
        """Up to ``limit`` jobs for ``worker``: waiting ones, or claims whose lease ran out; those over their
        evaluator's limits are closed as skipped instead (not returned)."""
        with self.store.redoable_write() as conn:  # queued with ingest (SQLite)
            return self._claim(conn, worker, limit, lease_seconds, None, time.time_ns())

    def complete(self, worker: str, job: Job, results: list[dict[str, Any]]) -> bool:
        """Store ``results`` and close the job, if ``worker`` still holds it; False when it does not."""
        return bool(self.complete_batch(worker, {job: results}))

    def complete_batch(self, worker: str, results: Mapping[Job, Sequence[Mapping[str, Any]]]) -> set[Job]:
        """Store the results of several jobs and close them, in one transaction; only the jobs ``worker`` still
        holds are closed and get their results (another worker took over the others after their lease ran out: its
        results count, not these). Returns the jobs closed."""
        return self.complete_and_claim(worker, results, 0, 0.0)[0]

    def complete_and_claim(
        self,
        worker: str,
        results: Mapping[Job, Sequence[Mapping[str, Any]]],
        limit: int,
        lease_seconds: float,
        *,
        also: Callable[[Connection, set[str]], None] | None = None,
        tokens: Mapping[str, int] | None = None,
        spend: Mapping[str, Sequence[judge_spend.SpendRow]] | None = None,
        released: Sequence[tuple[str, judge_holds.Released]] = (),
        over_budget: Collection[Job] = (),
    ) -> tuple[set[Job], list[Job]]:
        """:meth:`complete_batch`, and :meth:`claim` of the next ``limit`` jobs in the same transaction (a worker
        scoring batch after batch takes the store's write lock once a batch, not twice). ``also(conn, closed)``
        writes what else the closed jobs' results make, in that transaction (online eval-set runs' cases; ``closed``:
        their invocation ids). ``tokens``: the judge tokens each evaluator spent on them, counted against its
        budget; ``spend``: their judge requests, added to each evaluator's judge spend; ``released``: the calls
        among them whose cost was held as they were sent (moved out of the held rows); ``over_budget``: jobs among
        ``results`` not scored, a call of theirs refused by the budget (closed as skipped, their results dropped)."""
        if not results and not limit:
            return set(), []
        with self.store.redoable_write() as conn:  # queued with ingest (SQLite)
            if over_budget:
                self._skip_held(conn, worker, over_budget)
                results = {job: rows for job, rows in results.items() if job not in over_budget}
            closed = self._complete(conn, worker, results) if results else set()
            if tokens and any(tokens.values()):  # what a target costs, learnt from those that cost tokens
                self.costliest.scored(tokens, collections.Counter(job.evaluator for job in closed))
            if also is not None and closed:
                also(conn, {job.invocation_id for job in closed})
            now, usage = time.time_ns(), None
            if self.limits and (limit or released or any((tokens or {}).values())):
                usage = online_usage.lock(conn, self.limits, now)  # before the spend's rows, as holds lock them
            if spend:
                judge_spend.add(conn, spend, now)
            judge_holds.release(conn, released)
            if usage is not None:
                online_usage.spend(conn, usage, tokens or {}, now)
            return closed, self._claim(conn, worker, limit, lease_seconds, usage, now) if limit else []

    def release(self, worker: str, jobs: Sequence[Job]) -> None:
        """Give back jobs ``worker`` claimed and will not score (it is stopping): waiting again, for any worker
        now rather than after the lease, the claim not counted as an attempt nor as a target of its hour."""
        table = self.table
        with self.store.redoable_write() as conn:
            if self.limits:
                online_usage.lock(conn, self.limits, time.time_ns())
            for i in range(0, len(jobs), _IN_CHUNK):
                given = conn.execute(
                    update(table)
                    .where(self._held(worker, jobs[i : i + _IN_CHUNK]))
                    .values(status=JobStatus.PENDING, claimed_by=None, attempts=table.c.attempts - 1)
                    .returning(table.c[self.key], table.c.evaluator, table.c.claimed_at, table.c.attempts)
                ).all()
                if not given:
                    continue
                counted = [(r.evaluator, r.claimed_at) for r in given if r.attempts == 0 and r.evaluator in self.limits]
                online_usage.give_back(conn, counted)
                keys = [Job(r[0], r.evaluator) for r in given]
                conn.execute(update(table).where(self._keys_in(keys)).values(claimed_at=None))

    def _skip_held(self, conn: Connection, worker: str, jobs: Collection[Job]) -> None:
        """Close the ``jobs`` ``worker`` still holds as skipped: a call of their scoring was over the budget."""
        skipped = self._close_held(conn, worker, list(jobs), JobStatus.SKIPPED, SkipReason.BUDGET, time.time_ns())
        with self._lock:
            for _, evaluator in skipped:
                self.stats.skipped[evaluator, SkipReason.BUDGET] += 1

    def _close_held(
        self, conn: Connection, worker: str, jobs: Sequence[Job], status: JobStatus, reason: SkipReason | None, now: int
    ) -> list[tuple[str, str]]:
        """Close those of ``jobs`` ``worker`` still holds with ``status``; their keys. On SQLite one statement of
        the driver's a chunk (a batch after batch: no expression built each time), its rows as they come."""
        table, out = self.table, []
        for i in range(0, len(jobs), _IN_CHUNK):
            chunk = jobs[i : i + _IN_CHUNK]
            if self.store.dialect == "sqlite":
                given = (str(status), None if reason is None else str(reason), now, str(JobStatus.CLAIMED), worker)
                params = (*given, *itertools.chain.from_iterable(chunk))
                sql = queue_sql.close_held_sql(table.name, self.key, len(chunk))
                out += driver_rows(conn, sql, params)
                continue
            held = update(table).where(self._held(worker, chunk))
            closed = held.values(status=status, reason=reason, finished_at=now)
            out += [(r[0], r[1]) for r in conn.execute(closed.returning(table.c[self.key], table.c.evaluator))]
        return out

    def _keys_in(self, jobs: Sequence[Job]) -> ColumnElement[bool]:
        return tuple_(self.table.c[self.key], self.table.c.evaluator).in_([tuple(job) for job in jobs])

    def _held(self, worker: str, jobs: Sequence[Job]) -> ColumnElement[bool]:
        """Which of ``jobs`` ``worker`` holds, for an update. On PostgreSQL a job whose row another transaction has
        locked is left out rather than waited for: another transaction locks a claimed job only to wait it again or
        to delete it (an ingest rebuilding its invocation, retention), so the claim is lost all the same, and a
        worker that waited while holding the other jobs of its batch could deadlock with it."""
        table = self.table
        held = and_(self._keys_in(jobs), table.c.status == JobStatus.CLAIMED, table.c.claimed_by == worker)
        if self.store.dialect != "postgresql":
            return held  # one writer at a time: nothing to wait for
        key = tuple_(table.c[self.key], table.c.evaluator)
        unlocked = select(table.c[self.key], table.c.evaluator).where(held).with_for_update(skip_locked=True)
        return key.in_(unlocked)

    def _claim(
        self,
        conn: Connection,
        worker: str,
        limit: int,
        lease_seconds: float,
        usage: dict[str, online_usage.EvaluatorUsage] | None,
        now: int,
    ) -> list[Job]:
        """``usage``: the rows :func:`online_usage.lock` took at ``now`` in this transaction, if it did."""
        stale = now - int(lease_seconds * 1e9)
        params = {"claimed": str(JobStatus.CLAIMED), "pending": str(JobStatus.PENDING), "worker": worker, "now": now}
        # claims whose lease ran out first (few), then waiting jobs, oldest first: two index range scans that stop
        # at ``limit``; one query with an OR of both would sort every waiting job, however long the backlog
        rows = self._claimed(conn, _STALE, {**params, "stale": stale}, limit)
        if len(rows) < limit:
            rows += self._claimed(conn, self.waiting, params, limit - len(rows))
        most = self.max_attempts  # rows: key, evaluator, attempts
        worn = [Job(r[0], r[1]) for r in rows if r[2] > most]
        if worn:  # a job that keeps killing its workers is given up, not retried forever
            self._close(conn, worn, JobStatus.FAILED, None, now)
        jobs = [Job(r[0], r[1]) for r in rows if r[2] <= most]
        new = [r for r in rows if r[2] == 1 <= most and r[1] in self.limits] if self.limits else []
        first = collections.Counter(r[1] for r in new) if new else None
        skipped: dict[SkipReason, list[Job]] = {}
        held: list[Job] = []
        if first:  # new targets of evaluators with limits: each asks the hour's row for room
            if usage is None:
                usage = online_usage.lock(conn, self.limits, now)
            self.costliest.apply(usage)
            for name in sorted(first):
                mine = [Job(r[0], name) for r in new if r[1] == name]
                others = self._in_flight(conn, name, sum(r[1] == name for r in rows), usage[name])
                if online_usage.cost_unknown(usage[name], others):  # one target learns what a target costs
                    held += mine[0 if others else 1 :]
                    mine = mine[: 0 if others else 1]
                room, reason = online_usage.take(conn, usage[name], name, len(mine), now, others)
                if reason is not None:
                    skipped.setdefault(reason, []).extend(mine[room:])
        for reason, over in skipped.items():
            self._close(conn, over, JobStatus.SKIPPED, reason, now)
        if held:  # waiting again, the claim not counted as an attempt
            self._hold(conn, held)
        dropped = {job for over in skipped.values() for job in over} | set(held)
        with self._lock:
            self.stats.claimed += len(jobs) - len(dropped)
            self.stats.failed += len(worn)
            for reason, over in skipped.items():
                for job in over:
                    self.stats.skipped[job.evaluator, reason] += 1
        return [job for job in jobs if job not in dropped] if dropped else jobs

    def _claimed(self, conn: Connection, which: str, params: dict[str, Any], limit: int) -> list[Any]:
        """Claim up to ``limit`` of the jobs ``which`` selects: their rows (key, evaluator, attempts). On SQLite by
        the driver's own statement, the evaluators' names bound one by one (no expanding parameter processed)."""
        names = list(self.evaluators)
        if self.store.dialect == "sqlite":
            bound = {f"name_{i}": name for i, name in enumerate(names)}
            return driver_rows(conn, self._driver_claiming(which, len(names)), {**params, **bound, "limit": limit})
        return list(conn.execute(self._claiming(which), {**params, "names": names, "limit": limit}).all())

    def _hold(self, conn: Connection, jobs: Sequence[Job]) -> None:
        for i in range(0, len(jobs), _IN_CHUNK):
            conn.execute(
                update(self.table)
                .where(self._keys_in(jobs[i : i + _IN_CHUNK]))
                .values(status=JobStatus.PENDING, claimed_by=None, claimed_at=None, attempts=self.table.c.attempts - 1)
            )

    def _in_flight(self, conn: Connection, name: str, claimed_now: int, usage: online_usage.EvaluatorUsage) -> int:
        """Evaluator ``name``'s targets being scored by others (claimed before this claim): their cost is not
        counted yet; with a budget, it keeps room for them (none read without one)."""
        if not usage.limits.budgeted:
            return 0
        table = self.table
        count = select(func.count()).where(table.c.status == JobStatus.CLAIMED, table.c.evaluator == name)
        return max(0, conn.execute(count.select_from(table)).scalar_one() - claimed_now)

    def _close(
        self, conn: Connection, jobs: Sequence[Job], status: JobStatus, reason: SkipReason | None, now: int
    ) -> None:
        for i in range(0, len(jobs), _IN_CHUNK):
            conn.execute(
                update(self.table)
                .where(self._keys_in(jobs[i : i + _IN_CHUNK]))
                .values(status=status, reason=reason, finished_at=now)
            )

    def _claiming(self, which: str) -> Any:
        """The claim of the jobs ``which`` selects, built once (a worker claims batch after batch)."""
        if which not in self._statements:
            self._statements[which] = self._claim_statement(which)
        return self._statements[which]

    def _driver_claiming(self, which: str, names: int) -> str:
        """SQLite: :meth:`_claiming` as the driver's own statement, for ``names`` evaluators (``:name_0``, …)."""
        key = f"claim {names} {which}"
        if key not in self._statements:
            self._statements[key] = self._claim_sql(which, f"({', '.join(f':name_{i}' for i in range(names))})")
        return str(self._statements[key])

    def _claim_statement(self, which: str) -> Any:
        return text(self._claim_sql(which, ":names")).bindparams(bindparam("names", expanding=True))

    def _claim_sql(self, which: str, names: str) -> str:
        postgres = self.store.dialect == "postgresql"
        return queue_sql.claim_sql(self.table.name, self.key, which, self.order, names, postgres=postgres)

    def _complete(self, conn: Connection, worker: str, results: Mapping[Job, Sequence[Mapping[str, Any]]]) -> set[Job]:
        now = time.time_ns()
        jobs = list(results)
        held = set(self._close_held(conn, worker, jobs, JobStatus.DONE, None, now))
        closed = {job for job in jobs if job in held}  # a Job equals the tuple of its fields
        self._store_results(
            conn, worker, results if len(closed) == len(jobs) else {j: results[j] for j in jobs if j in closed}, now
        )
        with self._lock:
            self.stats.completed += len(closed)
            self.stats.lost_claims += len(jobs) - len(closed)
        return closed

    def _store_results(
        self, conn: Connection, worker: str, results: Mapping[Job, Sequence[Mapping[str, Any]]], now: int
    ) -> None:
        """Write the results of the jobs just closed."""
        versions = {name: evaluator.version for name, evaluator in self.evaluators.items()}
        rows = [
            (target, name, versions[name], r["metric"], r["score"], r["label"], r["explanation"], worker, now)
            for (target, name), got in results.items()
            for r in got
        ]
        turn_results.insert(conn, rows)

    def _version(self, evaluator: str) -> str:
        return self.evaluators[evaluator].version

    def counts(self) -> dict[JobStatus, int]:
        """Jobs in the store by status, every evaluator's and every worker's."""
        jobs = self.table
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status)).all()
        return {JobStatus(status): count for status, count in rows}

    def skipped_here(self) -> dict[tuple[str, SkipReason], int]:
        """:attr:`QueueStats.skipped`, read under the queue's lock."""
        with self._lock:
            return dict(self.stats.skipped)

    def skipped_in_store(self) -> dict[tuple[str, SkipReason], int]:
        """Jobs closed as skipped, by evaluator and reason (every process's)."""
        jobs = self.table
        query = (
            select(jobs.c.evaluator, jobs.c.reason, func.count())
            .where(jobs.c.status == JobStatus.SKIPPED)
            .group_by(jobs.c.evaluator, jobs.c.reason)
        )
        with self.store.engine.connect() as conn:
            return {(name, SkipReason(reason)): n for name, reason, n in conn.execute(query)}

    def usage(self) -> dict[str, online_usage.EvaluatorUsage]:
        """The hour's and the day's use of each of this queue's evaluators with limits (every process's)."""
        if not self.limits:
            return {}
        with self.store.engine.connect() as conn:
            return online_usage.read(conn, self.limits, time.time_ns())
