"""Google ADK eval sets: ``*.evalset.json``, legacy ``*.test.json``, folders of them, ``file:case_a,case_b``.

A file is accepted exactly when ADK 2.x accepts it: ``EvalSet`` files are validated with the mirror of ADK's own
pydantic models (:mod:`toolpath.evaluation.evalsets.adk_models`: camelCase or snake_case keys below the top level,
unknown keys rejected where ADK rejects them and kept where ADK keeps them, such as ``session_input.session_id``); a
JSON list is one of ADK's older formats, converted as ADK converts it: in a ``*.test.json`` the turns of one
conversation (``AgentEvaluator``), elsewhere a list of ``{"name", "data", "initial_session"}`` cases
(``adk eval``). An invalid file is one error naming the file and the JSON path of the problem.

Where toolpath knowingly differs (documented in docs/evaluation.md): a legacy turn's expected tool calls may
also be written ``{"name", "args"}`` (docs/spec.md §1); a legacy list of turns may be judged by any criterion
(ADK's ``AgentEvaluator`` allows four); and criteria are checked more strictly
(:mod:`toolpath.evaluation.evalsets.eval_config`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets import adk_models as schema
from toolpath.evaluation.evalsets.conversions import expected_invocation, tool_call
from toolpath.evaluation.evalsets.eval_config import (
    CONFIG_NAME,
    DEFAULT_CRITERIA,
    EvalConfig,
    load_config,
    load_criteria,
)
from toolpath.evaluation.evalsets.json_errors import explain, read_json
from toolpath.model import EvalCase, ExpectedInvocation, ToolCall

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_CRITERIA",
    "EVALSET_SUFFIX",
    "LEGACY_SUFFIX",
    "EvalConfig",
    "EvalSet",
    "load_config",
    "load_criteria",
    "load_eval_set",
    "load_eval_sets",
    "split_selector",
]

EVALSET_SUFFIX = ".evalset.json"
LEGACY_SUFFIX = ".test.json"
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


@dataclass
class EvalSet:
    eval_set_id: str
    cases: list[EvalCase]
    name: str | None = None
    description: str | None = None
    path: Path | None = None
    criteria: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_CRITERIA))
    custom_metrics: dict[str, str] = field(default_factory=dict)
    """Criterion name -> ``module.function`` of an ADK custom metric (``custom_metrics`` of the config)."""
    config_path: Path | None = None
    """The ``test_config.json`` the criteria came from; ``None`` for ADK's defaults."""
    user_simulator: schema.LlmBackedUserSimulatorConfig | schema.LlmAudioUserSimulatorConfig | None = None
    """The config's ``user_simulator_config`` (ADK's defaults when ``None``), for ``conversation_scenario`` cases."""


def split_selector(spec: str | Path) -> tuple[str, list[str] | None]:
    """``"file.evalset.json:case_a,case_b"`` as the file and the case ids, as ``adk eval`` reads it (the first
    ``:`` after a Windows drive; ids split on ``,``, blanks dropped; nothing after the ``:`` selects every case).
    A path that exists as it is has no selector."""
    text = str(spec)
    if Path(text).exists():
        return text, None
    start = 3 if _WINDOWS_DRIVE.match(text) else 0
    colon = text.find(":", start)
    if colon == -1:
        return text, None
    ids = [s for s in text[colon + 1 :].split(":")[0].split(",") if s.strip()]
    return text[:colon], ids or None


def load_eval_sets(path: str | Path, config: str | Path | None = None) -> list[EvalSet]:
    """Eval sets from a file (``file.evalset.json:case_a,case_b`` selects cases) or, recursively, a folder
    (every ``*.test.json``, as ADK's ``AgentEvaluator`` scans one, and every ``*.evalset.json``). Each set is
    judged by ``config`` if given, else by the ``test_config.json`` in its own folder, else ADK's defaults."""
    base, case_ids = split_selector(path)
    folder = Path(base)
    if folder.is_dir():
        if case_ids is not None:
            raise DatasetError(
                f"{path}: a case selector (:case_a,case_b) picks cases of one eval-set file, not a folder"
            )
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith((EVALSET_SUFFIX, LEGACY_SUFFIX)))
        if not files:
            raise DatasetError(f"{folder}: no *{EVALSET_SUFFIX} or *{LEGACY_SUFFIX} files in this folder")
        return [load_eval_set(f, config) for f in files]
    return [load_eval_set(folder, config, case_ids=case_ids)]


