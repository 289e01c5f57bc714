"""Redaction of secrets and personal data, the same rules in the tracer (before export) and the collector
(before anything is stored), for spans from any instrumentation.

Two kinds of rule:

- **keys**: an object key (case-insensitive) whose value is replaced whole, at any depth: ``password``,
  ``api_key``, ``authorization``…
- **patterns**: regular expressions replaced inside any string: API keys (OpenAI, Google, GitHub, Slack, AWS),
  bearer tokens, e-mail addresses and card numbers (15–16 digits passing the Luhn check).

Strings that hold JSON (tool arguments and results, messages) are parsed, redacted value by value and written
back, so a secret nested three levels down in a tool argument is found, and the JSON stays valid.

An **identifier** things are grouped by (a session, user, conversation or thread id: :func:`is_identifier_key`)
that a rule would touch is not cut but replaced whole by a keyed pseudonym, ``[REDACTED:<24 hex>]`` (HMAC-SHA256
of the value with :attr:`Redactor.pseudonym_key`): ``chat-alice@example.com`` and ``chat-bob@example.com`` stay
two sessions, and neither address survives. The key is the store's secret (every process sharing the store
agrees); without a store it is ``$TOOLPATH_PSEUDONYM_KEY``, else random per process.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolpath.config import PSEUDONYM_KEY_ENV

__all__ = ["Redactor", "hide_passwords"]

REDACTED = "[REDACTED]"
"""What a redacted value becomes."""
PSEUDONYM_PREFIX = "[REDACTED:"
"""How a redacted identifier's pseudonym starts: ``[REDACTED:`` + 24 hex digits (96 bits) + ``]``."""
_PSEUDONYM_HEX = 24
"""The pseudonym key of a process with no store (every agent replica exporting to one backend should share it)."""

DEFAULT_KEYS = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "client_secret",
        "api_key",
        "apikey",
        "x-api-key",
        "access_token",
        "refresh_token",
        "token",
        "authorization",
        "cookie",
        "set-cookie",
        "private_key",
        "credentials",
    }
)

DEFAULT_PATTERNS: dict[str, str] = {
    # prefixes no word ends in match glued to a preceding word too (``id42ghp_…``); ``sk-`` and ``AKIA`` need a
    # word boundary (``task-…``)
    "api_key": r"(?:\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{36,}"
    r"|github_pat_[A-Za-z0-9_]{22,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16})",
    # the password of a URL's user info (postgresql://me:s3cret@db/x): the user name stays
    "url_password": r"(?<=://)(?P<keep>[^\s:/@]{1,256}:)[^\s@/]{1,256}(?=@)",
    # starts only where a run of token characters starts: "sk-eyJ…" repeated would otherwise make every "eyJ" in one
    # long run a start that scans the whole run (quadratic)
    "jwt": r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "bearer": r"\b[Bb](?i:earer)\s+[A-Za-z0-9._~+/=-]{8,}",
    # bounded parts (RFC 5321 lengths): every start position costs a bounded scan, so the search is linear
    "email": r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b",
    # 16 digits as 4-4-4-4 or 15 as 4-6-5 (one separator used throughout, or none), not inside a longer word: the
    # digits of a UUID or a hex id never make a card number
    "card": r"(?<![\w-])(?:\d{4}(?P<s1>[ -]?)\d{4}(?P=s1)\d{4}(?P=s1)\d{4}"
    r"|\d{4}(?P<s2>[ -]?)\d{6}(?P=s2)\d{5})(?![\w-])",
    # password=..., passwd: ..., pwd=... in free text and connection strings: the key stays
    "password_assignment": r"(?i)(?P<keep>\b(?:password|passwd|pwd)\s{0,4}[=:]\s{0,4})[^\s&;,'\"]{1,256}",
    # api_key=..., token: ..., client_secret=... in free text (a log line, a URL's query, an error message): the
    # key stays; the same keys are secret as JSON keys (max_tokens and other counts are not matched: \b)
    "secret_assignment": r"(?i)(?P<keep>\b(?:[a-z]{1,20}[_-])?(?:secret|api[_-]?key|apikey|token|private[_-]?key)"
    r"\s{0,4}[=:]\s{0,4})[^\s&;,'\"]{1,256}",
}

