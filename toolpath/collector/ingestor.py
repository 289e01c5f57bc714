"""``toolpath collect``: an OTLP trace receiver (HTTP ``POST /v1/traces`` and gRPC ``TraceService/Export``)
that stores spans and the invocations they make.

A success answer means the spans and the rebuilt invocations are committed: the write happens before the
reply, so a collector killed right after answering has lost nothing it acknowledged. With a spool
(:mod:`toolpath.store.spool`) the prepared spans are committed there instead, and a drain
(:mod:`.spool_drain`) writes them to the store; a spool that is full or cannot be written answers 503 as an
unavailable store does, and an export too big for the spool even when it is empty is written to the store before
it is answered, as without a spool. Rules, as the OTLP
specification asks:

- protobuf and JSON bodies, gzip-compressed or not; the reply uses the request's encoding;
- a bad body is 400 / INVALID_ARGUMENT with a message, a body over the limit 413, a wrong or missing bearer
  token (when one is configured) 401 / UNAUTHENTICATED, and nothing is stored;
- when ``max_in_flight`` exports are already admitted (being stored or waiting their turn), or the store is
  unavailable, 503 with ``Retry-After`` / UNAVAILABLE, which OTLP exporters retry;
- a value the store cannot take is cleaned (:mod:`.clean`), never refused; a span the store still refuses is
  quarantined alone (logged and counted), and the rest of its request is stored.
"""

from __future__ import annotations

import hmac
import logging
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError

from toolpath.collector import otlp
from toolpath.collector.clean import clean_invocation
from toolpath.collector.genai_logs import LOGS_PATH, decode_logs, logs_reply
from toolpath.collector.limits import Limits
from toolpath.collector.otlp_ids import circle_text
from toolpath.collector.otlp_replies import LeftOut, Reply, TooLarge, encode_reply, error_reply, gunzip
from toolpath.collector.prepare import SpanPreparer
from toolpath.collector.prometheus import ServiceMetrics
from toolpath.collector.reconstruct import build_invocations, is_run_span
from toolpath.collector.sizing import CommitTimes
from toolpath.collector.turns import Turns
from toolpath.config import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_IN_FLIGHT
from toolpath.errors import InternalSignal
from toolpath.model import Invocation
from toolpath.redact import Redactor
from toolpath.store.lock_waits import NoTimeLeft, time_left
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.spool import Spool, SpoolFull, TooBigToSpool
from toolpath.store.store import Store

logger = logging.getLogger("toolpath.collector.ingestor")
TRACES_PATH = "/v1/traces"
_STORE_ATTEMPTS = 3
_RETRY_PAUSE = 0.1
_SAID_CHARS = 1000
"""The longest reason told back to a sender."""