def load_eval_set(path: str | Path, config: str | Path | None = None, *, case_ids: list[str] | None = None) -> EvalSet:
    """One eval-set file with the criteria of ``config`` (else the ``test_config.json`` beside it, else the
    defaults); ``case_ids`` keeps only those cases, in file order (an unknown id is an error naming it)."""
    path = Path(path)
    data, text = read_json(path)
    if isinstance(data, list) and path.name.endswith(LEGACY_SUFFIX):
        eval_set = _legacy_turns(path, data)
    elif isinstance(data, list):
        eval_set = _old_cases(path, data)
    else:
        eval_set = _evalset(path, data, text)
    config_path = Path(config) if config else path.parent / CONFIG_NAME
    if config or config_path.exists():
        loaded = load_config(config_path)
        eval_set.criteria, eval_set.custom_metrics, eval_set.config_path = (
            loaded.criteria,
            loaded.custom_metrics,
            config_path,
        )
        eval_set.user_simulator = loaded.user_simulator
    if isinstance(data, list) and path.name.endswith(LEGACY_SUFFIX):
        _check_legacy_criteria(path, data, eval_set)
    if case_ids is not None:
        eval_set.cases = _select(path, eval_set.cases, case_ids)
    return eval_set


def _select(path: Path, cases: list[EvalCase], case_ids: list[str]) -> list[EvalCase]:
    known = [case.eval_id for case in cases]
    unknown = [case_id for case_id in dict.fromkeys(case_ids) if case_id not in known]
    if unknown:
        has = ", ".join(map(repr, known)) or "none"
        raise DatasetError(f"{path}: no eval case {', '.join(map(repr, unknown))} (the file has: {has})")
    return [case for case in cases if case.eval_id in case_ids]


def _evalset(path: Path, data: Any, text: str) -> EvalSet:
    try:
        parsed = schema.EvalSet.model_validate_json(text)
    except ValidationError as exc:
        where, message = explain(exc, data, schema.EvalSet)
        case = _at(data, where)
        if message.startswith("Exactly one of") and isinstance(case, dict):
            fields = {k for name, info in schema.EvalCase.model_fields.items() for k in (name, info.alias)}
            extra = [key for key in case if key not in fields]
            message += f" (the case also has: {', '.join(extra)})" if extra else ""
        raise DatasetError(f"{path}: {where}: {message}") from None
    cases = []
    for case in parsed.eval_cases:
        session = case.session_input
        cases.append(
            EvalCase(
                eval_set_id=parsed.eval_set_id,
                eval_id=case.eval_id,
                invocations=[expected_invocation(inv) for inv in case.conversation or []],
                app_name=session.app_name if session else None,
                user_id=session.user_id if session else None,
                session_id=session.session_id if session else None,
                initial_state=session.state if session else {},
                conversation_scenario=case.conversation_scenario.model_dump(mode="json")
                if case.conversation_scenario
                else None,
                source=str(path),
                rubrics=[r.model_dump(mode="json", exclude_none=True) for r in case.rubrics or []],
            )
        )
    return EvalSet(parsed.eval_set_id, cases, parsed.name, parsed.description, path)


# --- ADK's older formats -----------------------------------------------------------------------------------


def _fail(path: Path, where: str, message: str) -> DatasetError:
    return DatasetError(f"{path}: {where}: {message}")


def _old_turn(path: Path, turn: Any, where: str) -> ExpectedInvocation:
    """One turn ``{query, reference, expected_tool_use, expected_intermediate_agent_responses}``, read as ADK's
    ``_convert_invocation_to_pydantic_schema`` reads it (other keys are ignored, as there)."""
    if not isinstance(turn, dict):
        raise _fail(path, where, f"expected an object, got {_kind(turn)}")
    if "query" not in turn:
        raise _fail(path, f"{where}.query", "missing (required)")
    if not isinstance(turn["query"], str):
        raise _fail(path, f"{where}.query", f"expected a string, got {_kind(turn['query'])}")
    reference = turn.get("reference", "")
    if reference is not None and not isinstance(reference, str):
        raise _fail(path, f"{where}.reference", f"expected a string, got {_kind(reference)}")
    calls: list[ToolCall] = []
    for k, item in enumerate(_array(path, turn.get("expected_tool_use", []), f"{where}.expected_tool_use")):
        try:
            call = ToolCall.from_item(item, where=f"{where}.expected_tool_use[{k}]")
        except DatasetError as exc:
            raise DatasetError(f"{path}: {exc}") from None
        calls.append(tool_call(call.name, call.args, call.call_id))
    key = "expected_intermediate_agent_responses"
    texts = []
    for k, item in enumerate(_array(path, turn.get(key, []), f"{where}.{key}")):
        item_where = f"{where}.{key}[{k}]"
        if not isinstance(item, dict) or not isinstance(item.get("author"), str):
            raise _fail(path, item_where, "expected an object with an 'author' string and a 'text'")
        text = item.get("text", ...)
        if text is ... or (text is not None and not isinstance(text, str)):
            raise _fail(path, f"{item_where}.text", f"expected a string, got {_kind(None if text is ... else text)}")
        if text:
            texts.append((item["author"], text))
    return ExpectedInvocation(
        prompt=turn["query"], reference=reference, reference_trajectory=calls, intermediate_responses=texts
    )


