"""``toolpath collect --workers N``: N worker processes serve one port, so that decoding, cleaning, redaction,
rebuilding and the store's client work use every core.

This process (the parent) binds the OTLP/HTTP socket and starts the workers (``spawn``: fresh interpreters, no
threads or connections inherited); each is a whole :class:`~toolpath.collector.service.CollectorService`, served the
OTLP/HTTP connections the parent accepts and deals to the workers in turn (:mod:`toolpath.collector.handoff`), and
binds OTLP/gRPC with ``SO_REUSEPORT`` (gRPC's default on Linux: the kernel hands each connection to one of them).
Every guarantee of one collector holds, as for several collectors on one store: a 2xx only once
the spans and their invocations are committed; PostgreSQL takes a lock per trace, SQLite one write lock per
transaction (``BEGIN IMMEDIATE``), so any arrival order across workers gives the same invocations.

With ``--online`` every worker also scores: its job queue enqueues in its own ingest transactions and its
threads claim jobs from the store, with leases, as several collectors on one store do.

The parent restarts a worker that dies, stops them all (SIGTERM: each finishes its requests in flight) when it is
told to stop, and they die with it if it is killed (``PR_SET_PDEATHSIG``). ``/metrics`` adds up every worker's
values, whichever worker answers (prometheus-client's multiprocess mode, in a folder the parent removes at exit).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolpath.config import SPOOL_DRAIN_SECONDS
from toolpath.errors import ConfigError, ToolpathError

logger = logging.getLogger("toolpath.collector.workers")
_START_SECONDS = 120.0
_STOP_SECONDS = 30.0
"""How long stopping workers have to finish the requests in flight (and, with a spool, as long again to write what
waits in it) before they are killed."""
_PR_SET_PDEATHSIG = 1


WorkerTotals = tuple[int, dict[str, int], dict[str, int]]
"""What a worker did, returned when it stops: spans stored, limits hit, and the online ``scored`` / ``shed`` with
the spans it left in its spool (``spool_left``)."""
WorkerRun = Callable[["WorkerSpec", "socket.socket | None", Callable[[], None]], WorkerTotals]


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to build its service (plain values: it crosses to a new process)."""

    store_url: str
    host: str
    http_port: int
    grpc_port: int
    token: str | None
    max_body_bytes: int
    max_in_flight: int
    limits: tuple[int, int, int]
    redact: tuple[tuple[str, ...], tuple[str, ...]] | None
    """Extra keys and patterns of the redactor, ``None``: no redaction."""
    log_format: str
    run: WorkerRun
    """What a worker process runs: builds its service from this spec, serves ``channel``, calls ``started()``
    once it serves, and returns what it did. A module-level function (it crosses to the new process by name):
    the command that starts the workers composes the service, so this module needs none of its parts."""
    online: str | None = None
    """The ``online.toml`` each worker scores with (jobs are shared through the store), ``None``: no scoring."""
    online_run: tuple[str, int] | None = None
    """The id and start (ns) of the evaluation run online scoring keeps an eval set's cases in: made once, by the
    command, so that every worker adds to one run."""
    spool: str | None = None
    """The folder every worker spools exports in (each claims files of its own there), ``None``: no spool."""
    spool_max_bytes: int = 0
    metrics_dir: str = ""
    ui_token: str | None = None
    """The UI's token when the workers also serve ``toolpath ui`` (``None``: no UI); one for every worker."""
    ui_sessions: str | None = None
    """The file (SQLite, in a private folder of the command's) where every worker keeps the UI's login sessions:
    a login at one is a login at all, a logout at one a logout at all."""
    ui_behind_tls: bool = False
    """Browsers reach the UI through a proxy that terminates TLS (``--behind-tls``)."""
    judge_budget: tuple[int, int, int, int] = (32, 600, 1_000_000, 1)
    """The command's judge budget (calls in flight, calls and tokens per minute) and the processes sharing it."""
    instances: bool = True
    """Whether Vertex AI's ``evaluateInstances`` is served (else refused, 403)."""
    sizing_every: int = 60
    """Seconds between a worker's sizing lines (``--sizing-every``)."""


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def serve(spec: WorkerSpec, count: int, ready: Callable[[], None]) -> tuple[int, Counter[str], Counter[str]]:
    """Run ``count`` workers until SIGTERM / SIGINT; ``ready()`` once all of them serve. Returns the spans they
    stored, the limits they hit, and the invocations they ``scored`` and jobs they ``shed`` online (of the
    workers that stopped cleanly)."""
    import multiprocessing

    from prometheus_client.multiprocess import mark_process_dead

    from toolpath.collector.handoff import Dealer, channel_pair
    from toolpath.collector.http import BACKLOG, bind

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    context = multiprocessing.get_context("spawn")
    results: Any = context.Queue()
    with tempfile.TemporaryDirectory(prefix="toolpath-metrics-") as metrics_dir:
        spec = WorkerSpec(**{**spec.__dict__, "metrics_dir": metrics_dir})
        sock = bind(spec.host, spec.http_port, listen=False) if spec.http_port else None  # listened on once they serve
        channels: list[socket.socket | None] = [None] * count  # the dealer's end of each worker's channel
        dealer = Dealer(sock, channels) if sock is not None else None
        # the workers import prometheus-client with this set: their values go to files every worker reads
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir

        def start(index: int) -> tuple[Any, Any]:
            started = context.Event()
            ours, theirs = channel_pair() if sock is not None else (None, None)
            process = context.Process(
                target=_worker,
                args=(spec, theirs, started, results, index, os.getpid()),
                name=f"toolpath-worker-{index}",
            )
            process.start()
            if theirs is not None:  # the worker has its own copy now: a dead worker's channel refuses connections
                theirs.close()
            old, channels[index] = channels[index], ours
            if old is not None:
                old.close()
            return process, started

        workers = [start(i) for i in range(count)]
        try:
            deadline = time.monotonic() + _START_SECONDS
            while not all(started.is_set() for _, started in workers):  # told to stop meanwhile: once they serve
                if any(not p.is_alive() for p, _ in workers) or time.monotonic() > deadline:
                    raise ConfigError(_start_failure(results))
                time.sleep(0.02)
            if dealer is not None:
                dealer.listener.listen(BACKLOG)
                dealer.start()
            ready()
            while not stop.wait(0.5):
                for index, (process, _) in enumerate(workers):
                    if not process.is_alive():
                        logger.warning("toolpath: worker %d (pid %s) exited (%s); starting another", index,
                                       process.pid, process.exitcode)  # fmt: skip
                        mark_process_dead(process.pid, metrics_dir)
                        workers[index] = start(index)
        finally:
            if dealer is not None and dealer.started:
                dealer.stop()  # no new connections, then the workers finish what they were dealt
            for process, _ in workers:
                if process.is_alive():
                    process.terminate()  # SIGTERM: finish the requests in flight
            stopping = time.monotonic() + _STOP_SECONDS + (SPOOL_DRAIN_SECONDS if spec.spool is not None else 0)
            for process, _ in workers:  # with a spool, each goes on writing what waits for a while
                process.join(max(0.0, stopping - time.monotonic()))
                if process.is_alive():
                    process.kill()
                    process.join()
            for channel in channels:
                if channel is not None:
                    channel.close()
            if sock is not None:
                sock.close()
        stored, hits, online = 0, Counter[str](), Counter[str](scored=0, shed=0)
        with contextlib.suppress(Exception):
            while True:
                _, spans, worker_hits, worker_online = results.get(timeout=0.2)
                if spans is None:  # a worker's error (reported already)
                    continue
                stored += spans
                hits.update(worker_hits)
                online.update(worker_online)
        return stored, hits, online


def _start_failure(results: Any) -> str:
    """What a worker that stopped while starting said (its error), else what is known."""
    with contextlib.suppress(Exception):
        while True:
            _, spans, message, _ = results.get(timeout=1.0)
            if spans is None:
                return str(message)
    return "a collector worker did not start (its error is above)"


def _worker(
    spec: WorkerSpec, channel: socket.socket | None, started: Any, results: Any, index: int, parent: int
) -> None:
    """One worker process: ``spec.run`` serves the connections dealt on ``channel`` until SIGTERM."""
    _die_with(parent)
    try:
        spans, hits, scored = spec.run(spec, channel, started.set)
    except ToolpathError as exc:  # a setting that fails here: the parent reports it, as one line
        results.put((index, None, str(exc), None))
        results.close()
        results.join_thread()
        sys.exit(2)
    results.put((index, spans, hits, scored))
    results.close()
    results.join_thread()


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (a parent killed with -9 leaves no worker serving)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)
