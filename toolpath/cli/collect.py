"""``toolpath collect``: the OTLP collector service."""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import socket
import tempfile
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from toolpath.cli.options import judge_budget_options, set_judge_budget, store_option, token_option
from toolpath.cli.output import console
from toolpath.cli.service_config import log_format_option, service_logging, service_settings
from toolpath.collector.supervisor import WorkerSpec, WorkerTotals, default_workers, serve
from toolpath.config import (
    DEFAULT_MAX_ATTRIBUTE_LENGTH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_SPANS_PER_TRACE,
    DEFAULT_MAX_TOOL_CALLS,
    MAX_WORKERS_PER_CORE,
)
from toolpath.errors import ConfigError
from toolpath.private_files import create_private
from toolpath.redact import Redactor
from toolpath.store.spool import DEFAULT_SPOOL_BYTES, check_spool_folder
from toolpath.store.store import Store

if TYPE_CHECKING:
    from toolpath.collector.routes import GrpcMethod, PostRoute
    from toolpath.evaluation.online import OnlineEvaluator
    from toolpath.store.retention import RetentionWorker


class InstancesMode(StrEnum):
    """``--evaluate-instances``: whether Vertex AI's ``evaluateInstances`` is served."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


@service_settings
@click.command()
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--http-port", default=4318, show_default=True, type=int, help="OTLP/HTTP port (0: off).")
@click.option("--grpc-port", default=4317, show_default=True, type=int, help="OTLP/gRPC port (0: off).")
@token_option("Require 'Authorization: Bearer <token>'.")
@click.option(
    "--max-body-bytes",
    default=DEFAULT_MAX_BODY_BYTES,
    show_default=True,
    type=click.IntRange(min=1),
    help="Largest request body.",
)
@click.option(
    "--max-in-flight",
    default=DEFAULT_MAX_IN_FLIGHT,
    show_default=True,
    type=click.IntRange(min=1),
    help="Exports being written at once; more get 503 / UNAVAILABLE so exporters retry later.",
)
@click.option(
    "--spool",
    "spool_text",
    type=click.Path(),
    default=None,
    metavar="DIR",
    help="Answer exports once their spans (redacted) are synced to a spool in this folder; a thread writes them "
    "to the store (docs/collector.md). Default: answer after the store's commit.",
)
@click.option(
    "--spool-max-bytes",
    default=DEFAULT_SPOOL_BYTES,
    show_default=True,
    type=click.IntRange(min=1),
    help="What may wait in the spool (all --workers together, each its share); past it, exports get 503 and "
    "retry. An export larger than a worker's share alone is written to the store before its answer.",
)
@click.option("--redact-key", "redact_keys", multiple=True, help="Also replace values of this key (repeatable).")
@click.option(
    "--redact-pattern", "redact_patterns", multiple=True, help="NAME=REGEX replaced inside strings (repeatable)."
)
@click.option("--no-redact", is_flag=True, help="Store spans as they come (no secret or personal-data redaction).")
@click.option(
    "--max-attribute-length",
    default=DEFAULT_MAX_ATTRIBUTE_LENGTH,
    show_default=True,
    type=click.IntRange(min=1),
    help="Longer values are cut, marked.",
)
@click.option(
    "--max-spans-per-trace",
    default=DEFAULT_MAX_SPANS_PER_TRACE,
    show_default=True,
    type=click.IntRange(min=1),
    help="More are dropped, counted.",
)
@click.option(
    "--max-tool-calls",
    default=DEFAULT_MAX_TOOL_CALLS,
    show_default=True,
    type=click.IntRange(min=1),
    help="Per invocation; more are dropped, marked.",
)
@click.option(
    "--online",
    "online_path",
    type=click.Path(path_type=Path),
    default=None,
    help="online.toml: score stored invocations as they arrive (metrics, sample, filters, references).",
)
@click.option(
    "--workers",
    default=0,
    type=click.IntRange(min=0),
    help="Processes serving the ports (0: one per core); with --online each also scores (jobs shared in the store).",
)
@log_format_option
@click.option("--ui", "with_ui", is_flag=True, help="Also serve toolpath ui on the OTLP/HTTP port.")
@click.option(
    "--behind-tls",
    is_flag=True,
    help="With --ui: browsers reach it through a proxy that terminates TLS (its login cookie is Secure, changes "
    "must come from its https:// pages).",
)
@click.option(
    "--retain-spans", default=None, help="Prune raw spans this old in the background (e.g. 7d; default: keep all)."
)
@click.option(
    "--retain-invocations",
    default=None,
    help="Prune invocations this old, with their tool calls and online scores (e.g. 90d; at least --retain-spans).",
)
@click.option("--prune-every", default="10m", show_default=True, help="How often retention runs.")
@click.option(
    "--prune-exact",
    is_flag=True,
    help="With --retain-spans, spans partitioned by day (PostgreSQL): also delete, by batches, the spans older than "
    "the cutoff in the day it falls inside (else they wait for their day to go whole: up to a day more). SQLite, or "
    "spans in one table: retention is exact already and this changes nothing.",
)
@click.option(
    "--evaluate-instances",
    "instances_mode",
    type=click.Choice([mode.value for mode in InstancesMode]),
    default=InstancesMode.AUTO.value,
    show_default=True,
    help="Serve Vertex AI's evaluateInstances (it asks the judge model): auto serves it behind --token or on "
    "loopback, and refuses it (403) beyond loopback without a token.",
)
@judge_budget_options
@click.option(
    "--sizing-every",
    default=60,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds between the lines that say spans/s, CPU per span, commit latency and the online backlog "
    "(docs/scale.md sizes with them; each --workers process says its own).",
)
def collect(
    store: str | None,
    host: str,
    http_port: int,
    grpc_port: int,
    token: str | None,
    max_body_bytes: int,
    max_in_flight: int,
    spool_text: str | None,
    spool_max_bytes: int,
    redact_keys: tuple[str, ...],
    redact_patterns: tuple[str, ...],
    no_redact: bool,
    max_attribute_length: int,
    max_spans_per_trace: int,
    max_tool_calls: int,
    online_path: Path | None,
    workers: int,
    log_format: str,
    with_ui: bool,
    behind_tls: bool,
    retain_spans: str | None,
    retain_invocations: str | None,
    prune_every: str,
    prune_exact: bool,
    instances_mode: str,
    judge_in_flight: int,
    judge_calls_per_minute: int,
    judge_tokens_per_minute: int,
    sizing_every: int,
) -> None:
    """Receive OTLP traces from agents in other processes and store their invocations.

    \b
        toolpath collect --store postgresql+psycopg://user@db/toolpath
        OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py

    A success reply means the spans are committed (with --spool: to the spool). SIGTERM or Ctrl-C stops
    accepting and finishes the requests in flight. GET /metrics (Prometheus), /healthz and /readyz on the HTTP
    port; Vertex AI's evaluateInstances on both ports (docs/vertex.md). Every option also comes from
    --config FILE (TOML) and TOOLPATH_* variables; the command line wins, then the environment.
    """
    from toolpath.collector.heap import settle_heap
    from toolpath.collector.limits import Limits
    from toolpath.collector.service import CollectorService, ServiceOptions, check_addresses

    # Everything is checked before the store is opened (a new SQLite file is created then): a bad option
    # leaves nothing behind.
    spool_bound_given = (
        click.get_current_context().get_parameter_source("spool_max_bytes") is not ParameterSource.DEFAULT
    )
    if spool_bound_given and spool_text is None:  # from the command line, the environment or the file
        raise ConfigError("--spool-max-bytes needs --spool")
    spool = None
    if spool_text is not None:
        if not spool_text.strip():  # Path("") is the current folder: never a spool nobody named
            raise ConfigError("--spool: empty; give the folder to spool in")
        check_spool_folder(Path(spool_text))
        spool = Path(spool_text).resolve()
    if workers == 0:
        workers = default_workers()
    if workers > (most := MAX_WORKERS_PER_CORE * default_workers()):
        raise ConfigError(
            f"--workers {workers}: at most {most} on this machine ({MAX_WORKERS_PER_CORE} per core; each is a process "
            "of its own)"
        )
    the_store = Store(store, create=False, writing="toolpath collect stores what it receives in it")
    if with_ui and not token and not _is_loopback(host):
        raise ConfigError("--ui off loopback needs --token (the pages show recorded traffic)")
    if behind_tls and not with_ui:
        raise ConfigError("--behind-tls applies to --ui only (the UI's login cookie); OTLP needs no such flag")
    # the UI's changes always need a credential: --token, else one made up now (its login link is printed)
    ui_token = (token or secrets.token_urlsafe(24)) if with_ui else None
    options = ServiceOptions(
        host=host,
        http_port=http_port,
        grpc_port=grpc_port,
        token=token,
        max_body_bytes=max_body_bytes,
        max_in_flight=max_in_flight,
        limits=Limits(max_attribute_length, max_spans_per_trace, max_tool_calls),
        log_to_root=log_format == "json",
        other_app=_ui(the_store, host, ui_token, behind_tls=behind_tls) if ui_token else None,
        spool=spool,
        spool_max_bytes=spool_max_bytes,
    )
    instances = instances_served(InstancesMode(instances_mode), host, token)
    options.routes, options.grpc_methods = _vertex_api(the_store, instances)  # Vertex AI's, on both ports
    judge_budget = (judge_in_flight, judge_calls_per_minute, judge_tokens_per_minute)
    set_judge_budget(*judge_budget, processes=max(1, workers))  # with --workers, each worker keeps its share
    redactor = None if no_redact else _redactor(redact_keys, redact_patterns)
    retention = _retention(the_store, retain_spans, retain_invocations, prune_every, exact=prune_exact)
    online = None
    if online_path is not None:
        from toolpath.evaluation.online import OnlineEvaluator

        online = OnlineEvaluator(the_store, online_path, redactor=redactor)  # metrics, references, judge
    if workers > 1:
        if online is not None and online.exporter is not None:
            online.exporter.shutdown()  # checked here; each worker scores (and exports) with one of its own
        check_addresses(options)
        the_store.upgrade()
        spec = WorkerSpec(
            store_url=the_store.engine.url.render_as_string(hide_password=False), host=host, http_port=http_port,
            grpc_port=grpc_port, token=token, max_body_bytes=max_body_bytes, max_in_flight=max_in_flight,
            limits=(max_attribute_length, max_spans_per_trace, max_tool_calls),
            redact=None if no_redact else (redact_keys, redact_patterns), log_format=log_format, ui_token=ui_token,
            online=str(online_path.resolve()) if online_path is not None else None, run=run_worker,
            online_run=(online.run.run_id, online.run.started_ns) if online and online.run else None,
            spool=str(spool) if spool is not None else None,
            spool_max_bytes=max(1, spool_max_bytes // workers),  # the bound is the folder's: each worker its share
            ui_behind_tls=behind_tls, judge_budget=(*judge_budget, workers), instances=instances,
            sizing_every=sizing_every,
        )  # fmt: skip
        if ui_token is None:
            _serve_workers(spec, workers, the_store.url, retention, online)
            return
        from toolpath.cli.ui_command import login_sessions

        # the UI's login sessions, in a file every worker shares; removed at the end (a restart logs everyone out)
        with tempfile.TemporaryDirectory(prefix="toolpath-ui-") as folder:  # made private (0700)
            file = Path(folder) / "sessions.sqlite"
            create_private(file)  # 0600 before SQLite makes it (its -wal and -shm follow the file's mode)
            shared = dataclasses.replace(spec, ui_sessions=str(file))
            table = login_sessions(path=file)
            table.prepare()
            table.close()
            _serve_workers(shared, workers, the_store.url, retention, online)
        return
    check_addresses(options)  # before the service makes its spool folder: a port in use leaves nothing behind
    service = CollectorService(the_store, options, redactor=redactor, online=online)
    the_store.upgrade()
    with service_logging(log_format) as log:

        def say(line: str, **fields: object) -> None:
            console.print(line) if log is None else log.info(line, extra=fields)

        if online is not None:
            online.start()
        service.start()
        settle_heap()
        service.report_sizing(say, sizing_every)
        if retention is not None:
            retention.start()
        say(
            f"toolpath collecting {service.endpoints} into {the_store.url}" + (" (token required)" if token else ""),
            endpoints=service.endpoints,
            token_required=bool(token),
        )
        _print_login(host, http_port, ui_token, given=bool(token))
        if online is not None:
            metrics, workers = online.metric_names(), online.config.workers
            say(f"online evaluation: {online.described()} on {workers} worker(s)", metrics=metrics, workers=workers)
        service.wait()
        if retention is not None:
            retention.stop()
        if online is not None:
            scored, shed = online.stats.scored, online.queue.stats.shed
            say(f"online: {scored} invocation(s) scored, {shed} shed", scored=scored, shed=shed)
        say(service.summary(), spans_stored=service.ingestor.spans_stored, limits_hit=dict(options.limits.hits),
            spool_left=service.spool_left)  # fmt: skip
    the_store.close()  # a clean stop leaves nothing in SQLite's -wal file


def _serve_workers(
    spec: WorkerSpec, count: int, shown_url: str, retention: RetentionWorker | None, online: OnlineEvaluator | None
) -> None:
    from toolpath.collector.service import summary

    with service_logging(spec.log_format) as log:

        def say(line: str, **fields: object) -> None:
            console.print(line) if log is None else log.info(line, extra=fields)

        def ready() -> None:
            kinds = (("OTLP/HTTP", spec.http_port), ("OTLP/gRPC", spec.grpc_port))
            endpoints = ", ".join(f"{kind} on {spec.host}:{port}" for kind, port in kinds if port)
            say(
                f"toolpath collecting {endpoints} into {shown_url} with {count} workers"
                + (" (token required)" if spec.token else ""),
                endpoints=endpoints,
                token_required=bool(spec.token),
                workers=count,
            )
            _print_login(spec.host, spec.http_port, spec.ui_token, given=bool(spec.token))
            if retention is not None:
                retention.start()
            if online is not None:
                metrics, threads = online.metric_names(), online.config.workers
                say(f"online evaluation: {online.described()} on {count} x {threads} worker(s)", metrics=metrics,
                    workers=count * threads)  # fmt: skip

        stored, hits, scored = serve(spec, count, ready)
        if retention is not None:
            retention.stop()
        if online is not None:
            say(f"online: {scored['scored']} invocation(s) scored, {scored['shed']} shed", **scored)
        left = scored["spool_left"]
        say(summary(stored, hits, left), spans_stored=stored, limits_hit=dict(hits), spool_left=left)


def _ui(store: Store, host: str, token: str, *, behind_tls: bool, sessions: str | None = None) -> object:
    """The UI's app, its login sessions in this process's memory, or in the file ``sessions`` the workers share."""
    from toolpath.cli.ui_command import build_ui, is_loopback, login_sessions

    return build_ui(
        store,
        evalsets=Path("evalsets"),
        token=token,
        loopback_only=is_loopback(host),
        behind_tls=behind_tls,
        sessions=login_sessions(path=Path(sessions) if sessions is not None else None),
    )


def _vertex_api(store: Store, served: bool) -> tuple[list[PostRoute], list[GrpcMethod]]:
    from toolpath.cli.vertex_api import evaluate_instances_api, instances_refused

    return evaluate_instances_api(store) if served else instances_refused(OFF_BEYOND_LOOPBACK)


OFF_BEYOND_LOOPBACK = (
    "evaluateInstances is off on this collector: it listens beyond loopback without a token, and each request asks "
    "the judge model; start it with --token, or with --evaluate-instances on"
)


def instances_served(mode: InstancesMode, host: str, token: str | None) -> bool:
    """Whether ``evaluateInstances`` is served: ``auto`` serves it behind a token or on loopback only."""
    if mode is InstancesMode.AUTO:
        return bool(token) or _is_loopback(host)
    if mode is InstancesMode.ON and not token and not _is_loopback(host):
        console.print(f"warning: evaluateInstances is served on {host} without --token: anyone who reaches the port "
                      "spends this collector's judge budget")  # fmt: skip
    return mode is InstancesMode.ON


def _retention(
    store: Store, spans: str | None, invocations: str | None, every: str, *, exact: bool = False
) -> RetentionWorker | None:
    from toolpath.store.retention import RetentionWorker, parse_duration

    if exact and spans is None:
        raise ConfigError("--prune-exact needs --retain-spans (it says how spans are pruned)")
    interval = parse_duration(every, "--prune-every")
    span_age = parse_duration(spans, "--retain-spans") if spans is not None else None
    invocation_age = parse_duration(invocations, "--retain-invocations") if invocations is not None else None
    if span_age is None and invocation_age is None and store.dialect != "postgresql":
        return None  # on PostgreSQL its rounds make the spans' partitions ahead, pruning or not
    return RetentionWorker(store, spans=span_age, invocations=invocation_age, every=interval, exact=exact)


def _redactor(keys: tuple[str, ...], patterns: tuple[str, ...]) -> Redactor:
    named = {}
    for item in patterns:
        name, eq, regex = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise ConfigError(f"--redact-pattern {item!r}: expected NAME=REGEX")
        try:
            re.compile(regex)
        except re.error as exc:
            raise ConfigError(f"--redact-pattern {name}: not a valid regular expression ({exc})") from None
        named[name.strip()] = regex
    return Redactor.build(keys, named)


def run_worker(spec: WorkerSpec, channel: socket.socket | None, started: Callable[[], None]) -> WorkerTotals:
    """One ``--workers`` process: a collector service built from ``spec``, served the connections dealt on
    ``channel``, until SIGTERM."""
    from toolpath.collector.heap import settle_heap
    from toolpath.collector.limits import Limits
    from toolpath.collector.service import CollectorService, ServiceOptions
    from toolpath.evaluation.online import OnlineEvaluator

    store = Store(spec.store_url, create=False, writing="toolpath collect stores what it receives in it")
    options = ServiceOptions(
        host=spec.host,
        http_port=spec.http_port,
        grpc_port=spec.grpc_port,
        token=spec.token,
        max_body_bytes=spec.max_body_bytes,
        max_in_flight=spec.max_in_flight,
        limits=Limits(*spec.limits),
        log_to_root=spec.log_format == "json",
        other_app=(
            _ui(store, spec.host, spec.ui_token, behind_tls=spec.ui_behind_tls, sessions=spec.ui_sessions)
            if spec.ui_token
            else None
        ),
        http_channel=channel,
        metrics_dir=spec.metrics_dir,
        spool=Path(spec.spool) if spec.spool is not None else None,
        spool_max_bytes=spec.spool_max_bytes,
    )
    options.routes, options.grpc_methods = _vertex_api(store, spec.instances)
    set_judge_budget(*spec.judge_budget[:3], processes=spec.judge_budget[3])
    redactor = None if spec.redact is None else _redactor(*spec.redact)
    online = (
        OnlineEvaluator(store, spec.online, redactor=redactor, run=spec.online_run) if spec.online is not None else None
    )
    with service_logging(spec.log_format) as log:
        service = CollectorService(store, options, redactor=redactor, online=online)  # stops online at the end
        if online is not None:
            online.start()  # its queue enqueues in this worker's ingest transactions; its threads score
        service.start()
        settle_heap()
        worker = f"worker {os.getpid()}"

        def say(line: str, **fields: object) -> None:
            console.print(f"{worker}: {line}") if log is None else log.info(line, extra={**fields, "worker": worker})

        service.report_sizing(say, spec.sizing_every)
        started()
        service.wait()
    scored = {"scored": online.stats.scored, "shed": online.queue.stats.shed} if online is not None else {}
    scored["spool_left"] = service.spool_left  # summed with the others' for the parent's last line
    return service.ingestor.spans_stored, dict(options.limits.hits), scored


def _is_loopback(host: str) -> bool:
    from toolpath.cli.ui_command import is_loopback

    return is_loopback(host)


def _print_login(host: str, port: int, ui_token: str | None, *, given: bool) -> None:
    """The UI's one-time login link, when this command made its token up (a given --token is the user's own):
    on the terminal, never in a log line."""
    if ui_token and not given:
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"toolpath ui on http://{shown}:{port}/sessions?token={ui_token}")  # one line, never wrapped
