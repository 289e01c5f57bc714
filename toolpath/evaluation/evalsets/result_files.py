"""ADK's recorded eval results, both ways: read ``*.evalset_result.json`` files (and ``.adk/eval_history/``
folders) and write toolpath's results in the same form, where ``adk web`` lists them.

``adk eval`` and ``adk web`` save one ``EvalSetResult`` per eval set and run in
``<agents_dir>/<app>/.adk/eval_history/<app>_<eval_set_id>_<time>.evalset_result.json``; each case's result holds
every invocation the agent actually produced beside the expected one, so a recorded run can be scored again
without running anything. Files are read as ADK reads them (``parse_eval_set_result_json``: also the older
double-encoded files, a JSON string holding the JSON).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolpath.errors import ConfigError, DatasetError
from toolpath.evaluation.evalsets import adk_models as schema
from toolpath.evaluation.evalsets.conversions import content_text, efficiency, expected_invocation, intermediate
from toolpath.evaluation.evalsets.json_errors import explain, read_json
from toolpath.model import EvalStatus, ExpectedInvocation, ToolCall
from toolpath.private_files import write_private

RESULT_SUFFIX = ".evalset_result.json"
HISTORY_DIR = Path(".adk") / "eval_history"


@dataclass
class RecordedInvocation:
    """One invocation the agent produced in a recorded run, with ADK's efficiency figures of it."""

    invocation_id: str | None
    prompt: str
    response: str | None
    tool_calls: list[ToolCall]
    intermediate_responses: list[tuple[str, str]]
    efficiency: dict[str, Any]
    adk: dict[str, Any] | None = None
    """The invocation as ADK recorded it (its JSON: app details, events in order, rubrics): what ADK's judges
    read."""


@dataclass
class RecordedCase:
    """One eval case's result in a recorded run."""

    source: Path
    eval_set_result_id: str
    eval_set_id: str
    eval_id: str
    session_id: str
    user_id: str | None
    recorded_status: EvalStatus
    """ADK's own verdict: PASSED, FAILED or NOT_EVALUATED."""
    actual: list[RecordedInvocation]
    expected: list[ExpectedInvocation] | None
    """The expected invocations recorded beside the actual ones; ``None`` for a simulated-user case."""


def result_files(path: str | Path) -> list[Path]:
    """``path`` itself, or every ``*.evalset_result.json`` under the folder ``path`` (``.adk/eval_history/``
    folders included), sorted."""
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob(f"*{RESULT_SUFFIX}") if p.is_file())
    if not files:
        raise DatasetError(f"{path}: no *{RESULT_SUFFIX} files in this folder (ADK writes them to {HISTORY_DIR}/)")
    return files


def load_results(path: str | Path) -> list[RecordedCase]:
    """Every case result of the recorded runs at ``path`` (a file or a folder), file by file."""
    return [case for file in result_files(path) for case in _load_file(file)]


def _load_file(path: Path) -> list[RecordedCase]:
    data, text = read_json(path)
    if isinstance(data, str):  # older ADK versions wrote the JSON as a JSON string
        text = data
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: the JSON string it holds is not valid JSON ({exc.msg})") from None
    try:
        parsed = schema.EvalSetResult.model_validate_json(text)
    except ValidationError as exc:
        where, message = explain(exc, data, schema.EvalSetResult)
        raise DatasetError(f"{path}: {where}: {message}") from None
    cases = []
    for result in parsed.eval_case_results:
        per_invocation = result.eval_metric_result_per_invocation
        expected = [p.expected_invocation for p in per_invocation]
        cases.append(
            RecordedCase(
                source=path,
                eval_set_result_id=parsed.eval_set_result_id,
                eval_set_id=result.eval_set_id or parsed.eval_set_id,
                eval_id=result.eval_id,
                session_id=result.session_id,
                user_id=result.user_id,
                recorded_status=EvalStatus(result.final_eval_status.name),
                actual=[_recorded(p.actual_invocation) for p in per_invocation],
                expected=[expected_invocation(e) for e in expected if e is not None]
                if expected and all(e is not None for e in expected)
                else None,
            )
        )
    return cases


def _recorded(invocation: schema.Invocation) -> RecordedInvocation:
    calls, _, texts = intermediate(invocation.intermediate_data)
    return RecordedInvocation(
        invocation_id=invocation.invocation_id or None,
        prompt=content_text(invocation.user_content) or "",
        response=content_text(invocation.final_response),
        tool_calls=calls,
        intermediate_responses=texts,
        efficiency=efficiency(invocation),
        adk=invocation.model_dump(mode="json", exclude_none=True),
    )


def write_eval_set_result(app_dir: str | Path, eval_set_id: str, case_results: list[dict[str, Any]]) -> Path:
    """Save ``case_results`` (ADK ``EvalCaseResult`` objects as JSON) as ADK's ``LocalEvalSetResultsManager``
    saves them: ``<app_dir>/.adk/eval_history/<app>_<eval_set_id>_<time>.evalset_result.json``, where ``<app>`` is
    the folder's name (the app ``adk web`` lists)."""
    app_dir = Path(app_dir)
    app_name = app_dir.resolve().name
    for value, what in ((app_name, "the app folder's name"), (eval_set_id, "the eval set id")):
        if not value or "/" in value or "\\" in value or value in (".", "..") or "\x00" in value:
            raise ConfigError(f"{what} {value!r} cannot name an ADK eval history file")
    timestamp = time.time()
    result_id = f"{app_name}_{eval_set_id}_{timestamp}"
    try:
        result = schema.EvalSetResult.model_validate(
            {
                "eval_set_result_id": result_id,
                "eval_set_result_name": result_id.replace("/", "_"),
                "eval_set_id": eval_set_id,
                "eval_case_results": case_results,
                "creation_timestamp": timestamp,
            }
        )
    except ValidationError as exc:  # toolpath wrote something ADK would not read: a bug, said plainly
        raise DatasetError(f"eval history for {eval_set_id!r} does not fit ADK's EvalSetResult: {exc}") from None
    folder = app_dir / HISTORY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{result.eval_set_result_name}{RESULT_SUFFIX}"
    write_private(target, result.model_dump_json(indent=2))
    return target
