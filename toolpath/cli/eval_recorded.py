"""``toolpath eval SET --from-store`` / ``--from-spans FILE…``: ADK eval sets scored against recorded traffic,
nothing run (:mod:`toolpath.evaluation.evalsets.recorded_cases`)."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from toolpath.cli.output import console, progress
from toolpath.errors import ConfigError
from toolpath.private_files import write_private


@dataclass(frozen=True)
class RecordedSelection:
    """Which recorded sessions eval cases may pair with, and how."""

    match: str = "id"
    each: bool = False
    agent_name: str | None = None
    since: datetime | None = None
    attributes: tuple[str, ...] = ()
    session_ids: tuple[str, ...] = ()


def parse_attributes(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--session-attribute {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def eval_recorded_sets(
    dataset: Path,
    *,
    config_path: Path | None,
    store_url: str | None,
    from_spans: Sequence[Path],
    selection: RecordedSelection,
    output: Path | None,
    adk_history: Path | None,
    quiet: bool,
    no_cache: bool,
    otlp_endpoint: str | None = None,
) -> None:
    """Pair the eval set's cases with recorded sessions (of ``store_url``, or of ``from_spans`` ingested first)
    and judge them; exit 1 when a case failed or was not evaluated (unpaired, ambiguous)."""
    from toolpath.cli.evalset_display import eval_set_report
    from toolpath.cli.options import open_existing_store
    from toolpath.collector.file_ingest import read_trace_files
    from toolpath.evaluation.evalsets.evaluator import check_runnable, criteria_of
    from toolpath.evaluation.evalsets.files import load_config, load_eval_sets
    from toolpath.evaluation.evalsets.recorded_cases import Match

    attributes = parse_attributes(selection.attributes)
    if otlp_endpoint is not None and not otlp_endpoint.startswith(("http://", "https://")):
        raise ConfigError(f"--otlp-endpoint {otlp_endpoint!r}: give an OTLP/HTTP URL such as http://127.0.0.1:4318")
    if str(Path.cwd()) not in sys.path and "" not in sys.path:  # ADK custom metrics: module.function
        sys.path.insert(0, str(Path.cwd()))
    eval_sets = load_eval_sets(dataset, config_path)
    for eval_set in eval_sets:  # every criterion checked before anything is read or stored
        check_runnable(eval_set, criteria_of(eval_set))
    config = load_config(config_path) if config_path is not None else None
    files = read_trace_files(from_spans) if from_spans else []  # a file that is no trace: an error now
    since = (
        selection.since.replace(tzinfo=UTC) if selection.since and selection.since.tzinfo is None else selection.since
    )
    with tempfile.TemporaryDirectory(prefix="toolpath-spans-") as folder:
        ingested: set[str] | None = None
        if from_spans:
            store, ingested = _ingested(files, store_url, Path(folder))
        else:
            store = open_existing_store(store_url, writing="toolpath eval stores its run in it")
        from toolpath.evaluation.evalsets.recorded_cases import pair_cases, score_recorded_sessions, select_sessions

        sessions = select_sessions(
            store,
            agent_name=selection.agent_name,
            since=since,
            attributes=attributes,
            session_ids=selection.session_ids,
        )
        if ingested is not None:  # the files' sessions, not whatever else --store holds
            sessions = [s for s in sessions if s.session_id in ingested]
        pairings = pair_cases(eval_sets, sessions, match=Match(selection.match), each=selection.each)
        judge = _judge(no_cache)
        started_ns = time.time_ns()
        with progress(len(pairings), "scoring recorded cases", quiet) as bar:
            scored = score_recorded_sessions(pairings, config=config, judge=judge, store=store, on_case=bar.advance)
        result = scored.result
        if store_url is not None or not from_spans:
            from toolpath.evaluation.evalsets.evaluator import save_evalset_run

            source = ", ".join(map(str, from_spans)) if from_spans else "recorded sessions"
            save_evalset_run(
                store,
                result,
                dataset=f"{dataset} against {source}",
                agent=None,
                criteria={
                    str(s.path or s.eval_set_id): {n: {**c.options, "threshold": c.threshold} for n, c in plan.items()}
                    for s in eval_sets
                    for plan in [criteria_of(s, config)]
                },
                started_ns=started_ns,
            )
        store.close()
    if otlp_endpoint is not None:
        from toolpath.evaluation.evalsets.recorded_cases import export_results
        from toolpath.evaluation.online.result_export import ResultExporter

        exporter = ResultExporter(otlp_endpoint, service_name="toolpath-eval")
        try:
            sent = export_results(scored, exporter)
        finally:
            exporter.shutdown()
        console.print(f"sent {sent} gen_ai.evaluation.result event(s) to {otlp_endpoint}", highlight=False)
    if adk_history is not None:
        from toolpath.evaluation.evalsets.history import write_adk_history

        for history in write_adk_history(result, adk_history):
            console.print(f"ADK eval history: {history}", highlight=False)
    if output is not None:  # the pairings too: which sessions each case was scored on, or why it was not
        written = result.to_dict()
        written["pairings"] = [
            {"eval_set_id": p.case.eval_set_id, "eval_id": p.case.eval_id, "paired_by": p.how,
             "sessions": [s.session_id for s in p.sessions] if p.reason is None else [], "not_evaluated": p.reason}
            for p in scored.pairings
        ]  # fmt: skip
        write_private(output, json.dumps(written, indent=2, ensure_ascii=False, default=str) + "\n")
    eval_set_report(console, result, quiet=quiet)
    paired = [p for p in scored.pairings if p.reason is None]
    used = {s.session_id for p in paired for s in p.sessions}
    console.print(
        f"paired {len(paired)} of {len(scored.pairings)} case(s) with {len(used)} recorded session(s) "
        f"of {len(sessions)}",
        highlight=False,
    )
    for pairing in scored.unpaired:
        console.print(f"NOT EVALUATED {pairing.where}: {pairing.reason}", highlight=False, style="yellow")
    if not scored.passed:
        raise click.exceptions.Exit(1)


def _ingested(files: Sequence[Any], store_url: str | None, folder: Path) -> tuple[Any, set[str]]:
    """``files`` stored (into ``store_url``, else a temporary store) with the collector's default redaction, and
    the sessions they hold; a line that could not be read is an error before anything is scored."""
    from toolpath.cli.ingest_command import fail_on_bad_parts, print_ingest_report
    from toolpath.collector.file_ingest import ingest_trace_files
    from toolpath.redact import Redactor
    from toolpath.store.store import Store

    store = Store(store_url or f"sqlite:///{folder / 'spans.db'}", writing="--from-spans stores the files' spans in it")
    report = ingest_trace_files(store, files, redactor=Redactor.build((), {}))
    print_ingest_report(report)
    fail_on_bad_parts(report)
    return store, set(report.sessions)


def _judge(no_cache: bool) -> Any:
    if not no_cache:
        return None  # the store caches the judge's replies
    from toolpath.judges.client import Judge, settings_from

    return Judge(settings_from(None), cache=None)
