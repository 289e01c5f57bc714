"""ROUGE tokenisation: ADK 2.x's tokenizer reproduced exactly, and toolpath's own (docs/spec.md §6).

``rouge_score``'s tokenizer keeps only ``[a-z0-9]`` runs, so Chinese, Thai or Greek text scores 0 against
itself. Two tokenizers fix that; both equal ``rouge_score``'s on ASCII text, bit for bit.

:func:`adk_tokenize` is ADK 2.x's ``_UnicodeAwareTokenizer`` (``final_response_match_v1``), quirks included, so
``response_match_score`` gives ADK's number on every input: after NFKC and lower-casing, each character of the
CJK ideograph, hiragana, katakana (with ``・`` and ``ー``) and hangul-syllable blocks is a token; in Thai, Lao,
Khmer and Myanmar each base character starts a new token that its combining marks and any following word
characters join (``ก12`` is one token); every other run of letters, digits and combining marks is a word
(``_`` and punctuation split words; Hangul jamo stay inside a word), and a word that is all ASCII goes through
``rouge_score``'s tokenizer and Porter stemmer while any other is kept whole and not stemmed.

:func:`tokenize` is toolpath's, used by the ``rouge*`` metrics. It goes further than ADK's:

- text is NFKC-normalised and lower-cased;
- ASCII words go through ``rouge_score``'s own tokenizer and Porter stemmer (words over 3 characters), so
  English scores are bit-for-bit those of ``rouge_score``;
- each CJK ideograph (extensions and compatibility blocks too), kana and hangul syllable or jamo is its own
  token;
- Thai, Lao, Khmer, Myanmar and similar scripts written without spaces are split into grapheme clusters
  (a base character and its combining marks); digits after them are words of their own;
- any other word with non-ASCII letters (``café``, ``Ελλάδα``) is kept whole and not stemmed.

Stems are cached: the Porter stemmer dominates ROUGE's cost and a vocabulary repeats.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from nltk.stem import porter
from rouge_score import tokenize as rouge_tokenize

_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
_stemmer = porter.PorterStemmer()

# Scripts written without spaces between words, split into grapheme clusters.
_CLUSTER_SCRIPT_RANGES = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x1A20, 0x1AAF),  # Tai Tham
)
# Characters that are words of their own: CJK ideographs, kana, hangul.
_SINGLE_CHAR_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0x1100, 0x11FF),  # Hangul jamo
    (0x3130, 0x318F),  # Hangul compatibility jamo
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width katakana
    (0x20000, 0x2FA1F),  # CJK extensions B-F, supplement
)


def _in(ranges: tuple[tuple[int, int], ...], char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


@functools.lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """Porter stem of an ASCII token, as ``rouge_score`` applies it (only to tokens over 3 characters)."""
    return _stemmer.stem(token) if len(token) > 3 else token


def _ascii_tokens(text: str, use_stemmer: bool) -> list[str]:
    tokens = _ASCII_TOKEN.findall(text)
    return [stem(t) for t in tokens] if use_stemmer else tokens


def tokenize(text: str, use_stemmer: bool = False) -> list[str]:
    """Tokens of ``text`` for ROUGE (see the module docstring)."""
    if text.isascii():
        return _ascii_tokens(text.lower(), use_stemmer)
    text = unicodedata.normalize("NFKC", text).lower()
    if text.isascii():
        return _ascii_tokens(text, use_stemmer)
    tokens: list[str] = []
    for word in _words(text):
        if word.isascii():
            tokens.extend(_ascii_tokens(word, use_stemmer))
        else:
            _split_word(word, use_stemmer, tokens)
    return tokens


def _words(text: str) -> list[str]:
    """Runs of word characters; unlike ``\\w``, combining marks (Thai vowel signs, accents) belong to words."""
    words: list[str] = []
    current: list[str] = []
    for char in text:
        if char.isalnum() or char == "_" or unicodedata.category(char)[0] == "M":
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def _split_word(word: str, use_stemmer: bool, out: list[str]) -> None:
    run: list[str] = []

    def flush() -> None:
        if run:
            piece = "".join(run)
            out.extend(_ascii_tokens(piece, use_stemmer) if piece.isascii() else [piece])
            run.clear()

    for char in word:
        if _in(_SINGLE_CHAR_RANGES, char):
            flush()
            out.append(char)
        elif _in(_CLUSTER_SCRIPT_RANGES, char):
            flush()
            if unicodedata.category(char).startswith("M") and out and _in(_CLUSTER_SCRIPT_RANGES, out[-1][-1]):
                out[-1] += char  # a combining mark joins the cluster before it
            else:
                out.append(char)
        elif unicodedata.category(char).startswith("M") and not run and out:
            out[-1] += char
        else:
            run.append(char)
    flush()


# --- ADK 2.x's _UnicodeAwareTokenizer, exactly -------------------------------------------------------------


def _adk_is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0x3040 <= code <= 0x309F  # hiragana
        or 0x30A0 <= code <= 0x30FF  # katakana, with the middle dot and the prolonged sound mark
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
    )


def _adk_is_non_spaced(code: int) -> bool:
    return (
        0x0E00 <= code <= 0x0E7F  # Thai
        or 0x0E80 <= code <= 0x0EFF  # Lao
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x1000 <= code <= 0x109F  # Myanmar
    )


def adk_tokenize(text: str, use_stemmer: bool = True) -> list[str]:
    """Tokens of ``text`` exactly as ADK 2.x's ``_UnicodeAwareTokenizer`` gives them (see the module
    docstring); ``response_match_score`` uses it with the stemmer."""
    if text.isascii():  # NFKC leaves ASCII as it is; then ADK's rule is rouge_score's
        return _ascii_tokens(text.lower(), use_stemmer)
    text = unicodedata.normalize("NFKC", text).lower()
    if text.isascii():
        return _ascii_tokens(text, use_stemmer)
    pieces: list[str] = []
    append = pieces.append
    category = unicodedata.category
    for char in text:
        code = ord(char)
        if code < 0x80:
            append(char if char.isalnum() else " ")
        elif _adk_is_cjk(code):
            append(" ")
            append(char)
            append(" ")
        elif _adk_is_non_spaced(code):
            if category(char)[0] != "M":
                append(" ")  # a base character starts a cluster; what follows it joins until a space
            append(char)
        elif char.isalnum() or category(char)[0] == "M":
            append(char)
        else:
            append(" ")
    tokens: list[str] = []
    for word in "".join(pieces).split():
        if word.isascii():
            tokens.extend(_ascii_tokens(word, use_stemmer))
        else:
            tokens.append(word)
    return tokens


class AdkTokenizer:
    """A ``rouge_score`` tokenizer object applying :func:`adk_tokenize`."""

    def __init__(self, use_stemmer: bool = True) -> None:
        self.use_stemmer = use_stemmer

    def tokenize(self, text: str) -> list[str]:
        return adk_tokenize(text, self.use_stemmer)


class RougeTokenizer:
    """A ``rouge_score`` tokenizer object (``.tokenize(text)``) applying toolpath's :func:`tokenize`."""

    def __init__(self, use_stemmer: bool = False) -> None:
        self.use_stemmer = use_stemmer

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text, self.use_stemmer)


def rouge_score_tokens(text: str, use_stemmer: bool) -> list[str]:
    """``rouge_score``'s own tokenization, for comparison in tests and benchmarks."""
    return rouge_tokenize.tokenize(text, _stemmer if use_stemmer else None)
