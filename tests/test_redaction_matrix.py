"""The redaction canary matrix: secrets and personal data (a password under a ``password`` key, an API key, a JWT,
a GitHub token, an e-mail address, an ``Authorization: Bearer`` header, a card number) put in every place a
value can travel — tool arguments and results, prompts (text and dict), agent answers (text and list), exception
messages, span events, attributes the application adds to toolpath's spans, resource attributes, span names,
event names and attribute keys of another instrumentation, session ids — and looked for in every output: the
store (raw spans and invocations), ``toolpath sessions show``, ``toolpath export``, the HTML report and the OTLP
re-export to a receiver on 127.0.0.1. None may appear anywhere.

Also: secrets as object keys in tool arguments and results, span links' attributes, the instrumentation scope.

Two ways in: an agent traced in its own process by ``toolpath.init`` (its own provider, with canaries in its
resource, exporting OTLP too), and raw OTLP from another instrumentation sent to ``toolpath collect``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.helpers.cli import run_cli
from tests.helpers.collector import Collector
from tests.helpers.otlp_sink import OtlpSink
from toolpath.store import schema
from toolpath.store.store import Store

PASSWORD = "pw-Canary-7741"
API_KEY = "sk-canaryAPIKEY0123456789abcdefXYZ"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5"
GITHUB_PAT = "github_pat_11CANARY0000000000000000abcdef"
EMAIL = "canary.person@example.org"
BEARER = "bearerCanaryToken123456"
CARD = "4111 1111 1111 1111"
FREE_KEY = "fkCanaryFreeText8812"
FREE_TOKEN = "ftCanaryFreeToken5530"
GLUED = "ghp_" + "CanaryGlued" * 4
"""A GitHub token glued to the word before it."""
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYCANARYKEY"  # in parts: no scanner takes it for a leak
NON_ASCII_EMAIL = "zoë.canary@bücher.de"
ESCAPED = "escCanary4471"
"""A password under a JSON-escaped key (``pass\\u0077ord``) in text that is not JSON."""
PEM_BODY = "MIIEvQIBADANCanaryPem0000"
COOKIE = "cookieCanary9931"
CANARIES = (
    PASSWORD, API_KEY, JWT, GITHUB_PAT, EMAIL, BEARER, CARD, CARD.replace(" ", ""), "canary.person", FREE_KEY,
    FREE_TOKEN, GLUED, "CanaryGluedCanary", AWS_SECRET, NON_ASCII_EMAIL, "zoë.canary", ESCAPED, PEM_BODY, COOKIE,
)  # fmt: skip
ALL = (
    f"key {API_KEY} jwt {JWT} pat {GITHUB_PAT} mail {EMAIL} card {CARD} password={PASSWORD} api_key={FREE_KEY} "
    f"token: {FREE_TOKEN} id42{GLUED} aws_secret_access_key={AWS_SECRET} to {NON_ASCII_EMAIL} "
    f'{{"pass\\u0077ord": "{ESCAPED}"}} -----BEGIN PRIVATE KEY-----{PEM_BODY}-----END PRIVATE KEY-----\n'
    f"Authorization: Bearer {BEARER}\nCookie: sid={COOKIE}"
)
"""One text holding every canary (the password as ``password=…``, keys as ``api_key=…``, ``token: …`` and
``aws_secret_access_key=…``, as free text has them, a token glued to a word, an address in another script, a JSON
key escaped, a PEM key, then header lines, whose value is the rest of their line)."""
CUT_NAME = "n" * 1000 + GLUED + " tail"
"""A span name whose token straddles the name column's cut (1,024 characters)."""
SESSION = f"chat-{EMAIL}"