class Ingestor:
    """Decodes, stores and rebuilds; shared by the HTTP and gRPC front ends."""

    def __init__(self, store: Store, *, token: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, redactor: Redactor | None = None,
                 limits: Limits | None = None, metrics: ServiceMetrics | None = None,
                 ingest_threads: int | None = None, spool: Spool | None = None) -> None:  # fmt: skip
        self.store = store
        self.spool = spool
        """Set: an export is answered once its prepared spans are in the spool; a
        :class:`~toolpath.collector.spool_drain.SpoolDrain` writes them to the store."""
        self.metrics = metrics or ServiceMetrics()
        self.limits = limits or Limits()
        self.token = token
        self.max_body_bytes = max_body_bytes
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self.turns = Turns(ingest_threads or default_ingest_threads(store))
        """Held while an export is decoded and stored (:meth:`admitted`); online scoring in the same process takes
        them in the gaps between exports (:mod:`toolpath.collector.turns`)."""
        self._counting = threading.Lock()
        self._told_too_big = False
        """An export too big to spool was logged (once as a warning, then at DEBUG)."""
        self.spans_stored = 0
        self.commit_times = CommitTimes()
        """How long each write transaction took (the store's commit latency, for :mod:`.sizing`)."""
        """Spans this ingestor added to the store: not those the trace limit turned away, nor one the store held
        already (an export sent again)."""
        self._preparer = SpanPreparer(redactor, self.limits)

    @property
    def redactor(self) -> Redactor | None:
        """Applied to every span before it is stored (``None``: no redaction)."""
        return self._preparer.redactor

    def authorized(self, header: str | None) -> bool:
        if not self.token:
            return True
        expected = f"Bearer {self.token}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """An export's place: one of ``max_in_flight`` (``Busy`` when none is free, before its body is decoded),
        then its turn to decode and store. Only ``ingest_threads`` exports of a process take their turn at once
        (default: one on SQLite, whose writes take turns anyway; two on PostgreSQL, so that one export's round
        trips overlap another's decoding): more threads would only contend for the interpreter, and the one
        holding the store's write lock would wait for it longest."""
        m = self.metrics
        if not self._slots.acquire(blocking=False):
            m.exports_refused.inc()
            raise Busy("too many exports in flight")
        m.exports_in_flight.inc()
        try:
            with self.turns if self.spool is None else nullcontext():  # spooling is not the store's write
                yield
        finally:
            m.exports_in_flight.dec()
            self._slots.release()

    def store_records(self, records: list[Any]) -> LeftOut:
        """Write records and rebuild their traces, or with a spool, commit them to it (:class:`SpoolFull` when it
        is); raises what the store raised when it is unavailable. A span the store still refuses once cleaned is
        quarantined alone; returns what was left out (when spooled, only those the preparer could not redact: the
        others are counted when written)."""
        if not records:
            return LeftOut()
        self.metrics.spans_received.inc(len(records))
        ready = self._preparer.prepare(records)
        unredactable = len(records) - len(ready)  # quarantined by the preparer: never stored unredacted
        if unredactable:
            self.metrics.spans_rejected.labels("quarantined").inc(unredactable)
        if self.spool is not None and ready:  # (none ready: nothing to spool)
            try:
                self.spool.put(ready)
            except SpoolFull:
                self.metrics.exports_refused.inc()
                raise
            except TooBigToSpool as exc:  # it would never fit: written now, answered once committed
                self.metrics.exports_unspooled.labels("too_big").inc()
                level, self._told_too_big = (logging.DEBUG if self._told_too_big else logging.WARNING), True
                logger.log(level, "toolpath: an export of %d span(s) is too big to spool (%s): written to the store "
                           "before it is answered (a larger --spool-max-bytes spools such exports)", len(ready),
                           exc)  # fmt: skip
            except ValueError:  # a value the spool's format cannot hold: written now instead
                self.metrics.exports_unspooled.labels("unspoolable_value").inc()
                logger.warning("toolpath: an export's spans could not be spooled; written to the store directly")
            else:
                self.metrics.spool_spans.set(self.spool.pending_spans)
                return LeftOut(quarantined=unredactable)
            with self.turns:
                return self.write_prepared(ready, spooled=False).with_quarantined(unredactable)
        return self.write_prepared(ready, spooled=False).with_quarantined(unredactable)

    def write_prepared(self, ready: list[SpanRecord], *, spooled: bool = True) -> LeftOut:
        """Store prepared records (see :meth:`store_records`) and count them; returns what was left out (spans
        quarantined, spans over the trace limit) and the circles of parents the new spans closed.

        When the store becomes unavailable part-way (a batch the store refused a value of is written trace by
        trace, each committed alone), what is raised follows the traces already committed. For an export
        (``spooled`` false) they are counted as stored, a span refused alone as quarantined, and only the rest as
        rejected ``store_error`` (the exporter sends them again). Spooled spans stay in the spool and are counted
        when their batch is written again."""
        done = _Written()
        try:
            self._ingest(ready, done)
        except Exception as exc:
            if not spooled and store_unavailable(exc):
                self._count(done)
                self.metrics.spans_rejected.labels("store_error").inc(len(ready) - done.committed - done.quarantined)
            raise
        self._count(done)
        return LeftOut(done.quarantined, done.over_limit, self.limits.max_spans_per_trace, tuple(done.cycles))

    def _count(self, done: _Written) -> None:
        m = self.metrics
        with self._counting:
            self.spans_stored += done.stored
        m.spans_stored.inc(done.stored)
        if done.over_limit:
            m.spans_rejected.labels("trace_limit").inc(done.over_limit)
        if done.quarantined:
            m.spans_rejected.labels("quarantined").inc(done.quarantined)
        if done.in_cycles:
            self.limits.count("spans_in_parent_cycles", done.in_cycles)
            logger.warning("toolpath: %d stored span(s) can never be a run: %s", done.in_cycles,
                           "; ".join(done.cycles[:3]))  # fmt: skip
        m.invocations_written.inc(done.written)

    def _ingest(self, records: list[SpanRecord], done: _Written) -> None:
        """Store ``records`` in one transaction; if the store refuses a value, trace by trace, then span by span,
        so that only a span refused alone is lost (quarantined: logged and counted). Adds to ``done`` as each
        transaction commits; raises when the store is unavailable (the client retries)."""
        if not records:
            return
        try:
            written, limits = self._write(records)
        except Exception as exc:
            if store_unavailable(exc):
                self.metrics.store_errors.inc()
                raise
            failure = exc
        else:
            done.committed += len(records)
            done.stored += limits.taken
            done.written += written
            done.over_limit += limits.turned_away
            done.in_cycles += limits.in_cycles
            done.cycles += limits.cycles
            return
        traces: dict[str, list[SpanRecord]] = {}
        for record in records:
            traces.setdefault(record.trace_id, []).append(record)
        parts = list(traces.values()) if len(traces) > 1 else [[r] for r in records] if len(records) > 1 else None
        if parts is not None:
            for part in parts:
                self._ingest(part, done)
            return
        [record] = records
        logger.error("toolpath: span %s/%s quarantined: the store refuses it: %r", record.trace_id, record.span_id,
                     failure)  # fmt: skip
        self.limits.count("spans_quarantined")
        done.quarantined += 1

    def _write(self, records: list[SpanRecord]) -> tuple[int, _WriteLimits]:
        """``store.ingest``, tried again after a transient database error (a dropped connection, a locked SQLite
        file): the write is idempotent and its transaction was rolled back. Returns the invocations written and
        what the committed transaction took of the spans (new ones stored, spans the trace limit turned away)."""
        m = self.metrics
        spent: list[float] = []

        def timed_rebuild(spans: list[SpanRecord]) -> list[Invocation]:
            started = time.perf_counter()
            try:
                return rebuild(spans)
            finally:
                spent.append(time.perf_counter() - started)

        for attempt in range(_STORE_ATTEMPTS):
            spent.clear()
            limits = _WriteLimits(self.limits)
            try:
                began = time.perf_counter()
                written = self.store.ingest(records, timed_rebuild, is_run_span, limits)
                self.commit_times.add(time.perf_counter() - began)  # what the minute's sizing line reports
            except Exception as exc:
                if not store_unavailable(exc) or attempt + 1 == _STORE_ATTEMPTS or not time_left():
                    raise  # (no time left: the caller's deadline, lock_waits.bounded, has passed)
                m.store_retries.inc()
                time.sleep(_RETRY_PAUSE * (attempt + 1))
            else:
                if spent:  # one export's rebuilding, before and in its transaction
                    m.rebuild_seconds.observe(sum(spent))
                return written, limits
        raise AssertionError("unreachable")

    def handle_http(self, path: str, headers: Any, read_body: Callable[[int], bytes]) -> Reply:
        """The whole HTTP exchange as a function of path, headers and body (``read_body(n)``)."""
        lowered = {str(k).lower(): str(v) for k, v in headers.items()}
        refusal = self.check_request(path, lowered)
        if refusal is not None:
            return refusal
        return self.handle_body(lowered, read_body(int(lowered.get("content-length") or 0)), path)

    def check_request(self, path: str, headers: dict[str, str]) -> Reply | None:
        """What can be answered before the body is read (``headers`` with lowercase names): route, token,
        content type (required: a body without one is refused, so a browser page cannot post spans), length."""
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        json_reply = content_type == "application/json"
        if path.split("?", 1)[0] not in (TRACES_PATH, LOGS_PATH):
            return error_reply(
                404, f"no route {path}; OTLP traces go to {TRACES_PATH}, logs to {LOGS_PATH}", json_reply
            )
        if not self.authorized(headers.get("authorization")):
            return error_reply(401, "missing or wrong bearer token", json_reply)
        if content_type not in ("application/x-protobuf", "application/protobuf", "application/json"):
            shown = repr(content_type) if content_type else "none"
            return error_reply(415, f"content type {shown}: use application/x-protobuf or application/json", json_reply)
        raw_length = headers.get("content-length")
        if raw_length is not None:
            try:
                length = int(raw_length)
            except ValueError:
                return error_reply(400, "bad Content-Length", json_reply)
            if length < 0:
                return error_reply(400, "bad Content-Length", json_reply)
            if length > self.max_body_bytes:
                return error_reply(
                    413, f"body of {length} bytes is over the {self.max_body_bytes}-byte limit", json_reply
                )
        return None

    def handle_body(self, headers: dict[str, str], body: bytes, path: str = TRACES_PATH) -> Reply:
        """Decode, store and rebuild a request's body (``headers`` with lowercase names, already checked): spans
        (``/v1/traces``), or the GenAI events among logs (``/v1/logs``)."""
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        json_reply = content_type == "application/json"
        encoding = (headers.get("content-encoding") or "").strip().lower()
        if encoding == "gzip":
            try:
                body = gunzip(body, self.max_body_bytes)
            except TooLarge:
                return error_reply(413, f"decompressed body is over the {self.max_body_bytes}-byte limit", json_reply)
            except (OSError, EOFError, zlib.error):
                return error_reply(400, "body is not valid gzip", json_reply)
        elif encoding not in ("", "identity"):
            return error_reply(415, f"unsupported Content-Encoding {encoding!r}", json_reply)
        try:
            with self.admitted():
                if path.split("?", 1)[0] == LOGS_PATH:
                    return self._decode_and_store_logs(body, content_type, json_reply)
                return self._decode_and_store(body, content_type, json_reply)
        except Busy as exc:
            return error_reply(503, str(exc), json_reply, retry_after=True)

    def _decode_and_store(self, body: bytes, content_type: str, json_reply: bool) -> Reply:
        rejected: list[str] = []
        try:
            records = otlp.decode(body, content_type, rejected)
        except otlp.OtlpDecodeError as exc:
            return error_reply(400, self.said(str(exc)), json_reply)
        if rejected and not records:
            return error_reply(400, self.said(rejected[0]), json_reply)
        try:
            left = self.store_records(records)
        except SpoolFull as exc:
            return error_reply(503, str(exc), json_reply, retry_after=True)
        except Exception:
            logger.exception("toolpath: storing %d span(s) failed", len(records))
            return error_reply(503, "the store is unavailable", json_reply, retry_after=True)
        return encode_reply(self.outcome(rejected, left), 200, json_reply)

    def _decode_and_store_logs(self, body: bytes, content_type: str, json_reply: bool) -> Reply:
        try:
            decoded = decode_logs(body, content_type)
        except otlp.OtlpDecodeError as exc:
            return error_reply(400, self.said(str(exc)), json_reply)
        try:
            left = self.store_records(decoded.records)
        except SpoolFull as exc:
            return error_reply(503, str(exc), json_reply, retry_after=True)
        except Exception:
            logger.exception("toolpath: storing %d GenAI event(s) failed", len(decoded.records))
            return error_reply(503, "the store is unavailable", json_reply, retry_after=True)
        return encode_reply(logs_reply(decoded, left, self.said), 200, json_reply)

    def said(self, message: str) -> str:
        """``message`` as it may go back to the sender: redacted like what is stored (a refused span's name or
        value can hold a secret, and the sender's logs would keep it)."""
        redactor = self.redactor
        clean = redactor.text(message) if redactor is not None else message
        return clean if len(clean) <= _SAID_CHARS else clean[:_SAID_CHARS] + "…"  # redacted first, then cut

    def outcome(self, rejected: list[str], left: LeftOut) -> ExportTraceServiceResponse:
        """The reply to a stored request: OTLP's partial success when spans were left out (not decodable, ids that
        cannot join a trace, refused by the store, over the trace limit), counted; those left out are logged too.
        Spans stored that close a circle of parents with an earlier export's are a warning: its message, with no
        span counted rejected (OTLP's form of a warning)."""
        reply = ExportTraceServiceResponse()
        if rejected:
            self.limits.count("spans_rejected", len(rejected))
            logger.warning("toolpath: %d span(s) of an export rejected: %s", len(rejected),
                           self.said("; ".join(rejected[:3])))  # fmt: skip
        reasons = [*rejected[:3], *left.reasons()]
        if reasons:
            reply.partial_success.rejected_spans = len(rejected) + left.rejected
            reply.partial_success.error_message = self.said("; ".join(reasons))
        return reply


class _WriteLimits:
    """The limits as one write applies them, counting the spans it stores and those the trace limit turns away
    from it (other writes run alongside: the shared counters cannot say whose they are)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # the store offers every write's new spans to admit() when there is a limit: without one, a limit no
        # trace reaches, so that what it stores is still counted (a span stored before is not offered again)
        limit = limits.max_spans_per_trace
        self.max_spans_per_trace = limit if limit is not None else sys.maxsize
        self.turned_away = 0
        self.taken = 0
        """Spans new to the store this write inserted."""
        self.in_cycles = 0
        self.cycles: list[str] = []
        """Each circle of parents this write closed with spans stored before, as told."""

    def admit(self, stored: dict[str, int], new: Sequence[SpanRecord]) -> list[SpanRecord]:
        admitted = self.limits.admit(stored, new)
        self.turned_away += len(new) - len(admitted)
        self.taken += len(admitted)
        return admitted

    def closed_cycles(self, cycles: Sequence[Sequence[SpanRecord]]) -> None:
        """Told by the store: counted once the write commits (:meth:`Ingestor._count`), not in a retried one."""
        for cycle in cycles:
            self.in_cycles += len(cycle)
            self.cycles.append(
                f"trace {cycle[0].trace_id}: spans whose parents go round a circle (span ids "
                f"{circle_text([s.span_id for s in cycle])}), closed by spans of different exports, were stored "
                "but can never be a run"
            )

    def cap(self, invocations: list[Invocation]) -> list[Invocation]:
        return self.limits.cap(invocations)


def default_ingest_threads(store: Store) -> int:
    """Exports a process decodes and stores at once unless told: see :meth:`Ingestor.admitted`."""
    return 1 if store.dialect == "sqlite" else 2


def rebuild(spans: list[SpanRecord]) -> list[Invocation]:
    """The invocations of ``spans``, storable."""
    return [clean_invocation(inv) for inv in build_invocations(spans)]


def store_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the store cannot be reached or used now (as opposed to refusing a value)."""
    unavailable = OperationalError | InterfaceError | DisconnectionError | SQLAlchemyTimeoutError | NoTimeLeft
    return isinstance(exc, unavailable) or bool(getattr(exc, "connection_invalidated", False))


@dataclass
class _Written:
    """What :meth:`Ingestor.write_prepared` has committed so far, transaction by transaction."""

    committed: int = 0
    """Spans whose transaction committed: stored, turned away by the trace limit, or stored before."""
    stored: int = 0
    """Spans the store did not hold before and now holds."""
    written: int = 0
    """Invocations written."""
    over_limit: int = 0
    """Spans the trace limit turned away, of those committed."""
    quarantined: int = 0
    """Spans the store refused alone."""
    in_cycles: int = 0
    """Spans stored that close a circle of parents with spans stored before."""
    cycles: list[str] = field(default_factory=list)
    """Those circles, as told."""


class Busy(InternalSignal):
    """Too many writes in flight: the client should retry."""
