"""Redaction of secrets and personal data, the same rules in the tracer (before export) and the collector
(before anything is stored), for spans from any instrumentation. The rules are a catalogue
(:mod:`toolpath.redact_catalogue`):

- **keys**: an object key (case-insensitive) whose value is replaced whole, at any depth: ``password``,
  ``api_key``, ``authorization``… (:func:`~toolpath.redact_catalogue.is_secret_key`); in text that is not JSON, the
  value such a key is assigned (``password=…``, ``'api_key': '…'``, ``Cookie: …``: :mod:`toolpath.redact_text`).
- **patterns**: regular expressions replaced inside any string: provider keys by shape (OpenAI, Google, GitHub,
  GitLab, Slack, Stripe, AWS and more), JWTs, bearer tokens, PEM private keys, e-mail addresses (any script) and
  card numbers (15–16 digits passing the Luhn check).

Strings that hold JSON (tool arguments and results, messages) are parsed, redacted value by value and written
back, so a secret nested three levels down in a tool argument is found, and the JSON stays valid. Other text is
read as a JSON reader would read it (``pass\\u0077ord`` is ``password``) before the rules look at it.

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
from toolpath.redact_catalogue import (
    DEFAULT_KEYS,
    DEFAULT_PATTERNS,
    PROVIDER_TOKENS,
    RULES,
    Literals,
    TokenPattern,
    card_candidate,
    is_secret_key,
    key_literals,
)
from toolpath.redact_text import assignments, unescaped

__all__ = ["Redactor", "hide_passwords"]

REDACTED = "[REDACTED]"
"""What a redacted value becomes."""
PSEUDONYM_PREFIX = "[REDACTED:"
"""How a redacted identifier's pseudonym starts: ``[REDACTED:`` + 24 hex digits (96 bits) + ``]``."""
_PSEUDONYM_HEX = 24
"""The pseudonym key of a process with no store (every agent replica exporting to one backend should share it)."""

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
_SHORTEST = 5
"""No default rule changes fewer characters (``pwd=x``)."""
_SCALARS = (int, float, bool, type(None))
_PREFILTERS: dict[str, Callable[[str], bool]] = {
    # cheap tests that rule a default pattern out before its regular expression runs
    rule.name: rule.test or Literals(rule.literals or rule.folded, folded=bool(rule.folded)).found_in
    for rule in RULES
}
_TOKENS = TokenPattern(PROVIDER_TOKENS)
"""The default ``api_key`` pattern, narrowed for each text to the tokens it may hold."""
_EXACT = Literals(literal for rule in RULES for literal in rule.literals)
_FOLDED = Literals((literal for rule in RULES for literal in rule.folded), folded=True)


def _any_prefilter(t: str, low: str | None = None) -> bool:
    """Whether any of :data:`_PREFILTERS` passes (the same tests, in one call; ``low``: ``t`` lowercased, when the
    caller has it). Each is a substring test, so a text made of others joined passes if any of them does."""
    return _EXACT.found_in(t) or _FOLDED.found_in(t, low) or card_candidate(t)


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
        self._rules: list[tuple[str, Callable[[str], bool] | None, re.Pattern[str] | TokenPattern]] = [
            (name, _PREFILTERS[name], _TOKENS if name == "api_key" else re.compile(pattern))
            if pattern == DEFAULT_PATTERNS.get(name)
            else (name, None, re.compile(pattern))
            for name, pattern in self.patterns.items()
        ]
        # every default rule has a cheap test: one call tells whether any of them can match
        self._only_defaults = all(prefilter is not None for _, prefilter, _ in self._rules) and {
            name for name, _, _ in self._rules
        } <= set(_PREFILTERS)
        self._key_parts = key_literals(self.keys)
        self._clean_texts: set[str] = set()
        """Short values found clean (operation, tool and agent names repeat in every span): looked at once."""
        self._key_kinds: dict[str, tuple[str, int]] = {}
        self._last_resource: tuple[Any, dict[str, Any]] = (None, {})

    @classmethod
    def build(cls, keys: Iterable[str] | None = None, patterns: Mapping[str, str] | None = None) -> Redactor:
        """Defaults plus ``keys`` and ``patterns`` (a pattern named like a default replaces it)."""
        return cls(DEFAULT_KEYS | frozenset(keys or ()), {**DEFAULT_PATTERNS, **(patterns or {})})

    def text(self, text: str) -> str:
        """``text`` with every pattern match and every secret key's value replaced; JSON text is redacted
        structurally, other text as a JSON reader would read it (its ``\\u`` escapes read)."""
        if len(text) < _SHORTEST or text in self._clean_texts:
            return text
        view = unescaped(text)
        # Most values hold nothing to redact: find out with the cheap tests and one search per pattern.
        if self._only_defaults and not _any_prefilter(view):
            matching = []
        else:
            matching = [rule for rule in self._rules if (rule[1] is None or rule[1](view)) and rule[2].search(view)]
        keyed = self._names_a_key(view)
        if not matching and not keyed:
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
        redacted = view
        for name, _, regex in matching:
            redacted = regex.sub(self._card if name == "card" else self._replace, redacted)
        if keyed:  # key=value, 'key': 'value', Cookie: … in text that is not JSON
            redacted, hits = assignments(redacted, self._secret_key, self.replacement)
            self.hits += hits
        return text if redacted == view else redacted

    @property
    def has_prefilters(self) -> bool:
        """Whether every rule is a default one, with a cheap test (:meth:`finds_nothing` works only then)."""
        return self._only_defaults

    def finds_nothing(self, text: str) -> bool:
        """Whether no default rule can change ``text`` nor any part of it, by the cheap tests alone (``False``:
        maybe one can). Each test is a substring test, so texts joined into one pass if the whole does; only
        meaningful when :attr:`has_prefilters`."""
        if not self._only_defaults:
            return False
        view = unescaped(text)  # read as text() reads it
        low = view.lower()
        return not _any_prefilter(view, low) and not self._names_a_key(view, low)

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

    def _secret_key(self, key: str) -> bool:
        return key.lower() in self.keys or is_secret_key(key)

    def _names_a_key(self, text: str, lowered: str | None = None) -> bool:
        """Whether ``text`` may assign a secret key a value (``password=``, ``"token": …``)."""
        return ("=" in text or ":" in text) and self._key_parts.found_in(text, lowered)

    def _replace(self, match: re.Match[str]) -> str:
        self.hits += 1
        keep = match.groupdict().get("keep")
        return keep + self.replacement if keep else self.replacement

    def _card(self, match: re.Match[str]) -> str:
        return self._replace(match) if _luhn(re.sub(r"\D", "", match.group())) else match.group()

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
        leaf = key.rsplit(".", 1)[-1]
        secret = leaf.lower() in self.keys or key.lower() in self.keys or is_secret_key(leaf)
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


_URL_PASSWORD = re.compile(DEFAULT_PATTERNS["url_password"])
_PASSWORD_KEY = re.compile(r"pass(?:word|wd|code|phrase)|pwd")


def hide_passwords(text: str) -> str:
    """``text`` with the password of every URL's user info (``postgresql://me:***@db``) and every ``password=…``
    / ``pwd: …`` hidden as ``***``: for store URLs and database errors, which toolpath prints."""
    text = _URL_PASSWORD.sub(lambda m: m.group("keep") + "***", text)
    return assignments(text, lambda key: _PASSWORD_KEY.search(key.casefold()) is not None, "***")[0]