AGENT = textwrap.dedent(
    """
    import contextlib, sys
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    ALL, PASSWORD, EMAIL, SESSION, API_KEY = sys.argv[3:8]
    provider = TracerProvider(resource=Resource.create(
        {"service.name": "matrix", "app.owner": ALL, f"app.{EMAIL}": "a key holding an address", "db.password": PASSWORD}
    ))
    trace.set_tracer_provider(provider)

    import toolpath

    toolpath.init(store=sys.argv[1], otlp_endpoint=sys.argv[2])
    other = trace.get_tracer(f"other.instrumentation {EMAIL}", attributes={"scope.note": ALL})

    @toolpath.tool
    def lookup(query: str, config: dict) -> dict:
        span = trace.get_current_span()
        span.set_attribute("app.note", ALL)
        span.set_attribute(f"app.{EMAIL}", "a key holding an address")
        span.add_event(f"looked up for {ALL}", {"detail": ALL, "password": PASSWORD})
        link = trace.Link(span.get_span_context(), {"link.note": ALL, "password": PASSWORD})
        with other.start_as_current_span(f"GET /users/{EMAIL}?key={ALL}", links=[link]) as inner:
            inner.set_attribute(f"http.header.{EMAIL}", ALL)
            inner.set_attribute("http.request.header.authorization", f"Bearer {ALL}")
            inner.add_event(f"retry for {EMAIL}", {"password": PASSWORD, "note": ALL})
        return {"found": ALL, "password": PASSWORD, "items": [ALL, {"password": PASSWORD}], EMAIL: {API_KEY: 1}}

    @toolpath.tool
    def fail(reason: str) -> None:
        raise RuntimeError(f"failed on {ALL}; config {{'password': '{PASSWORD}'}}")

    @toolpath.agent(name="matrix_text")
    def text_agent(prompt: str, session_id: str) -> str:
        lookup(ALL, {"password": PASSWORD, "note": ALL, "nested": {"list": [ALL]}, EMAIL: {API_KEY: ALL}})
        with contextlib.suppress(RuntimeError):
            fail(ALL)
        return f"answer {ALL}"

    @toolpath.agent(name="matrix_dict")
    def dict_agent(prompt: dict, session_id: str) -> list:
        lookup(prompt["text"], prompt)
        return [ALL, {"password": PASSWORD, "note": ALL}]

    @toolpath.agent(name="matrix_error")
    def error_agent(prompt: str, session_id: str) -> str:
        lookup(prompt, {})
        raise ValueError(f"agent failed on {ALL}")

    text_agent(f"please {ALL}", session_id=SESSION)
    dict_agent({"text": ALL, "password": PASSWORD, "card": ALL}, session_id=SESSION)
    with contextlib.suppress(ValueError):
        error_agent(f"again {ALL}", session_id=SESSION)
    assert toolpath.flush(timeout=20)
    toolpath.shutdown()
    """
)


def other_instrumentation_export() -> bytes:
    """Raw OTLP/JSON, as another instrumentation sends it: an OpenInference-style agent and tool with canaries in
    the resource, span names, attribute keys and values, events and the session id."""

    def attr(key: str, value: str) -> dict:
        return {"key": key, "value": {"stringValue": value}}

    trace_id, root, tool = "c" * 32, "1" * 16, "2" * 16
    spans = [
        {
            "traceId": trace_id, "spanId": root, "name": f"agent run for {EMAIL}", "kind": 1,
            "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
            "attributes": [attr("openinference.span.kind", "AGENT"), attr("session.id", SESSION),
                           attr("user.id", EMAIL), attr("input.value", f"please {ALL}"),
                           attr("output.value", json.dumps({"answer": ALL, "password": PASSWORD})),
                           attr(f"app.{EMAIL}", ALL)],
            "events": [{"timeUnixNano": "1500", "name": f"note {ALL}",
                        "attributes": [attr("password", PASSWORD), attr("detail", ALL)]}],
            "status": {"code": 2, "message": f"failed on {ALL}"},
        },
        {
            "traceId": trace_id, "spanId": tool, "parentSpanId": root, "name": f"lookup {API_KEY} {CUT_NAME}", "kind": 1,
            "startTimeUnixNano": "2000", "endTimeUnixNano": "3000",
            "attributes": [attr("openinference.span.kind", "TOOL"), attr("tool.name", "lookup"),
                           attr("input.value", json.dumps({"query": ALL, "password": PASSWORD, EMAIL: {API_KEY: 1}})),
                           attr("input.mime_type", "application/json"),
                           attr("output.value", json.dumps([ALL, {"token": BEARER}])),
                           attr(f"http.header.{EMAIL}", ALL)],
            "events": [{"timeUnixNano": "2500", "name": "exception",
                        "attributes": [attr("exception.message", f"boom {ALL}")]}],
        },
    ]  # fmt: skip
    resource = {"attributes": [attr("service.name", "other"), attr("app.owner", ALL), attr(f"host.{EMAIL}", "x")]}
    body = {
        "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": f"scope {EMAIL}"}, "spans": spans}]}]
    }
    return json.dumps(body).encode()


