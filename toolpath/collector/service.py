"""The collector as a service: OTLP/HTTP and OTLP/gRPC servers over one :class:`Ingestor`, started and stopped
together (``toolpath collect``).

A success reply means the spans are committed. ``stop`` stops accepting, finishes the requests in flight, then
stops the online workers the service was given (after the last writes, so their jobs are enqueued).
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpath.collector.grpc_server import make_grpc_server
from toolpath.collector.health import readiness
from toolpath.collector.http import HttpServer
from toolpath.collector.ingestor import Ingestor
from toolpath.collector.limits import Limits
from toolpath.collector.prometheus import ServiceMetrics
from toolpath.collector.routes import GrpcMethod, PostRoute
from toolpath.collector.sizing import DEFAULT_EVERY_SECONDS, SizingReporter
from toolpath.collector.spool_drain import SpoolDrain
from toolpath.config import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_IN_FLIGHT, SPOOL_DRAIN_SECONDS
from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.store.job_status import JobStatus
from toolpath.store.spool import DEFAULT_SPOOL_BYTES, Spool, spool_owner
from toolpath.store.store import Store


@dataclass
class ServiceOptions:
    host: str = "127.0.0.1"
    http_port: int = 4318
    grpc_port: int = 4317
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    limits: Limits = field(default_factory=Limits)
    log_to_root: bool = False
    """uvicorn's error and access logs go to the root logger (``--log-format json``)."""
    other_app: Any = None
    """An ASGI app served on the OTLP/HTTP port for every path but OTLP's (``toolpath collect --ui``)."""
    routes: Sequence[PostRoute] = ()
    """More POST routes on the OTLP/HTTP port, behind the same checks (Vertex AI's ``evaluateInstances``)."""
    grpc_methods: Sequence[GrpcMethod] = ()
    """More unary methods on the OTLP/gRPC port, behind the same token."""
    http_channel: socket.socket | None = None
    """Where a parent process that accepts OTLP/HTTP connections deals this worker its share
    (``toolpath collect --workers``: :mod:`toolpath.collector.handoff`); ``None``: bind ``host:http_port`` here."""
    spool: Path | None = None
    """Answer exports once their spans are in a spool in this folder (:mod:`toolpath.store.spool`), and write them
    to the store from there; ``None``: answer after the store's commit."""
    spool_max_bytes: int = DEFAULT_SPOOL_BYTES
    metrics_dir: str | None = None
    """Where the workers sharing a port keep their Prometheus values, so that ``/metrics`` says what all of them
    did whichever one answers (prometheus-client's multiprocess mode); ``None``: this process alone."""


def check_addresses(options: ServiceOptions) -> None:
    """A :class:`ConfigError` when a port is out of range, ``host`` does not resolve, or a port cannot be
    listened on (in use, not allowed): checked before anything is opened or created."""
    if not options.http_port and not options.grpc_port:
        raise ConfigError("both --http-port and --grpc-port are 0: nothing to listen on")
    for option, port in (("--http-port", options.http_port), ("--grpc-port", options.grpc_port)):
        if not 0 <= port <= 65535:
            raise ConfigError(f"{option} {port}: not a port number (0 to 65535; 0 turns it off)")
        if port:
            _probe(options.host, port, option)


def _probe(host: str, port: int, option: str) -> None:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"--host {host!r}: not an address of this machine ({exc})") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"{option} {port}: cannot listen on {host}:{port} ({exc.strerror})") from None