SECRET_KEY_PARTS = ("password", "passwd", "secret", "api_key", "apikey", "api-key", "private_key", "credential",
                    "authorization", "cookie", "token")  # fmt: skip
"""A key holding one of these (case-insensitive) is secret: ``db_password``, ``X-Auth-Token``, ``client_secret``…
Token *counts* (``max_tokens``, ``input_tokens``, ``token_count``) are not."""
_TOKEN_COUNT = re.compile(r"tokens|token_?count|num_?token")


@functools.lru_cache(maxsize=8192)
def is_secret_key(key: str) -> bool:
    """Whether a key (an object key or an attribute name's last part) names a secret, by :data:`SECRET_KEY_PARTS`."""
    lower = key.lower()
    if not any(part in lower for part in SECRET_KEY_PARTS):
        return False
    only_token = "token" in lower and not any(p in lower for p in SECRET_KEY_PARTS[:-1])
    return not (only_token and _TOKEN_COUNT.search(lower))


_IDENTIFIER_KEY = re.compile(r"(?:^|[._-])(?:session|conversation|thread|user|enduser|customer|chat)[._-]?id$")


@functools.lru_cache(maxsize=8192)
def is_identifier_key(key: str) -> bool:
    """Whether an attribute or object key names an id things are grouped by: ``gen_ai.conversation.id``,
    ``session.id``, ``user.id``, ``enduser.id``, ``gcp.vertex.agent.session_id``, ``thread_id``, ``userId``…"""
    return _IDENTIFIER_KEY.search(key.lower()) is not None


@functools.lru_cache(maxsize=1)
def _process_key() -> bytes:
    """The pseudonym key when no store gave one: ``$TOOLPATH_PSEUDONYM_KEY``, else random for this process."""
    configured = os.environ.get(PSEUDONYM_KEY_ENV)
    return configured.encode() if configured else secrets.token_bytes(32)


_OTHER, _SECRET, _IDENTIFIER = 0, 1, 2
_SHORTEST = 6
"""No default pattern matches fewer characters (the shortest e-mail address, ``a@b.cd``)."""
_SCALARS = (int, float, bool, type(None))
_DIGIT_RUN = re.compile(r"\d[\d -]{13}")
_ASCII_DIGIT_RUN = re.compile(r"[0-9][0-9 -]{13}")  # the same on ASCII text, faster
_WORD_RUN = re.compile(r"[\w-]*")
_PASSWORD_WORD = re.compile(r"(?i)pass|pwd")
_SECRET_ASSIGNMENT = re.compile(r"(?i)(?:secret|key|token)\s{0,4}[=:]")
"""Where ``secret_assignment`` can match: a secret word right before ``=`` or ``:`` (a JSON key has a quote
between them, and JSON is redacted by its keys)."""
# 'key': 'value' / "key": "value" / key='value' in text that is not JSON (a repr in an error message); bounded
_QUOTED_PAIR = re.compile(
    r"(?P<head>(?P<kq>['\"]?)(?P<key>[A-Za-z0-9_.-]{1,64})(?P=kq)\s{0,4}[:=]\s{0,4})"
    r"(?P<vq>['\"])(?P<value>[^'\"\n]{0,1024})(?P=vq)"
)
_PREFILTERS: dict[str, Callable[[str], bool]] = {
    # cheap tests that rule a default pattern out before its regular expression runs
    "api_key": lambda t: (
        "sk-" in t
        or "AIza" in t
        or ("gh" in t and ("ghp_" in t or "gho_" in t or "ghu_" in t or "ghs_" in t or "ghr_" in t))
        or "github_pat_" in t
        or "k_live_" in t
        or "k_test_" in t
        or "xox" in t
        or "AKIA" in t
    ),
    "jwt": lambda t: "eyJ" in t,
    "bearer": lambda t: "earer" in t.lower(),  # any case: "BeArEr" is a bearer token too
    "email": lambda t: "@" in t,
    "card": lambda t: _card_candidate(t, _DIGIT_RUN),
    "url_password": lambda t: "://" in t,
    "password_assignment": lambda t: _PASSWORD_WORD.search(t) is not None,
    "secret_assignment": lambda t: _SECRET_ASSIGNMENT.search(t) is not None,
}