def everything_stored(store: Store) -> str:
    with store.engine.connect() as conn:
        return "\n".join(
            json.dumps([[str(v) for v in row] for row in conn.execute(text(f"SELECT * FROM {table}"))])
            for table in schema.metadata.tables
            if table != "store_secrets"
        )


def outputs(cwd: Path, url: str) -> dict[str, str]:
    """Every way the store's content is shown, as text."""
    store = Store(url)
    found: dict[str, str] = {"store": everything_stored(store)}
    sessions = [s["session_id"] for s in store.list_sessions()]
    assert sessions, "nothing was stored"
    for session in sessions:
        for form in ((), ("--json",)):
            shown = run_cli(cwd, "sessions", "show", session, "--store", url, *form)
            assert shown.returncode == 0, shown.stderr
            found[f"sessions show {session} {form}"] = shown.stdout
    listed = run_cli(cwd, "sessions", "list", "--store", url)
    found["sessions list"] = listed.stdout
    for fmt in ("jsonl", "evalset"):
        exported = run_cli(cwd, "export", "--format", fmt, "--store", url, "--output", f"export.{fmt}")
        assert exported.returncode == 0, exported.stderr
        found[f"export {fmt}"] = (cwd / f"export.{fmt}").read_text()
    scored = run_cli(cwd, "eval", "--from-store", "--store", url, "--metrics", "trajectory_single_tool_use(tool_name=lookup)", "--output", "eval.json")  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    run_id = re.search(r"^run (\S+):", scored.stdout, re.M).group(1)
    reported = run_cli(cwd, "report", "--store", url, "--run", run_id, "--html", "report.html")
    assert reported.returncode == 0, reported.stderr
    found["eval output"] = (cwd / "eval.json").read_text() + scored.stdout
    found["html report"] = (cwd / "report.html").read_text()
    secret = store.pseudonym_key().hex()
    assert not [where for where, shown in found.items() if secret in shown]  # the store's secret is never shown
    store.close()
    return found


@pytest.fixture(scope="module")
def in_process(tmp_path_factory) -> Iterator[dict[str, str]]:
    cwd = tmp_path_factory.mktemp("in_process")
    (cwd / "agent.py").write_text(AGENT)
    url = f"sqlite:///{cwd / 'matrix.db'}"
    sink = OtlpSink()
    try:
        ran = subprocess.run(
            [sys.executable, "agent.py", url, sink.url, ALL, PASSWORD, EMAIL, SESSION, API_KEY],
            cwd=cwd, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        found = outputs(cwd, url)
        found["otlp re-export"] = "\n".join(sink.received)
        found["agent's output"] = ran.stdout + ran.stderr
    finally:
        sink.close()
    yield found


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Iterator[dict[str, str]]:
    cwd = tmp_path_factory.mktemp("collected")
    collector = Collector(cwd).start()
    try:
        assert collector.post(other_instrumentation_export(), "application/json")[0] == 200
    finally:
        collector.stop()
    yield outputs(cwd, collector.store_url)


def assert_no_canary(found: dict[str, str]) -> None:
    leaks = [(where, canary) for where, shown in found.items() for canary in CANARIES if canary in shown]
    assert not leaks, leaks


def test_no_canary_leaves_an_agent_traced_in_process(in_process):
    assert_no_canary(in_process)
    # the values are there, redacted: the matrix looked at real outputs
    assert "lookup" in in_process["html report"] and "matrix_text" in in_process["store"]
    for where in ("store", "otlp re-export"):
        assert "GET /users/" in in_process[where] and "app.owner" in in_process[where], where
        assert "[REDACTED:" in in_process[where], where  # the session id's pseudonym
    assert "[REDACTED]" in in_process["export jsonl"] and "[REDACTED]" in in_process["html report"]


def test_no_canary_leaves_another_instrumentations_spans_collected(collected):
    assert_no_canary(collected)
    assert "lookup" in collected["export jsonl"] and "app.owner" in collected["store"]
    assert "[REDACTED:" in collected["sessions list"]
