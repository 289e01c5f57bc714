"""Google ADK eval sets: ``*.evalset.json``, legacy ``*.test.json``, folders of them, ``test_config.json``.

The format is detected first and then validated, so a typo in a new file is reported as what it is, not as
a confusing legacy-format error. Keys below the top level may be snake_case or camelCase; fields ADK does not
define are errors unless their value is null (ADK's own dumps carry many null fields). Every error names
the file and the JSON path of the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpath.errors import DatasetError
from toolpath.model import EvalCase, ExpectedInvocation, ToolCall

EVALSET_SUFFIX = ".evalset.json"
LEGACY_SUFFIX = ".test.json"
CONFIG_NAME = "test_config.json"
DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}

_EVAL_SET_KEYS = {"eval_set_id", "name", "description", "eval_cases", "creation_timestamp"}
_EVAL_CASE_KEYS = {
    "eval_id", "conversation", "conversation_scenario", "session_input", "creation_timestamp", "rubrics",
    "final_session_state",
}  # fmt: skip
_INVOCATION_KEYS = {
    "invocation_id", "user_content", "final_response", "intermediate_data", "creation_timestamp", "rubrics",
    "app_details", "duration", "model_duration", "tool_duration",
}  # fmt: skip
_INTERMEDIATE_KEYS = {"tool_uses", "tool_responses", "intermediate_responses", "invocation_events"}
_SESSION_INPUT_KEYS = {"app_name", "user_id", "state"}
_LEGACY_KEYS = {"query", "expected_tool_use", "expected_intermediate_agent_responses", "reference"}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass
class EvalSet:
    eval_set_id: str
    cases: list[EvalCase]
    name: str | None = None
    description: str | None = None
    path: Path | None = None
    criteria: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_CRITERIA))


class _Reader:
    """Walks one file's JSON with paths for error messages."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> DatasetError:
        return DatasetError(f"{self.path}: {where}: {message}")

    def obj(self, value: Any, where: str, allowed: set[str] | None) -> dict[str, Any]:
        """``value`` as a dict with snake_case keys; unknown non-null keys are errors when ``allowed``."""
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_kind(value)}")
        out: dict[str, Any] = {}
        for key, item in value.items():
            snake = _CAMEL.sub("_", key).lower() if isinstance(key, str) else key
            if allowed is not None and snake not in allowed:
                if item is None:
                    continue
                raise self.fail(f"{where}.{key}", f"unknown field (expected one of: {', '.join(sorted(allowed))})")
            out[snake] = item
        return out

    def array(self, value: Any, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {_kind(value)}")
        return value

    def text(self, value: Any, where: str, *, required: bool = False) -> str | None:
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_kind(value)}")
        return value

    def content_text(self, value: Any, where: str) -> str | None:
        """The text parts of a genai ``Content``, joined with newlines (as ADK does); None when absent."""
        if value is None:
            return None
        content = self.obj(value, where, None)
        texts = [
            part["text"]
            for i, part in enumerate(self.array(content.get("parts"), f"{where}.parts"))
            if isinstance(self.obj(part, f"{where}.parts[{i}]", None).get("text"), str) and part["text"]
        ]
        return "\n".join(texts)

    def function_call(self, value: Any, where: str) -> ToolCall:
        call = self.obj(value, where, None)
        name = self.text(call.get("name"), f"{where}.name", required=True)
        args = call.get("args")
        if args is not None and not isinstance(args, dict):
            raise self.fail(f"{where}.args", f"expected an object, got {_kind(args)}")
        # absent or null args stay None: ADK compares them unequal to {}
        return ToolCall(name=name or "", args=args, call_id=call.get("id"))

    def parts(self, content: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        if content is None:
            return
        body = self.obj(content, where, None)
        for i, part in enumerate(self.array(body.get("parts"), f"{where}.parts")):
            yield f"{where}.parts[{i}]", self.obj(part, f"{where}.parts[{i}]", None)


def load_eval_sets(path: str | Path) -> list[EvalSet]:
    """Eval sets from a file or, recursively, a folder; each picks up the ``test_config.json`` beside it."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.name.endswith((EVALSET_SUFFIX, LEGACY_SUFFIX)))
        if not files:
            raise DatasetError(f"{path}: no *{EVALSET_SUFFIX} or *{LEGACY_SUFFIX} files in this folder")
        return [load_eval_set(f) for f in files]
    return [load_eval_set(path)]


def load_eval_set(path: str | Path, config: str | Path | None = None) -> EvalSet:
    path = Path(path)
    data = _read_json(path)
    if path.name.endswith(LEGACY_SUFFIX) or isinstance(data, list):
        eval_set = _legacy(path, data)
    else:
        eval_set = _evalset(path, data)
    config_path = Path(config) if config else path.parent / CONFIG_NAME
    if config or config_path.exists():
        eval_set.criteria = load_criteria(config_path)
    return eval_set


def load_criteria(path: str | Path) -> dict[str, Any]:
    """``criteria`` of a ``test_config.json``: metric name -> threshold number or an object with
    ``threshold`` and options (``match_type``, ``ignore_args``, ``judge_model_options``, ``rubrics``…)."""
    path = Path(path)
    reader = _Reader(path)
    data = reader.obj(_read_json(path), "$", None)
    criteria = data.get("criteria")
    if criteria is None:
        raise reader.fail("$", "no 'criteria' object")
    criteria = reader.obj(criteria, "$.criteria", None)
    out: dict[str, Any] = {}
    for name, value in criteria.items():
        where = f"$.criteria.{name}"
        if isinstance(value, bool) or not isinstance(value, int | float | dict):
            raise reader.fail(where, f"expected a threshold number or an object, got {_kind(value)}")
        if isinstance(value, dict):
            value = reader.obj(value, where, None)
            threshold = value.get("threshold")
            if isinstance(threshold, bool) or not isinstance(threshold, int | float):
                raise reader.fail(f"{where}.threshold", f"expected a number, got {_kind(threshold)}")
        out[name] = value
    return out


def _evalset(path: Path, data: Any) -> EvalSet:
    r = _Reader(path)
    top = r.obj(data, "$", _EVAL_SET_KEYS)
    set_id = r.text(top.get("eval_set_id"), "$.eval_set_id") or path.name.removesuffix(EVALSET_SUFFIX)
    cases = []
    for i, raw_case in enumerate(r.array(top.get("eval_cases"), "$.eval_cases")):
        where = f"$.eval_cases[{i}]"
        case = r.obj(raw_case, where, _EVAL_CASE_KEYS)
        if case.get("conversation") is None and case.get("conversation_scenario") is not None:
            raise r.fail(where, "conversation_scenario (simulated users) is not supported; give a conversation")
        session = r.obj(case.get("session_input") or {}, f"{where}.session_input", _SESSION_INPUT_KEYS)
        if case.get("conversation") is None:
            raise r.fail(f"{where}.conversation", "missing (a case with no invocations gives [])")
        turns = r.array(case.get("conversation"), f"{where}.conversation")  # [] is a case ADK leaves NOT_EVALUATED
        cases.append(
            EvalCase(
                eval_set_id=set_id,
                eval_id=r.text(case.get("eval_id"), f"{where}.eval_id", required=True) or "",
                invocations=[_invocation(r, t, f"{where}.conversation[{j}]") for j, t in enumerate(turns)],
                app_name=session.get("app_name"),
                user_id=session.get("user_id"),
                initial_state=session.get("state") or {},
                source=str(path),
            )
        )
    return EvalSet(set_id, cases, top.get("name"), top.get("description"), path)


def _invocation(r: _Reader, raw: Any, where: str) -> ExpectedInvocation:
    inv = r.obj(raw, where, _INVOCATION_KEYS)
    prompt = r.content_text(inv.get("user_content"), f"{where}.user_content")
    if not prompt:
        raise r.fail(f"{where}.user_content", "no user text")
    data = r.obj(inv.get("intermediate_data") or {}, f"{where}.intermediate_data", _INTERMEDIATE_KEYS)
    calls: list[ToolCall] = []
    responses: list[Any] = []
    texts: list[tuple[str, str]] = []
    base = f"{where}.intermediate_data"
    if data.get("invocation_events") is not None:
        for k, raw_event in enumerate(r.array(data["invocation_events"], f"{base}.invocation_events")):
            ev_where = f"{base}.invocation_events[{k}]"
            event = r.obj(raw_event, ev_where, None)
            author = str(event.get("author") or "agent")
            for part_where, part in r.parts(event.get("content"), f"{ev_where}.content"):
                if part.get("function_call") is not None:
                    calls.append(r.function_call(part["function_call"], f"{part_where}.function_call"))
                elif part.get("function_response") is not None:
                    responses.append(part["function_response"])
                elif isinstance(part.get("text"), str) and part["text"] and author != "user":
                    texts.append((author, part["text"]))
    else:
        for k, call in enumerate(r.array(data.get("tool_uses"), f"{base}.tool_uses")):
            calls.append(r.function_call(call, f"{base}.tool_uses[{k}]"))
        responses = r.array(data.get("tool_responses"), f"{base}.tool_responses")
        for k, item in enumerate(r.array(data.get("intermediate_responses"), f"{base}.intermediate_responses")):
            item_where = f"{base}.intermediate_responses[{k}]"
            if not isinstance(item, list) or len(item) != 2:
                raise r.fail(item_where, "expected [author, parts]")
            for _, part in r.parts({"parts": item[1]}, item_where):
                if isinstance(part.get("text"), str) and part["text"]:
                    texts.append((str(item[0]), part["text"]))
    return ExpectedInvocation(
        invocation_id=inv.get("invocation_id"),
        prompt=prompt,
        reference=r.content_text(inv.get("final_response"), f"{where}.final_response"),
        reference_trajectory=calls,
        tool_responses=responses,
        intermediate_responses=texts,
    )


def _legacy(path: Path, data: Any) -> EvalSet:
    """A legacy ``*.test.json``: a list of turns of one conversation (ADK migrates it to one case)."""
    r = _Reader(path)
    turns = r.array(data, "$")
    if not turns:
        raise r.fail("$", "no turns")
    invocations = []
    for i, raw in enumerate(turns):
        where = f"$[{i}]"
        turn = r.obj(raw, where, _LEGACY_KEYS)
        calls = []
        for k, item in enumerate(r.array(turn.get("expected_tool_use"), f"{where}.expected_tool_use")):
            try:
                call = ToolCall.from_item(item, where=f"{where}.expected_tool_use[{k}]")
            except DatasetError as exc:
                raise DatasetError(f"{path}: {exc}") from None
            calls.append(call)  # a null tool_input stays None, as ADK reads it
        key = "expected_intermediate_agent_responses"
        texts = [
            ("agent", str(t.get("response") if isinstance(t, dict) else t))
            for t in r.array(turn.get(key), f"{where}.{key}")
        ]
        invocations.append(
            ExpectedInvocation(
                prompt=r.text(turn.get("query"), f"{where}.query", required=True) or "",
                reference=r.text(turn.get("reference"), f"{where}.reference"),
                reference_trajectory=calls,
                intermediate_responses=texts,
            )
        )
    set_id = path.name.removesuffix(LEGACY_SUFFIX)
    case = EvalCase(eval_set_id=set_id, eval_id=path.name, invocations=invocations, source=str(path))
    return EvalSet(set_id, [case], set_id, None, path)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
