"""Redacted identifiers become keyed pseudonyms: two sessions named by e-mail addresses stay two sessions, and
neither address is kept; the key is the store's secret, so every process sharing a store makes the same ones."""

from __future__ import annotations

import json
import re

from sqlalchemy import delete, text

import toolpath
from tests.helpers.builders import otlp_json
from tests.helpers.cli import run_cli
from tests.helpers.collector import Collector
from toolpath.redact import PSEUDONYM_PREFIX, Redactor
from toolpath.store import schema
from toolpath.store.store import Store

ALICE, BOB = "chat-alice@example.com", "chat-bob@example.com"
PSEUDONYM = re.compile(r"^\[REDACTED:[0-9a-f]{24}\]$")


def test_a_redacted_identifier_becomes_a_stable_keyed_pseudonym():
    keyed = Redactor.build()
    keyed.pseudonym_key = b"k1" * 16
    attrs = keyed.attributes({"gen_ai.conversation.id": ALICE, "session.id": BOB, "user.id": "u-42"})
    assert PSEUDONYM.match(attrs["gen_ai.conversation.id"]) and PSEUDONYM.match(attrs["session.id"])
    assert attrs["gen_ai.conversation.id"] != attrs["session.id"]  # two people, two groups
    assert attrs["user.id"] == "u-42"  # nothing to redact: kept as it is
    again = keyed.attributes({"gen_ai.conversation.id": ALICE})["gen_ai.conversation.id"]
    assert again == attrs["gen_ai.conversation.id"]  # the same person, the same group
    other = Redactor.build()
    other.pseudonym_key = b"k2" * 16
    assert other.identifier(ALICE) != again  # another key, another pseudonym: not a plain hash of the address
    assert other.identifier(again) == again  # a pseudonym is never pseudonymised again
    # ids by any instrumentation's key, and inside JSON values; other keys are redacted as before
    nested = keyed.value({"thread_id": ALICE, "userId": ALICE, "note": ALICE, "args": {"session_id": ALICE}})
    assert nested["thread_id"] == nested["userId"] == nested["args"]["session_id"] == again
    assert nested["note"] == "[REDACTED]"
    assert "k1" not in repr(keyed)


def test_the_store_key_is_made_once_shared_and_remade_if_gone(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    first = Store(url).pseudonym_key()
    assert len(first) == 32 and Store(url).pseudonym_key() == first
    assert Store(f"sqlite:///{tmp_path / 'other.db'}").pseudonym_key() != first  # random per store
    store = Store(url)
    with store.engine.begin() as conn:
        conn.execute(delete(schema.store_secrets))
    remade = store.pseudonym_key()
    assert remade != first and store.pseudonym_key() == remade


def sessions_and_rows(store: Store) -> tuple[dict[str, int], str]:
    sessions = {s["session_id"]: s["invocations"] for s in store.list_sessions()}
    with store.engine.connect() as conn:
        rows = json.dumps(
            [[str(v) for v in row] for t in ("sessions", "invocations", "spans") for row in conn.execute(text(f"SELECT * FROM {t}"))]
        )  # fmt: skip
    return sessions, rows


def test_in_process_sessions_keep_apart_under_the_store_pseudonyms(tmp_path, app_spans):
    url = f"sqlite:///{tmp_path / 'p.db'}"
    tracing = toolpath.init(store=url)

    @toolpath.agent(name="chat")
    def chat(prompt: str, session_id: str) -> str:
        return "ok"

    for who in (ALICE, BOB, ALICE, BOB, BOB):
        chat("hi", session_id=who)
    assert toolpath.flush()
    sessions, rows = sessions_and_rows(tracing.store)
    keyed = Redactor(pseudonym_key=Store(url).pseudonym_key())
    assert sessions == {keyed.pseudonym(ALICE): 2, keyed.pseudonym(BOB): 3}
    assert "alice" not in rows and "bob" not in rows
    exported = json.dumps([dict(s.attributes or {}) for s in app_spans.get_finished_spans()])
    assert "alice" not in exported and keyed.pseudonym(ALICE) in exported  # the application's exporter too
    # the id the application knows finds its session
    shown = run_cli(tmp_path, "sessions", "show", BOB, "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    session = json.loads(shown.stdout)
    assert session["session_id"] == keyed.pseudonym(BOB) and len(session["invocations"]) == 3
    assert tracing.store.get_session("chat-carol@example.com") is None


def test_collectors_sharing_a_store_make_the_same_pseudonyms(tmp_path, postgres_url):
    store = Store(postgres_url)
    with store.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(schema.metadata.tables)}"))
    first, second = Collector(tmp_path / "a", postgres_url), Collector(tmp_path / "b", postgres_url)
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
    first.start()
    second.start()
    try:
        for i, (collector, who) in enumerate([(first, ALICE), (second, ALICE), (second, BOB), (first, BOB)]):
            body = otlp_json(f"{i + 1:032x}", 1, session=who)
            assert collector.post(body, "application/json")[0] == 200
    finally:
        first.stop()
        second.stop()
    sessions, rows = sessions_and_rows(store)
    keyed = Redactor(pseudonym_key=store.pseudonym_key())
    assert sessions == {keyed.pseudonym(ALICE): 2, keyed.pseudonym(BOB): 2}
    assert all(s.startswith(PSEUDONYM_PREFIX) for s in sessions)
    assert "alice" not in rows and "bob" not in rows
    store.close()


def test_without_a_store_the_key_is_the_environments_or_the_processs(monkeypatch):
    import hashlib
    import hmac

    from toolpath import redact

    monkeypatch.setenv(redact.PSEUDONYM_KEY_ENV, "shared-by-every-replica")
    redact._process_key.cache_clear()
    try:
        expected = hmac.new(b"shared-by-every-replica", ALICE.encode(), hashlib.sha256).hexdigest()[:24]
        assert Redactor.build().identifier(ALICE) == f"[REDACTED:{expected}]" == Redactor.build().identifier(ALICE)
        monkeypatch.delenv(redact.PSEUDONYM_KEY_ENV)
        redact._process_key.cache_clear()
        random_key = Redactor.build().identifier(ALICE)
        assert PSEUDONYM.match(random_key) and random_key != f"[REDACTED:{expected}]"
        assert Redactor.build().identifier(ALICE) == random_key  # stable within the process
    finally:
        redact._process_key.cache_clear()
