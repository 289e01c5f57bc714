"""``toolpath ingest``: trace files stored as ``toolpath collect`` would store them sent live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolpath.cli.options import store_option
from toolpath.cli.output import console
from toolpath.errors import ConfigError

SHOWN_REJECTIONS = 10
"""Rejected spans listed one by one; the rest are counted."""


def redaction_options(fn: Any) -> Any:
    """--redact-key / --redact-pattern / --no-redact, as ``toolpath collect`` takes them."""
    fn = click.option(
        "--no-redact", is_flag=True, help="Store spans as they are (no secret or personal-data redaction)."
    )(fn)
    fn = click.option(
        "--redact-pattern", "redact_patterns", multiple=True, help="NAME=REGEX replaced inside strings (repeatable)."
    )(fn)
    return click.option(
        "--redact-key", "redact_keys", multiple=True, help="Also replace values of this key (repeatable)."
    )(fn)


def build_redactor(keys: tuple[str, ...], patterns: tuple[str, ...], no_redact: bool) -> Any:
    """The redactor the options ask for (``None`` with ``--no-redact``); a bad pattern is an error now."""
    from toolpath.cli.collect import _redactor

    if no_redact and (keys or patterns):
        raise ConfigError("--no-redact stores spans as they are: give no --redact-key or --redact-pattern")
    return None if no_redact else _redactor(keys, patterns)


@click.command(name="ingest")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@store_option
@redaction_options
def ingest_command(
    files: tuple[Path, ...], store: str | None, redact_keys: tuple[str, ...], redact_patterns: tuple[str, ...],
    no_redact: bool,
) -> None:  # fmt: skip
    """Store trace files: OTLP/JSON lines (the OpenTelemetry Collector's file exporter), an OTLP/JSON or protobuf
    export, or Jaeger's JSON, through the collector's decoding, redaction and reconstruction.

    \b
        toolpath ingest traces.jsonl --store sqlite:///toolpath.db
        toolpath ingest ci-artifacts/*.json trace.pb

    Prints what was stored (spans, invocations, sessions) and the spans rejected with their reasons. A line
    (message, trace) that cannot be read is one error naming it, exit 2; the file's other lines are stored.
    """
    from toolpath.collector.file_ingest import ingest_trace_files, read_trace_files
    from toolpath.store.store import Store

    redactor = build_redactor(redact_keys, redact_patterns, no_redact)
    traces = read_trace_files(files)  # every file read before the store is opened
    the_store = Store(store, writing="toolpath ingest stores the files' spans in it")
    report = ingest_trace_files(the_store, traces, redactor=redactor)
    print_ingest_report(report)
    fail_on_bad_parts(report)


def print_ingest_report(report: Any) -> None:
    for file in report.files:
        console.print(f"read {file.path} ({file.format}): {file.spans} span(s)", highlight=False)
    console.print(report.summary(), highlight=False)
    for reason in report.rejected[:SHOWN_REJECTIONS]:
        console.print(f"rejected {reason}", highlight=False, style="yellow")
    if len(report.rejected) > SHOWN_REJECTIONS:
        console.print(f"rejected: and {len(report.rejected) - SHOWN_REJECTIONS} more", style="yellow")


def fail_on_bad_parts(report: Any) -> None:
    """One ``error:`` naming the unreadable lines (the first with its reason), exit 2."""
    bad = report.bad
    if bad:
        more = f"; also {', '.join(f'{p.path} {p.where}' for p in bad[1:])}" if len(bad) > 1 else ""
        raise ConfigError(f"{bad[0].describe()}{more}")
