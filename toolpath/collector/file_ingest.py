"""Trace files stored as ``toolpath collect`` stores exports (``toolpath ingest``, ``toolpath eval --from-spans``):
each line, message or trace of a file (:mod:`.trace_files`) is one export to the same :class:`Ingestor`, with
the same redaction, limits, reconstruction and quarantine; the report says what was stored and what was not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolpath.collector.in_process import use_store_pseudonyms
from toolpath.collector.ingestor import Ingestor, rebuild
from toolpath.collector.limits import Limits
from toolpath.collector.trace_files import BadPart, TraceFile, read_trace_file
from toolpath.model import Invocation
from toolpath.redact import Redactor
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.store import Store

__all__ = ["IngestReport", "ingest_trace_files", "read_trace_files"]


@dataclass
class IngestReport:
    """What ingesting trace files did: the files read, spans stored, the invocations they make (as stored,
    redacted), the spans rejected with their reasons and the parts of files that could not be read."""

    files: list[TraceFile]
    spans_stored: int = 0
    invocations: list[Invocation] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    """Spans not stored, each with its reason (no valid ids, the store refused it, over the trace limit)."""
    limit_hits: dict[str, int] = field(default_factory=dict)

    @property
    def bad(self) -> list[BadPart]:
        return [part for file in self.files for part in file.bad]

    @property
    def spans_read(self) -> int:
        return sum(file.spans for file in self.files)

    @property
    def sessions(self) -> list[str]:
        """The sessions of the stored invocations, in first-seen order."""
        return list(dict.fromkeys(inv.session_id for inv in self.invocations))

    def summary(self) -> str:
        return (
            f"stored {self.spans_stored} span(s) of {self.spans_read} read from {len(self.files)} file(s): "
            f"{len(self.invocations)} invocation(s) in {len(self.sessions)} session(s); "
            f"{len(self.rejected)} span(s) rejected, {len(self.bad)} unreadable part(s)"
        )


def read_trace_files(paths: Sequence[Path]) -> list[TraceFile]:
    """Every file read before anything is stored: one that cannot be read at all is an error naming it."""
    return [read_trace_file(path) for path in paths]


def ingest_trace_files(
    store: Store, files: Sequence[TraceFile], *, redactor: Redactor | None, limits: Limits | None = None
) -> IngestReport:
    """Store ``files`` (:func:`read_trace_files`) through an :class:`Ingestor` as ``collect`` would store them
    sent as exports, one export per line, message or trace."""
    limits = limits or Limits()
    if redactor is not None:  # the same pseudonyms as every collector sharing the store
        use_store_pseudonyms(redactor, store)
    ingestor = Ingestor(store, redactor=redactor, limits=limits)
    report = IngestReport(list(files))
    records: list[SpanRecord] = []
    for file in files:
        report.rejected += file.rejected
        for batch in file.batches:
            quarantined = ingestor.store_records(batch).quarantined
            if quarantined:
                report.rejected.append(f"{file.path}: {quarantined} span(s) quarantined: the store refused them")
            records += batch
    over_limit = limits.hits.get("spans_over_trace_limit", 0)
    if over_limit:
        report.rejected.append(f"{over_limit} span(s) over the limit of spans per trace")
    report.spans_stored = ingestor.spans_stored
    report.limit_hits = dict(limits.hits)
    ids = list(dict.fromkeys(inv.invocation_id for inv in rebuild(records)))
    report.invocations = store.invocations_by_id(ids)
    return report
