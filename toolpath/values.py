"""How argument values compare: Python's ``==`` (ADK's rule) as hashable identities, and JSON equality as
canonical text. Pure functions over decoded JSON values; :mod:`toolpath.model` caches them per call."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable
from typing import Any


def python_identity(value: Any) -> Any:
    """Hashable, and equal for two decoded JSON values exactly when they are ``==`` in Python: objects as frozen
    sets of their items, arrays as tuples of their own kind, other values as themselves (Python's numbers hash
    equal when they are equal: ``True == 1 == 1.0``). ``NaN`` equals ``NaN`` where ``==`` of containers has it
    so: when it is the same object, as every ``NaN`` the JSON decoder gives is (ADK compares decoded JSON). An
    unhashable value JSON cannot hold (a set, a tuple holding a list…) is wrapped to keep its own ``==``."""
    try:
        return _frozen(value)
    except TypeError:  # unhashable, and not JSON
        return _ByEquality(value)


def _frozen(value: Any) -> Any:
    kind = value.__class__
    if kind is dict:
        try:  # an object of hashable values (the usual arguments), frozen in C
            return frozenset(value.items())
        except TypeError:
            return frozenset([(k, v if v.__class__ in _SCALARS else _frozen(v)) for k, v in value.items()])
    if kind is list:
        return _FrozenList([v if v.__class__ in _SCALARS else _frozen(v) for v in value])
    hash(value)  # a hashable value keeps its own == (and a tuple stays unequal to a list)
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


class _FrozenList(tuple[Any, ...]):
    """A JSON array, frozen: equal only to another array (``[1] != (1,)`` in Python)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return other.__class__ is _FrozenList and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


class _ByEquality:
    """Wraps a value JSON cannot hold; equal to another wrapper when the values are ``==``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByEquality) and bool(self.value == other.value)

    def __hash__(self) -> int:
        return 0


def canonical_json(value: Any) -> str:
    """Text equal for two values exactly when they are equal as JSON (key order ignored, ``1 == 1.0``,
    ``true != 1``)."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def json_identity(value: Any) -> Hashable:
    """Hashable, and equal for two values exactly when their :func:`canonical_json` texts are, without writing
    them: objects as frozen sets of their (text key, identity) items, arrays as tuples, ``true`` / ``false`` apart
    from numbers, numbers by value (``1 == 1.0``), every ``NaN`` alike, anything else JSON cannot hold as the
    text of its ``repr`` (as :func:`canonical_json` writes it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # before int: true != 1
        return (_BOOLEAN, value)
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if value == value else _NAN
    if isinstance(value, dict):
        return frozenset({str(k): json_identity(v) for k, v in value.items()}.items())
    if isinstance(value, list | tuple):
        return tuple([json_identity(v) for v in value])
    return repr(value)


_BOOLEAN = object()
_NAN = object()


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def counts(keys: Iterable[Any]) -> dict[Any, int]:  # collections.Counter costs more for a few keys
    counts: dict[Any, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts
