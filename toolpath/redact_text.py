"""Redaction in text that is not JSON: secret keys assigned a value (``password=…``, ``"api_key": "…"``,
``Authorization: Basic …``), and the text as a JSON reader would see it (``\\u`` escapes read).

A key is secret by the same rules as an object key (:func:`toolpath.redact_catalogue.is_secret_key`), so
``aws_secret_access_key=…`` in a log line goes the way ``{"aws_secret_access_key": …}`` does, and ``max_tokens=512``
stays. Its value is a quoted string (to its closing quote, or the line's end), the rest of the line for a header
(``Authorization``, ``Cookie``, ``Set-Cookie``), else one word (two after an auth scheme: ``Basic …``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["assignments", "unescaped"]

_ESCAPE = re.compile(r"\\{1,16}u([0-9a-fA-F]{4})|\\{1,16}/")
"""An escape, at any depth of JSON in JSON strings (``\\\\u0077`` is ``\\u0077`` once the outer document is read)."""
_KEEP_ESCAPED = frozenset("\"'\\") | frozenset(map(chr, range(0x20)))
"""Characters whose escapes stay escaped: reading them would change where a string ends."""


def _read(match: re.Match[str]) -> str:
    code = match.group(1)
    if code is None:
        return "/"
    char = chr(int(code, 16))
    return match.group() if char in _KEEP_ESCAPED or 0xD800 <= ord(char) <= 0xDFFF else char


def unescaped(text: str) -> str:
    """``text`` with its ``\\uXXXX`` and ``\\/`` escapes read, as JSON readers read them, however deep the JSON is
    nested (``pass\\u0077ord`` is ``password``, ``jane\\u0040example.com`` an address), those of quotes,
    backslashes, control characters and surrogates aside: the text keeps its shape."""
    return _ESCAPE.sub(_read, text) if "\\" in text else text


# a key at a word start, maybe quoted (a dict's repr, JSON-like text, a JSON document quoted in a string: \"key\"),
# or a command line's option (--password=, -token=, .password=), then = : := => or ==; the key is bounded and the
# blanks possessive after a character they cannot hold: linear
ASSIGNMENT = re.compile(
    r"(?<![\w.\\-])[-.]{0,2}+(?P<kq>\\{0,2}[\"']|)(?P<key>[^\W\d][\w.-]{0,127}+)(?P=kq)[ \t]*+(?::=|=>|==?|:)"
    r"[ \t]*+"
)
QUOTE = re.compile(r"\\{0,2}[\"']")
BARE = re.compile(
    r"(?:(?i:basic|bearer|digest|token|bot|negotiate|ntlm|apikey|ssws|oauth|aws4-hmac-sha256)[ \t]++)?"
    r"[^\s&;,'\"]+"
)
"""A value that is not quoted: one word, or an auth scheme and the word after it (``Basic dXNlcjpw…``)."""
LINE = re.compile(r"[^\r\n]+")
_HEADER = re.compile(r"(?:^|[._-])(?:authorization|cookie)$")
"""Header keys whose value is the rest of the line (``Cookie: a=1; b=2``, ``Authorization: Digest u="x", …``)."""


def assignments(text: str, is_secret: Callable[[str], bool], replacement: str) -> tuple[str, int]:
    """``text`` with the value of every secret key assigned in it replaced, and how many were."""
    out: list[str] = []
    cursor = hits = 0
    line_end = -1  # the end of the line a value is in: found once a line, so that the search stays linear
    for match in ASSIGNMENT.finditer(text):
        if match.start() < cursor or not is_secret(key := match.group("key")):
            continue  # inside a value replaced already, or not a secret
        start = match.end()
        quote = QUOTE.match(text, start)
        if quote is not None:
            start = quote.end()
            if line_end < start:
                line_end = text.find("\n", start) % (len(text) + 1)  # none: the text's end
            end = text.find(quote.group(), start, line_end) % (line_end + 1)  # none: the line's end
        else:
            value = (LINE if _HEADER.search(key.casefold()) else BARE).match(text, start)
            end = start if value is None else value.end()
        if end == start or text[start:end] == replacement:
            continue
        out += (text[cursor:start], replacement)
        cursor, hits = end, hits + 1
    if not hits:
        return text, 0
    out.append(text[cursor:])
    return "".join(out), hits
