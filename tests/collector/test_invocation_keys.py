"""Invocations are keyed by trace and span id (docs/spec.md §3): a span id reused by another trace is another run."""

from __future__ import annotations

import json

from tests.helpers.builders import otlp_json
from toolpath.collector.ingestor import Ingestor
from toolpath.model import invocation_key


def in_session(body: bytes, session: str) -> bytes:
    export = json.loads(body)
    agent = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    agent["attributes"].append({"key": "gen_ai.conversation.id", "value": {"stringValue": session}})
    return json.dumps(export).encode()


def post(ingestor: Ingestor, body: bytes) -> int:
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    return ingestor.handle_http("/v1/traces", headers, lambda _n: body).status


def test_a_second_trace_reusing_the_root_span_id_is_a_second_invocation(store):
    first, second = f"{1:017x}{'e' * 15}", f"{2:017x}{'e' * 15}"
    root = "a" + "e" * 15  # the agent span id both exports use
    ingestor = Ingestor(store)
    assert post(ingestor, in_session(otlp_json(first, tool_calls=2), "alice")) == 200
    assert post(ingestor, in_session(otlp_json(second, tool_calls=3), "bob")) == 200
    assert post(ingestor, in_session(otlp_json(first, tool_calls=2), "alice")) == 200  # a retry changes nothing

    stored = {inv.invocation_id: inv for inv in store.list_invocations()}
    assert set(stored) == {invocation_key(first, root), invocation_key(second, root)}
    alice, bob = stored[invocation_key(first, root)], stored[invocation_key(second, root)]
    assert (alice.session_id, alice.trace_id, alice.span_id, len(alice.tool_calls)) == ("alice", first, root, 2)
    assert (bob.session_id, bob.trace_id, bob.span_id, len(bob.tool_calls)) == ("bob", second, root, 3)
    assert sorted((s["session_id"], s["invocations"]) for s in store.list_sessions()) == [("alice", 1), ("bob", 1)]