def _legacy_turns(path: Path, data: list[Any]) -> EvalSet:
    """A legacy ``*.test.json``: the turns of one conversation, one case named after the file."""
    if not data:
        raise _fail(path, "$", "no turns")
    invocations = [_old_turn(path, turn, f"$[{i}]") for i, turn in enumerate(data)]
    set_id = path.name.removesuffix(LEGACY_SUFFIX)
    case = EvalCase(eval_set_id=set_id, eval_id=path.name, invocations=invocations, source=str(path))
    return EvalSet(set_id, [case], set_id, None, path)


def _check_legacy_criteria(path: Path, data: list[Any], eval_set: EvalSet) -> None:
    """ADK's ``AgentEvaluator._validate_input``: the keys the first turn must have for ADK's criteria. (ADK also
    allows only its four legacy criteria on such a file; toolpath judges it by any criterion.)"""
    source = eval_set.config_path or "the default criteria"
    first = data[0]
    needs = {
        "tool_trajectory_avg_score": ("query", "expected_tool_use"),
        "response_evaluation_score": ("query",),
        "response_match_score": ("query", "reference"),
    }
    for name, keys in needs.items():
        missing = [k for k in keys if name in eval_set.criteria and k not in first]
        if missing:
            raise _fail(
                path, "$[0]", f"{name} (from {source}) needs {' and '.join(map(repr, missing))} in the first turn"
            )


def _old_cases(path: Path, data: list[Any]) -> EvalSet:
    """ADK's older eval-set format: ``[{"name", "data": [turns], "initial_session"}]``."""
    set_id = path.name.removesuffix(EVALSET_SUFFIX).removesuffix(".json")
    cases = []
    for i, raw in enumerate(data):
        where = f"$[{i}]"
        if not isinstance(raw, dict) or "data" not in raw or "name" not in raw:
            hint = f" (a list of turns belongs in a *{LEGACY_SUFFIX} file)" if isinstance(raw, dict) else ""
            raise _fail(path, where, f"ADK's older eval-set format needs an object with 'name' and 'data'{hint}")
        if not isinstance(raw["name"], str):
            raise _fail(path, f"{where}.name", f"expected a string, got {_kind(raw['name'])}")
        turns = _array(path, raw["data"], f"{where}.data", null_ok=False)
        session = raw.get("initial_session") or {}
        if not isinstance(session, dict):
            raise _fail(path, f"{where}.initial_session", f"expected an object, got {_kind(session)}")
        for key in ("app_name", "user_id"):
            if key in session and not isinstance(session[key], str):
                raise _fail(path, f"{where}.initial_session.{key}", f"expected a string, got {_kind(session[key])}")
        state = session.get("state", {})
        if not isinstance(state, dict):
            raise _fail(path, f"{where}.initial_session.state", f"expected an object, got {_kind(state)}")
        cases.append(
            EvalCase(
                eval_set_id=set_id,
                eval_id=raw["name"],
                invocations=[_old_turn(path, t, f"{where}.data[{j}]") for j, t in enumerate(turns)],
                app_name=session.get("app_name", "") if session else None,
                user_id=session.get("user_id", "") if session else None,
                initial_state=state,
                source=str(path),
            )
        )
    return EvalSet(set_id, cases, set_id, None, path)


def _array(path: Path, value: Any, where: str, *, null_ok: bool = False) -> list[Any]:
    if value is None and null_ok:
        return []
    if not isinstance(value, list):
        raise _fail(path, where, f"expected an array, got {_kind(value)}")
    return value


def _at(data: Any, where: str) -> Any:
    """The value at a JSON path like ``$.eval_cases[0]``."""
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", where):
        try:
            data = data[key] if key else data[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
