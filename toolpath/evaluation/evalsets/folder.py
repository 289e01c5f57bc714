"""The ADK eval-set files that the UI and ``toolpath mcp`` read and write: ``*.evalset.json`` in one folder.

A recorded session (or some of its turns) becomes a case as ``toolpath export`` makes one (the recorded tool calls
as the expected ``tool_uses``, or as ``invocation_events`` by their agents where several acted; the recorded answer
as the expected final response); a case's expected calls and responses can be edited, in either form. Every write
is checked by loading the new file as toolpath loads an eval set (the mirror of ADK's own models) before it
replaces the old one, so the file stays one ADK accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolpath.datasets.export import to_evalset
from toolpath.errors import ConfigError, DatasetError
from toolpath.evaluation.evalsets.files import EVALSET_SUFFIX, EvalSet, load_eval_set
from toolpath.jsontext import strict_loads
from toolpath.model import Session
from toolpath.private_files import write_private

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")  # whole names only: fullmatch (no "$" before a newline)


@dataclass(frozen=True)
class EditedCall:
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class EditedTurn:
    response: str
    calls: list[EditedCall]


class EvalSetFiles:
    """The eval sets of one folder, by name (the file name without ``.evalset.json``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.name.removesuffix(EVALSET_SUFFIX) for p in self.folder.glob(f"*{EVALSET_SUFFIX}"))

    def path(self, name: str) -> Path:
        """The file of ``name``; a name that is not a plain file name (``../x``, empty, odd characters) is a
        :class:`ConfigError`, never a path outside the folder."""
        name = name.strip().removesuffix(EVALSET_SUFFIX)
        if not _NAME.fullmatch(name):
            raise ConfigError(f"eval set name {name!r}: use letters, digits, '_', '-' or '.' (at most 100)")
        return self.folder / f"{name}{EVALSET_SUFFIX}"

    def load(self, name: str) -> EvalSet:
        path = self.path(name)
        if not path.is_file():
            raise FileNotFoundError(name)
        return load_eval_set(path)

    def add_session(
        self,
        name: str,
        session: Session,
        invocation_ids: Sequence[str] | None = None,
        annotations: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        *,
        description: str = "cases from toolpath ui",
    ) -> str:
        """Add ``session`` (only the turns ``invocation_ids``, if given) to the eval set ``name`` as a new case,
        creating the file (with ``description``) if needed, with its turns' reviewers' ``annotations`` (invocation
        id -> as exported); returns the new case's id."""
        turns = [inv for inv in session.invocations if not invocation_ids or inv.invocation_id in invocation_ids]
        if not turns:
            raise ConfigError(f"session {session.session_id!r}: no turns selected")
        path = self.path(name)
        set_id = path.name.removesuffix(EVALSET_SUFFIX)
        data = _read(path) if path.exists() else {**to_evalset([], set_id), "description": description}
        case = to_evalset([session.model_copy(update={"invocations": turns})], set_id, annotations)["eval_cases"][0]
        taken = {c.get("eval_id") for c in data.get("eval_cases", []) if isinstance(c, Mapping)}
        base, n = case["eval_id"], 1
        while case["eval_id"] in taken:
            n += 1
            case["eval_id"] = f"{base}-{n}"
        data.setdefault("eval_cases", []).append(case)
        self._write(path, data)
        return str(case["eval_id"])

    def update_case(self, name: str, eval_id: str, turns: Sequence[EditedTurn]) -> None:
        """Replace the expected final response and tool calls of each turn of case ``eval_id``."""
        path = self.path(name)
        if not path.is_file():
            raise FileNotFoundError(name)
        data = _read(path)
        case = next((c for c in data.get("eval_cases", []) if c.get("eval_id", c.get("evalId")) == eval_id), None)
        if case is None:
            raise FileNotFoundError(f"{name}/{eval_id}")
        conversation = case.get("conversation") or []
        if len(turns) != len(conversation):
            raise DatasetError(f"case {eval_id!r}: {len(turns)} turn(s) sent for {len(conversation)} in the file")
        for turn, edited in zip(conversation, turns, strict=True):
            response_key = _key(turn, "final_response")
            old = turn.get(response_key) or {}
            turn[response_key] = {"role": old.get("role", "model"), "parts": [{"text": edited.response}]}
            data_key = _key(turn, "intermediate_data")
            intermediate = turn.setdefault(data_key, {}) or {}
            turn[data_key] = intermediate
            if _key(intermediate, "invocation_events") in intermediate:
                _edit_events(intermediate, edited.calls)
                continue
            uses_key = _key(intermediate, "tool_uses")
            before = intermediate.get(uses_key) or []
            intermediate[uses_key] = [
                {"id": _same_call_id(before, i, call.name), "name": call.name, "args": call.args}
                for i, call in enumerate(edited.calls)
            ]
        self._write(path, data)

    def _write(self, path: Path, data: Mapping[str, Any]) -> None:
        """Write ``data`` to ``path`` if it loads as an eval set (through a temporary file beside it). A new eval set
        is 0600, as every file toolpath writes (it holds what the store holds); an edited one keeps its mode, and
        is not warned about: eval sets are often shared on purpose (kept in a repository beside the agent)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        write_private(path, text, warn_shared=False, check=load_eval_set)


def parse_args(text: str, where: str) -> dict[str, Any]:
    """Arguments typed in the page: a JSON object (blank: none)."""
    if not text.strip():
        return {}
    try:
        value = strict_loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: arguments are not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: arguments must be a JSON object, got {type(value).__name__}")
    return value


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: an older list-form eval set; only *{EVALSET_SUFFIX} objects can be edited here")
    return data


def _key(obj: Mapping[str, Any], snake: str) -> str:
    """The key ``obj`` uses for ``snake``: ADK files may write keys in camelCase."""
    head, *rest = snake.split("_")
    camel = head + "".join(part.title() for part in rest)
    return camel if camel in obj and snake not in obj else snake


def _edit_events(intermediate: dict[str, Any], calls: Sequence[Any]) -> None:
    """The expected calls ``calls`` in the ``invocation_events`` form: the n-th ``function_call`` part becomes the
    n-th call (its id kept when the name is the same), in its event, by its author; calls left over are dropped
    (and an event left with no part), and calls added are events of the last call's author after it."""
    key = _key(intermediate, "invocation_events")
    out: list[Any] = []
    index, author, after = 0, None, 0
    for event in intermediate.get(key) or []:
        content = event.get("content") if isinstance(event, Mapping) else None
        if not isinstance(content, Mapping) or not isinstance(content.get("parts"), list):
            out.append(event)
            continue
        kept, had_call = [], False
        for part in content["parts"]:
            call_key = _key(part, "function_call") if isinstance(part, Mapping) else ""
            if not call_key or call_key not in part:
                kept.append(part)
                continue
            had_call, author = True, event.get("author")
            if index < len(calls):
                call, before = calls[index], part[call_key]
                same = isinstance(before, Mapping) and before.get("name") == call.name
                kept.append({call_key: _use(call, before.get("id") if same else None)})
                index += 1
        if had_call and not kept:
            continue
        out.append({**event, "content": {**content, "parts": kept}})
        if had_call:
            after = len(out)
    new = [{"author": author or "agent", "content": {"role": "model", "parts": [{"function_call": _use(c, None)}]}}
           for c in calls[index:]]  # fmt: skip
    out[after:after] = new
    intermediate[key] = out


def _use(call: Any, call_id: Any) -> dict[str, Any]:
    use = {"name": call.name, "args": call.args}
    return use if call_id is None else {"id": call_id, **use}


def _same_call_id(before: Sequence[Any], index: int, name: str) -> Any:
    if index < len(before) and isinstance(before[index], Mapping) and before[index].get("name") == name:
        return before[index].get("id")
    return None
