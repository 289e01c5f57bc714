"""Reading ADK's JSON files and turning a pydantic validation error into one line: the JSON path and what is wrong.

Pydantic reports every failure, and for a union (``intermediate_data`` is ``tool_uses``… *or*
``invocation_events``; a criterion is a number *or* an object) every branch's failures. The line reports the
first failure of the branch the input was meant for: an object goes to the model whose fields it uses, a number
to the number.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from toolpath.errors import DatasetError
from toolpath.jsontext import strict_loads

_EXPECTED = {
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
    "tuple_type": "an array",
    "string_type": "a string",
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}


def read_json(path: Path) -> tuple[Any, str]:
    """The parsed JSON of ``path`` and its text; a missing, unreadable or malformed file is a
    :class:`DatasetError` naming it (with line and column for bad JSON)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read ({exc})") from None
    try:
        return strict_loads(text), text
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def explain(error: ValidationError, data: Any, model: type[BaseModel]) -> tuple[str, str]:
    """``(JSON path, message)`` of the failure to report."""
    details = error.errors()
    meant = [e for e in details if _walk(model, e["loc"], data)[1]] or details
    # an unknown key is named before the required key it was probably meant to be (pydantic's order of the two
    # errors changed between releases; the unknown key is what the user typed)
    chosen = next((e for e in meant if e["type"] == "extra_forbidden"), meant[0])
    path, _, parent = _walk(model, chosen["loc"], data)
    if chosen["type"] == "missing" and isinstance(parent, type) and issubclass(parent, BaseModel):
        # a missing key is reported by its camelCase alias; the field's own name reads better
        path[-1] = next((name for name, f in parent.model_fields.items() if f.alias == path[-1]), path[-1])
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return where, _message(chosen, parent)


def _message(error: ErrorDetails, parent: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        fields = sorted(parent.model_fields) if isinstance(parent, type) and issubclass(parent, BaseModel) else []
        return "unknown field" + (f" (expected one of: {', '.join(fields)})" if fields else "")
    if kind == "missing":
        return "missing (required)"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {json_kind(error.get('input'))}"
    message = error["msg"]
    return message.removeprefix("Value error, ")


def _walk(model: type[BaseModel], loc: tuple[int | str, ...], data: Any) -> tuple[list[int | str], bool, Any]:
    """Follow ``loc`` through the model's types and the input: the path without union tags, whether every union
    on the way took the branch the input was meant for, and the type the last key was looked up in."""
    tp: Any = model
    node: Any = data
    path: list[int | str] = []
    preferred = True
    parent: Any = None
    for part in loc:
        tp = _unwrap_optional(tp)
        members = _union_members(tp)
        if members is not None:
            chosen = next((m for m in members if part in _tags(m)), None)
            if chosen is not None:
                preferred = preferred and chosen is _meant(members, node)
                tp = chosen
                continue
            tp = _meant(members, node)
        parent = tp
        tp, node = _step(tp, part, node)
        path.append(part)
    return path, preferred, parent


def _step(tp: Any, part: int | str, node: Any) -> tuple[Any, Any]:
    child = node[part] if _indexable(node, part) else None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        for name, info in tp.model_fields.items():
            if part in (name, info.alias):
                return info.annotation, child
        return Any, child
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list and args:
        return args[0], child
    if origin is tuple and args and isinstance(part, int) and part < len(args):
        return args[part], child
    if origin is dict and len(args) == 2:
        return args[1], child
    return Any, child


def _indexable(node: Any, part: int | str) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _unwrap_optional(tp: Any) -> Any:
    members = _raw_union(tp)
    if members is None:
        return tp
    rest = [m for m in members if m is not type(None)]
    return _unwrap_optional(rest[0]) if len(rest) == 1 else tp


def _raw_union(tp: Any) -> tuple[Any, ...] | None:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return None


def _union_members(tp: Any) -> list[Any] | None:
    members = _raw_union(tp)
    if members is None:
        return None
    rest = [m for m in members if m is not type(None)]
    return rest if len(rest) > 1 else None


def _tags(member: Any) -> set[Any]:
    """What pydantic names a union member by in an error's location: its type name, or for a discriminated
    union the value of its ``Literal`` tag field."""
    if not isinstance(member, type):
        return {str(member)}
    tags: set[Any] = {member.__name__}
    if issubclass(member, BaseModel):
        for info in member.model_fields.values():
            if typing.get_origin(info.annotation) is typing.Literal:
                tags.update(typing.get_args(info.annotation))
    return tags


def _meant(members: list[Any], node: Any) -> Any:
    """The union member ``node`` was written for: for an object, the model whose fields it uses most."""
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if isinstance(node, dict) and models:

        def used(m: type[BaseModel]) -> int:
            names = {n for name, info in m.model_fields.items() for n in (name, info.alias) if n}
            return sum(key in names for key in node)

        return max(models, key=used)
    others = [m for m in members if m not in models]
    return others[0] if others else members[0]
