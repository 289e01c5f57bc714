"""JSON text for the store's write path, through orjson (about ten times faster than ``json.dumps``) with
``json.dumps`` as the fallback for what orjson refuses (non-string keys, integers past 64 bits, lone surrogates,
objects it cannot encode): what is written reads back with ``json.loads`` as the same values.

The text is compact and keeps non-ASCII characters as they are: only its values are promised, not its spelling
(a stored JSON column is read, never compared as text). NaN and infinities, which are not JSON, are written as
``null``: the collector cleans them into strings before anything is stored (:mod:`toolpath.collector.clean`).

Reading stays with ``json.loads``: orjson reads an integer past 64 bits as a float, and ``json`` takes the
``NaN`` and ``Infinity`` some senders write. Files users write (datasets, eval sets) are read with
:func:`strict_loads`, which refuses them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_orjson_dumps = orjson.dumps
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS  # json's to refuse, as it does


def dumps(value: Any) -> str:
    """``value`` as JSON text (``None`` as ``null``)."""
    try:
        return _orjson_dumps(value, option=_OPTIONS).decode()
    except TypeError:  # orjson's refusal of a key, a number, a string or an object; json decides
        return json.dumps(value)


_CONSTANT_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def strict_loads(text: str) -> Any:
    """``text`` read as standard JSON, for files users write: ``NaN`` and ``Infinity`` (which ``json`` takes but
    JSON has not) and a key given twice in one object (of which ``json`` keeps the last in silence) are a
    :class:`json.JSONDecodeError` at their place, so the reader's message names the line."""

    def constant(name: str) -> Any:
        found = next((m for m in _CONSTANT_OR_STRING.finditer(text) if m.group(1)), None)
        raise json.JSONDecodeError(
            f"{name} is not a JSON number: write null or a string", text, found.start() if found else 0
        )

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        row = dict(pairs)
        if len(row) == len(pairs):
            return row
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        spelled = re.compile(re.escape(json.dumps(twice, ensure_ascii=False)) + r"\s*:")
        places = [m.start() for m in spelled.finditer(text)]
        raise json.JSONDecodeError(
            f"key {twice!r} given twice in one object", text, places[1] if len(places) > 1 else 0
        )

    try:
        return json.loads(text, parse_constant=constant, object_pairs_hook=unique)
    except RecursionError:
        raise too_deep(text) from None


def too_deep(text: str) -> json.JSONDecodeError:
    """The error for ``text`` whose arrays and objects nest deeper than Python's reader follows (its recursion
    limit): at the place the nesting is deepest."""
    depth = deepest = place = 0
    for match in _BRACKET_OR_STRING.finditer(text):
        bracket = match.group(1)
        if bracket is None:
            continue
        depth += 1 if bracket in "[{" else -1
        if depth > deepest:
            deepest, place = depth, match.start()
    return json.JSONDecodeError(f"arrays and objects nested {deepest} deep: too deep to read", text, place)


_BRACKET_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|([\[\]{}])')