def _any_prefilter(t: str, low: str | None = None) -> bool:
    """Whether any of :data:`_PREFILTERS` passes (the same tests or looser ones, in one call; ``low``: ``t``
    lowercased, when the caller has it). Each is a substring test, so a text made of others joined passes if any
    of them does."""
    if low is None:
        low = t.lower()
    ascii_only = t.isascii()  # else: (?i) matches more than lowercase does ("ſ" is an "s"), and \d more digits
    return (
        "@" in t
        or "://" in t
        or "eyj" in low
        or "earer" in low
        or "sk-" in t
        or "aiza" in low
        or "xox" in t
        or "akia" in low
        or "k_live_" in t
        or "k_test_" in t
        or "github_pat_" in t
        or ("gh" in t and ("ghp_" in t or "gho_" in t or "ghu_" in t or "ghs_" in t or "ghr_" in t))
        or ("pass" in low or "pwd" in low if ascii_only else _PASSWORD_WORD.search(t) is not None)
        or _SECRET_ASSIGNMENT.search(t) is not None
        or _card_candidate(t, _ASCII_DIGIT_RUN if ascii_only else _DIGIT_RUN)
    )


def _card_candidate(t: str, digit_run: re.Pattern[str]) -> bool:
    r"""Whether a run of digits that may be a card number starts where a card number can (not inside a word: the
    card pattern's ``(?<![\w-])``). Ids made of digits (``s-0000000000000023``, ``call_17000000000001``) are passed
    over a word at a time."""
    pos = 0
    while (found := digit_run.search(t, pos)) is not None:
        start = found.start()
        before = t[start - 1] if start else " "
        if not (before.isalnum() or before == "_" or before == "-"):
            return True
        pos = _WORD_RUN.match(t, start).end()  # type: ignore[union-attr]  # a card starts past this word
    return False


