"""The cheap tests and the narrowed token pattern give the answers of the slow ways they stand for: a literal set
found in one search says what one ``in`` test per literal says, and the provider-token pattern narrowed to a
text's tokens replaces exactly what the whole pattern replaces."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from toolpath.redact_catalogue import DEFAULT_PATTERNS, PROVIDER_TOKENS, Literals, TokenPattern, key_literals

LITERALS = sorted({literal for token in PROVIDER_TOKENS for literal in token.literals})
EXACT = Literals(LITERALS)
KEYS = key_literals(frozenset({"my-secret-thing"}))
PIECES = [*LITERALS, *KEYS.literals, "a", "Z", "0", "f", "_", "-", ".", ":", "/", " ", "ſ", "K", "é", "\n", "PASS"]
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_a_literal_set_finds_what_in_tests_find(text: str) -> None:
    expected = {literal for literal in LITERALS if literal in text}
    assert EXACT.present(text) == expected
    assert EXACT.found_in(text) == bool(expected)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_a_folded_literal_set_finds_what_case_folding_finds(text: str) -> None:
    folded = text.casefold()
    assert KEYS.found_in(text) >= any(literal in folded for literal in KEYS.literals)
    if text.isascii():
        assert KEYS.found_in(text) == any(literal in text.lower() for literal in KEYS.literals)


TOKEN_PIECES = [
    *LITERALS, "FAKEfake0000", "deadbeef", "00000000", "AAAA", "-", "_", ".", "/", ":", " ", "x", "Q~", "8", "us1",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKEN_PIECES), max_size=16).map("".join))
def test_the_narrowed_token_pattern_replaces_what_the_whole_one_does(text: str) -> None:
    whole = re.compile(DEFAULT_PATTERNS["api_key"])
    narrowed = TokenPattern(PROVIDER_TOKENS)
    assert narrowed.sub(lambda m: "<>", text) == whole.sub("<>", text)
    assert (narrowed.search(text) is None) == (whole.search(text) is None)


def test_every_corpus_token_is_narrowed_to_its_own_pattern() -> None:
    pattern = TokenPattern(PROVIDER_TOKENS)
    for token in PROVIDER_TOKENS:
        for literal in token.literals:
            compiled = pattern.narrowed(f"x {literal} y")
            assert compiled is not None and token.pattern in compiled.pattern, (token.provider, literal)
    assert pattern.narrowed("nothing here") is None
