"""The thread that writes what waits in a collector's spool (:mod:`toolpath.store.spool`) to the store.

It takes the oldest batches, up to :data:`DRAIN_SPANS` spans, writes them in one ingest transaction (taking one of
the process's ingest turns, as an export would), then removes them from the spool. While the store is unavailable
(or its write lock held longer than :data:`LOCK_WAIT`) it keeps them and tries again, waiting longer each time (up
to :data:`MOST_PAUSE` seconds): exporters go on being answered until the spool is full. Stopping, it goes on until
its deadline and no further: a write's waits for the store's locks end by then (:mod:`toolpath.store.lock_waits`),
and no write starts after it. A batch written and not yet removed when the process dies is written again by the
next one: the store's ingest is idempotent.
"""

from __future__ import annotations

import logging
import threading
import time

from toolpath.collector.ingestor import Ingestor, store_unavailable
from toolpath.store.lock_waits import bounded
from toolpath.store.spool import Spool

logger = logging.getLogger("toolpath.collector.spool_drain")
DRAIN_SPANS = 512
"""Spans written in one transaction at most: small exports that wait are written together (a transaction's fixed
cost is shared), an SDK exporter's batch of 512 alone (writing four such batches at once cost 5-7% more CPU a span
than one at a time: larger lookups, nothing shared)."""
FIRST_PAUSE = 0.1
MOST_PAUSE = 5.0
_IDLE_WAIT = 0.5
LOCK_WAIT = 5.0
"""The longest a drain write waits for the store's write lock (SQLite's busy wait, PostgreSQL's lock wait) before
it gives up and tries again later: a write that started waiting just before SIGTERM ends well within the drain's
shutdown time."""
OVERRUN = 2.0
"""How long past its deadline a stopping drain waits for a write that is still running (the waits it can bound
end by the deadline; another process's turn at a SQLite store's write lock, or the disk, may not) before it stops
waiting for it."""
CLAIM_EVERY = 10.0
"""How often the drain looks for files that processes stopped since it started left."""


class SpoolDrain:
    """``start()`` draining ``spool`` into ``ingestor``'s store; ``stop(timeout)`` writes what still waits, for at
    most ``timeout`` seconds, and says how many spans it left for the next start."""

    def __init__(self, ingestor: Ingestor, spool: Spool, batch_spans: int = DRAIN_SPANS) -> None:
        self.ingestor = ingestor
        self.spool = spool
        self.batch_spans = batch_spans
        self._stop = threading.Event()
        self._deadline: float | None = None
        self._thread = threading.Thread(target=self._run, name="toolpath-spool-drain", daemon=True)

    def start(self) -> SpoolDrain:
        self.ingestor.metrics.spool_spans.set(self.spool.pending_spans)  # what an earlier run left, shown at once
        self._thread.start()
        return self

    def stop(self, timeout: float) -> int:
        """Drain what waits (at most ``timeout`` seconds; a write still running then is waited for :data:`OVERRUN`
        more), stop; returns the spans left in the spool."""
        self._deadline = time.monotonic() + timeout
        self._stop.set()
        self.spool.arrived.set()
        if self._thread.ident is not None:
            self._thread.join(timeout + OVERRUN)
        left = self.spool.pending_spans  # a batch being written is still there: counted
        if left:
            logger.warning("toolpath: %d span(s) left in the spool %s; the next collector to open it writes them",
                           left, self.spool.folder)  # fmt: skip
        if self._thread.is_alive():  # its files stay open for it: the process's exit lets them go
            logger.warning("toolpath: a write of spooled spans still runs %.0f s past the drain time (waiting for "
                           "another process's turn at the store's write lock, or a slow disk): left to the exit; "
                           "the next start writes its spans (again, if it commits)", OVERRUN)  # fmt: skip
            return left
        self.spool.close()
        return left

    def _run(self) -> None:
        pause = FIRST_PAUSE
        next_claim = time.monotonic() + CLAIM_EVERY
        while True:
            if self._stop.is_set() and self._deadline is not None and time.monotonic() >= self._deadline:
                return
            self.spool.arrived.clear()
            try:
                if time.monotonic() >= next_claim and not self._stop.is_set():
                    next_claim = time.monotonic() + CLAIM_EVERY  # files processes stopped since left: drained here
                    if self.spool.claim_left():
                        self.ingestor.metrics.spool_spans.set(self.spool.pending_spans)
                drained = self._once()
            except Exception as exc:  # the thread never ends on an error: what waits would wait for good
                if store_unavailable(exc):
                    logger.warning("toolpath: the store is unavailable (%s); %d span(s) wait in the spool", exc,
                                   self.spool.pending_spans)  # fmt: skip
                else:  # a spool file that cannot be read or updated (a full disk), or a bug
                    logger.exception("toolpath: writing spooled spans failed; trying again")
                if self._stop.is_set():  # stopping: try again until the deadline, not past it
                    time.sleep(min(pause, max(0.0, (self._deadline or 0.0) - time.monotonic())))
                else:
                    self._stop.wait(pause)
                pause = min(pause * 2, MOST_PAUSE)
                continue
            pause = FIRST_PAUSE
            if not drained:
                if self._stop.is_set():
                    return
                self.spool.arrived.wait(_IDLE_WAIT)

    def _once(self) -> bool:
        """Write the oldest waiting batches to the store, then remove them; ``False`` when nothing waits."""
        batch = self.spool.take(self.batch_spans)
        if batch is None:
            return False
        if not self._take_turn():
            return True  # the deadline came first: the loop ends
        try:
            with bounded(LOCK_WAIT, lambda: self._deadline):
                self.ingestor.write_prepared(batch.records)
        finally:
            self.ingestor.turns.release()
        if batch.unreadable:
            self.ingestor.metrics.spans_rejected.labels("quarantined").inc(batch.unreadable)
        self.spool.done(batch)  # raising here: the batch is written again, which the store's ingest allows
        self.ingestor.metrics.spool_spans.set(self.spool.pending_spans)
        return True

    def _take_turn(self) -> bool:
        """One of the process's ingest turns (online scoring may hold them), waited for until the deadline once
        there is one; ``False`` when it passed first."""
        while True:
            deadline = self._deadline
            wait = LOCK_WAIT if deadline is None else min(LOCK_WAIT, deadline - time.monotonic())
            if wait <= 0:
                return False
            if self.ingestor.turns.acquire(timeout=wait):
                return True