_CACHED_LENGTH, _CACHED_TEXTS = 64, 4096


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@dataclass
class Redactor:
    keys: frozenset[str] = DEFAULT_KEYS
    patterns: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PATTERNS))
    replacement: str = REDACTED
    hits: int = 0
    """Values replaced so far (counted, so a dashboard can show that redaction is working)."""
    pseudonym_key: bytes | None = field(default=None, repr=False)
    """The HMAC key of identifiers' pseudonyms: the store's secret (:meth:`toolpath.store.store.Store.
    pseudonym_key`); ``None``: ``$TOOLPATH_PSEUDONYM_KEY``, else a random key of this process."""

    def __post_init__(self) -> None:
        self._keys_seen: dict[str, str] = {}
        self._clean_keys: set[str] = set()
        self._plain_object_keys: set[str] = set()
        """Object keys that are not secret, name no identifier and are left as they are: values pass on as found."""
        self.keys = frozenset(k.lower() for k in self.keys)
        self._rules = [(name, _PREFILTERS.get(name) if pattern == DEFAULT_PATTERNS.get(name) else None,
                        re.compile(pattern)) for name, pattern in self.patterns.items()]  # fmt: skip
        # every default rule has a cheap test: one call tells whether any of them can match
        self._only_defaults = all(prefilter is not None for _, prefilter, _ in self._rules) and {
            name for name, _, _ in self._rules
        } <= set(_PREFILTERS)
        # a name that holds another is found by finding that one: fewer substrings to look for
        every = sorted(self.keys | frozenset(SECRET_KEY_PARTS))
        self._key_parts = tuple(k for k in every if not any(o != k and o in k for o in every))
        self._clean_texts: set[str] = set()
        """Short values found clean (operation, tool and agent names repeat in every span): looked at once."""
        self._key_kinds: dict[str, tuple[str, int]] = {}
        self._last_resource: tuple[Any, dict[str, Any]] = (None, {})

    @classmethod
    def build(cls, keys: Iterable[str] | None = None, patterns: Mapping[str, str] | None = None) -> Redactor:
        """Defaults plus ``keys`` and ``patterns`` (a pattern named like a default replaces it)."""
        return cls(DEFAULT_KEYS | frozenset(keys or ()), {**DEFAULT_PATTERNS, **(patterns or {})})

    def text(self, text: str) -> str:
        """``text`` with every pattern match replaced; JSON text is redacted structurally."""
        if len(text) < _SHORTEST or text in self._clean_texts:
            return text
        # Most values hold nothing to redact: find out with the cheap tests and one search per pattern.
        if self._only_defaults and not _any_prefilter(text):
            matching = []
        else:
            matching = [rule for rule in self._rules if (rule[1] is None or rule[1](text)) and rule[2].search(text)]
        if not matching and not self._names_a_key(text):
            if len(text) <= _CACHED_LENGTH and len(self._clean_texts) < _CACHED_TEXTS:
                self._clean_texts.add(text)
            return text
        first = text[0] if not text[0].isspace() else text.lstrip()[:1]
        if first == "{" or first == "[":
            try:
                parsed = json.loads(text)
            except ValueError:
                pass
            else:
                cleaned = self.value(parsed)
                return text if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"))
        for name, _, regex in matching:
            text = regex.sub(self._card if name == "card" else self._replace, text)
        if self._names_a_key(text):  # a dict's repr or JSON-like text that is not JSON: quoted key-value pairs
            text = _QUOTED_PAIR.sub(self._pair, text)
        return text

    @property
    def has_prefilters(self) -> bool:
        """Whether every rule is a default one, with a cheap test (:meth:`finds_nothing` works only then)."""
        return self._only_defaults

    def finds_nothing(self, text: str) -> bool:
        """Whether no default rule can change ``text`` nor any part of it, by the cheap tests alone (``False``:
        maybe one can). Each test is a substring test, so texts joined into one pass if the whole does; only
        meaningful when :attr:`has_prefilters`."""
        low = text.lower()
        return self._only_defaults and not _any_prefilter(text, low) and not self._names_a_key(text, low)

    def plain_key(self, key: str) -> bool:
        """Whether an attribute name is left as it is, and its value is not a secret as a whole."""
        known = self._key_kinds.get(key)
        name, kind = known if known is not None else self._key_kind(key)
        return kind != _SECRET and name == key

    def identifier(self, value: str) -> str:
        """An id things are grouped by (a session id): unchanged if no rule touches it, else its pseudonym, so
        that two redacted ids stay two groups."""
        return value if self.text(value) == value else self.pseudonym(value)

    def pseudonym(self, value: str) -> str:
        """``[REDACTED:<hex>]``: the same for the same value and key, unreadable without the key."""
        digest = hmac.new(self.pseudonym_key or _process_key(), value.encode(), hashlib.sha256).hexdigest()
        return f"{PSEUDONYM_PREFIX}{digest[:_PSEUDONYM_HEX]}]"

    def _pair(self, match: re.Match[str]) -> str:
        key = match.group("key")
        if not (key.lower() in self.keys or is_secret_key(key)) or match.group("value") == self.replacement:
            return match.group()
        self.hits += 1
        return f"{match.group('head')}{match.group('vq')}{self.replacement}{match.group('vq')}"

    def _names_a_key(self, text: str, lowered: str | None = None) -> bool:
        """Whether ``text`` may hold a secret key; it only matters inside JSON (or a dict's repr)."""
        if '"' not in text and "'" not in text:
            return False
        if lowered is None:
            lowered = text.lower()
        return any(part in lowered for part in self._key_parts)

    def _replace(self, match: re.Match[str]) -> str:
        self.hits += 1
        keep = match.groupdict().get("keep")
        return keep + self.replacement if keep else self.replacement

    def _card(self, match: re.Match[str]) -> str:
        return self._replace(match) if _luhn(re.sub(r"[ -]", "", match.group())) else match.group()

    def value(self, value: Any, convert: Callable[[Any], Any] | None = None) -> Any:
        """A JSON-like value with secret keys and pattern matches replaced, at any depth. ``convert`` turns other
        objects (models, dataclasses) into plain values first, so they are looked into too."""
        kind = value.__class__
        if kind is str:
            return self.text(value)
        if kind is dict or (kind not in _SCALARS and isinstance(value, Mapping)):
            keys = self.keys
            plain = self._plain_object_keys
            clean = self._clean_texts
            out = {}
            for key, item in value.items():
                if key.__class__ is str and key in plain:  # the usual key: neither secret, an id, nor redacted
                    if item.__class__ is str and (len(item) < _SHORTEST or item in clean):
                        out[key] = item
                    else:
                        out[key] = self.value(item, convert)
                    continue
                secret = key.__class__ is str and (key in keys or is_secret_key(key) or key.lower() in keys)
                if secret and item not in (None, ""):
                    self.hits += 1
                    out[self._object_key(key)] = self.replacement
                    continue
                if item.__class__ is str and key.__class__ is str and is_identifier_key(key):
                    out[key] = self.identifier(item)
                    continue
                cleaned = self._object_key(key)
                out[cleaned] = self.value(item, convert)
                if (
                    cleaned is key
                    and key.__class__ is str
                    and not secret
                    and not is_identifier_key(key)
                    and len(plain) < 4096
                ):
                    plain.add(key)  # keys repeat: classified once
            return out
        if kind is list or kind is tuple:
            return [self.value(item, convert) for item in value]
        if kind is int:
            if 10**14 <= abs(value) < 10**16 and "card" in self.patterns and _luhn(str(abs(value))):
                self.hits += 1  # a card number given as a JSON number
                return self.replacement
            return value
        if kind in _SCALARS or convert is None:
            return value
        converted = convert(value)
        return value if converted is value else self.value(converted, convert)

    def span(self, record: Any) -> Any:
        """A :class:`~toolpath.store.spanrecord.SpanRecord` with everything that can carry text redacted (in place;
        returned for chaining): its name, attributes (keys and values), events (names and attributes), status
        message, scope name and resource attributes."""
        record.name = self.text(record.name)
        record.attributes = self.attributes(record.attributes)
        if record.events:
            record.events = [
                {
                    **e,
                    "name": self.text(str(e.get("name", ""))),
                    "attributes": self.attributes(e.get("attributes") or {}),
                }
                for e in record.events
            ]
        if record.status_message:
            record.status_message = self.text(record.status_message)
        if record.scope:
            record.scope = self.text(record.scope)
        if record.resource:
            # the spans of one resource share its attributes: redacted once for a run of them
            source, redacted = self._last_resource
            if record.resource is not source:
                source, redacted = record.resource, self.attributes(record.resource)
                self._last_resource = (source, redacted)
            record.resource = redacted
        return record

    def attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Span, event or resource attributes: a secret attribute name is replaced whole, values are scrubbed, and
        so are the names themselves (an instrumentation may put an address or a token in a key)."""
        out = {}
        kinds = self._key_kinds
        for key, value in attributes.items():
            known = kinds.get(key)
            name, kind = known if known is not None else self._key_kind(key)
            if kind == _SECRET and value not in (None, ""):
                self.hits += 1
                out[name] = self.replacement
            elif value.__class__ is str:
                out[name] = self.identifier(value) if kind == _IDENTIFIER else self.text(value)
            else:
                out[name] = self.value(value)
        return out

    def _key_kind(self, key: str) -> tuple[str, int]:
        """An attribute name redacted, and whether its value is a secret, an identifier or other (cached: names
        repeat)."""
        leaf = key.rsplit(".", 1)[-1].lower()
        secret = leaf in self.keys or key.lower() in self.keys or is_secret_key(leaf)
        kind = _SECRET if secret else _IDENTIFIER if is_identifier_key(key) else _OTHER
        found = (self._key_text(key), kind)
        if len(self._key_kinds) < 4096:
            self._key_kinds[key] = found
        return found

    def _object_key(self, key: Any) -> Any:
        """An object key holding a secret (``{"jane@example.com": …}``) becomes its pseudonym: two such keys stay
        two keys."""
        if key.__class__ is not str or key in self._clean_keys:
            return key
        cleaned = self.identifier(key)
        if cleaned is key and len(self._clean_keys) < 4096:  # keys repeat: look at each clean one once
            self._clean_keys.add(key)
        return cleaned

    def _key_text(self, key: str) -> str:
        cached = self._keys_seen.get(key)
        if cached is None:
            cached = self.text(key)
            if len(self._keys_seen) < 4096:  # attribute names repeat: redact each once
                self._keys_seen[key] = cached
        return cached


_PASSWORD_RULES = [re.compile(DEFAULT_PATTERNS[name]) for name in ("url_password", "password_assignment")]


def hide_passwords(text: str) -> str:
    """``text`` with the password of every URL's user info (``postgresql://me:***@db``) and every ``password=…``
    / ``pwd: …`` hidden as ``***``: for store URLs and database errors, which toolpath prints."""
    for rule in _PASSWORD_RULES:
        text = rule.sub(lambda m: (m.group("keep") or "") + "***", text)
    return text