class CollectorService:
    """``start()`` the servers, ``wait()`` for SIGTERM / SIGINT (or ``stop()`` from another thread)."""

    def __init__(
        self, store: Store, options: ServiceOptions, *, redactor: Redactor | None = None, online: Any = None
    ) -> None:
        if not options.http_port and not options.grpc_port:
            raise ConfigError("both --http-port and --grpc-port are 0: nothing to listen on")
        self.options = options
        self.online = online
        self.store = store
        self.metrics = ServiceMetrics(options.metrics_dir)
        if options.metrics_dir is None:
            self.metrics.watch(limits=lambda: dict(options.limits.hits), online=online)
        else:  # every hit counted where all workers' counts add up
            options.limits.listener = self.metrics.limit_hit
            self.metrics.watch(online=online)
        if online is not None:
            online.add_sink(self.metrics)
        self.ingestor = Ingestor(
            store,
            token=options.token,
            max_body_bytes=options.max_body_bytes,
            max_in_flight=options.max_in_flight,
            redactor=redactor,
            limits=options.limits,
            metrics=self.metrics,
            spool=Spool(options.spool, options.spool_max_bytes, spool_owner(store)) if options.spool else None,
        )
        self._drain = SpoolDrain(self.ingestor, self.ingestor.spool) if self.ingestor.spool is not None else None
        self.spool_left = 0
        """Spans left in the spool at shutdown (the store was unavailable): the next start writes them."""
        if online is not None:  # scoring takes this process's turns too, in the gaps between exports
            online.turns = self.ingestor.turns.yielding
        self._stop = threading.Event()
        self._http: Any = None
        self._grpc: Any = None
        self._sizing: SizingReporter | None = None

    @property
    def endpoints(self) -> str:
        o = self.options
        kinds = (("OTLP/HTTP", o.http_port), ("OTLP/gRPC", o.grpc_port))
        return ", ".join(f"{kind} on {o.host}:{port}" for kind, port in kinds if port)

    def start(self) -> CollectorService:
        """Listen. SIGTERM / SIGINT handlers are installed first (from the main thread), so a signal that comes
        as soon as the service answers is a clean stop, never the default kill."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self._stop.set())
        redactor = self.ingestor.redactor
        if redactor is not None:  # every collector sharing the store makes the same pseudonyms
            redactor.pseudonym_key = self.store.pseudonym_key()
        o = self.options
        try:
            self._http = (
                HttpServer(
                    self.ingestor,
                    o.host,
                    o.http_port,
                    ready=self.ready,
                    log_to_root=o.log_to_root,
                    other=o.other_app,
                    routes=o.routes,
                    channel=o.http_channel,
                )
                if o.http_port
                else None
            )
            self._grpc = make_grpc_server(self.ingestor, o.host, o.grpc_port, o.grpc_methods) if o.grpc_port else None
        except (OSError, RuntimeError) as exc:  # taken since check_addresses() looked, or a bad host
            if self._http is not None:
                self._http.shutdown()
            raise ConfigError(f"cannot listen on {o.host} ({exc})") from None
        if self._drain is not None:  # what an earlier run left is written first
            self._drain.start()
        if self._grpc is not None:
            self._grpc.start()
        if self._http is not None:
            self._http.start()
        return self

    def report_sizing(self, report: Callable[..., None], every: float = DEFAULT_EVERY_SECONDS) -> SizingReporter:
        """Start saying, every ``every`` seconds, the figures an operator sizes with (:mod:`.sizing`); stopped with
        the service."""
        online = self.online

        def backlog() -> int | None:
            if online is None:
                return None
            counts = online.queue.counts()
            return counts.get(JobStatus.PENDING, 0) + counts.get(JobStatus.CLAIMED, 0)

        self._sizing = SizingReporter(
            report, lambda: self.ingestor.spans_stored, self.ingestor.commit_times, backlog, every=every
        ).start()
        return self._sizing

    def ready(self) -> tuple[bool, dict[str, Any]]:
        """What ``GET /readyz`` answers: the store reachable at the schema head, the online workers running."""
        return readiness(self.store, self.online, self.ingestor.spool)

    def wait(self) -> None:
        """Block until SIGTERM / SIGINT or :meth:`stop`, then shut down."""
        self._stop.wait()
        self.shutdown()

    def stop(self) -> None:
        self._stop.set()

    def shutdown(self) -> None:
        if self._sizing is not None:
            self._sizing.stop()
        if self._http is not None:
            self._http.shutdown()
        if self._grpc is not None:
            self._grpc.stop(grace=10).wait()
        if self._drain is not None:  # after the last answer: what was answered is written (or kept) before we go
            self.spool_left = self._drain.stop(SPOOL_DRAIN_SECONDS)
        if self.online is not None:
            self.online.stop()

    def summary(self) -> str:
        """One line for the log at shutdown: spans stored, the ingestion limits hit, what the spool still holds."""
        return summary(self.ingestor.spans_stored, self.options.limits.hits, self.spool_left)


def summary(spans_stored: int, limit_hits: Mapping[str, int], spool_left: int = 0) -> str:
    """``stopped; N span(s) stored``, the ingestion limits hit, if any, and the spans left in the spool."""
    hits = ", ".join(f"{what.replace('_', ' ')}: {n}" for what, n in sorted(limit_hits.items()))
    left = f"; {spool_left} span(s) left in the spool, written at the next start" if spool_left else ""
    return f"stopped; {spans_stored} span(s) stored" + (f"; limits hit ({hits})" if hits else "") + left
