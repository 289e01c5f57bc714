"""The redaction corpus (``tests/fixtures/secrets/corpus.toml``): every secret form disappears wherever a string can
be (alone, as a JSON string, inside JSON text, escaped or not; a secret key also as an object key, an attribute
name and a ``key=value``), every clean text stays as it is, and SECURITY.md's promise table is the corpus's."""

from __future__ import annotations

import json

import pytest

from tests.helpers.secrets_corpus import load, promise_table, security_table
from toolpath.redact import Redactor

SECRETS, CLEAN = load()
KEY = b"k" * 32


def redactor() -> Redactor:
    return Redactor(pseudonym_key=KEY)


def test_the_corpus_holds_every_promised_form():
    assert len(SECRETS) >= 150
    assert len({s.id for s in SECRETS}) == len(SECRETS)  # one entry a form
    forms = " ".join(s.text for s in SECRETS)
    for promised in ("aws_secret_access_key=", "AWS_SECRET_ACCESS_KEY=", "pass\\u0077ord", "password     =", "idAKIA",
                     "zoë.łukasiewicz@", "佐藤@", "anna@bücher.de", "Authorization: Basic", "Cookie:", "Set-Cookie:",
                     "PRIVATE KEY-----", "glpat-", "4111 1111-1111", '"pwd"', '"passcode"', '"auth"', '"signature"'):  # fmt: skip
        assert promised in forms, promised
    assert len(CLEAN) >= 40


@pytest.mark.parametrize("case", SECRETS, ids=lambda s: s.id)
def test_a_secret_disappears_from_text_and_what_is_around_it_stays(case):
    out = redactor().text(case.text)
    assert case.secret not in out, out
    assert "[REDACTED" in out
    for kept in case.keep:
        assert kept in out, (kept, out)


@pytest.mark.parametrize("case", SECRETS, ids=lambda s: s.id)
def test_a_secret_disappears_from_json(case):
    r = redactor()
    as_value = json.dumps(r.value({"note": case.text, "items": [case.text]}), ensure_ascii=False)
    assert case.secret not in as_value
    for ascii_only in (False, True):
        document = json.dumps({"note": case.text, "n": 1}, ensure_ascii=ascii_only)
        out = r.text(document)
        assert case.secret not in out and case.secret not in json.loads(out)["note"], out


@pytest.mark.parametrize("case", [s for s in SECRETS if s.key], ids=lambda s: s.id)
def test_a_secret_key_hides_its_value_as_a_key_an_attribute_and_an_assignment(case):
    r = redactor()
    assert r.value({case.key: case.secret, "ok": "x"}) == {case.key: "[REDACTED]", "ok": "x"}
    assert r.attributes({f"app.{case.key}": case.secret}) == {f"app.{case.key}": "[REDACTED]"}
    assert case.secret not in r.text(f"{case.key}={case.secret}")
    assert case.secret not in r.text(f"{case.key}: {case.secret}")


@pytest.mark.parametrize("case", CLEAN, ids=lambda c: c.text[:40])
def test_a_clean_text_stays_as_it_is(case):
    r = redactor()
    assert r.text(case.text) == case.text
    assert r.value({"note": case.text}) == {"note": case.text}
    document = json.dumps({"note": case.text})
    assert r.text(document) == document
    assert r.hits == 0


def test_every_redacted_text_fails_the_cheap_tests():
    """The collector's fast path keeps a span as it is when the cheap tests pass its text: they must never pass a
    text the rules would change, alone or joined with others."""
    r = redactor()
    assert r.has_prefilters
    for case in SECRETS:
        assert not r.finds_nothing(case.text), case.id
        assert not r.finds_nothing("\n".join(c.text for c in CLEAN) + "\n" + case.text), case.id


def test_security_md_promises_what_the_corpus_holds():
    """SECURITY.md's table is made from the corpus: python -m tests.helpers.secrets_corpus --write."""
    assert security_table() == promise_table(SECRETS, CLEAN)
