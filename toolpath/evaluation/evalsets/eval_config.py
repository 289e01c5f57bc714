"""``test_config.json``: the criteria an eval set is judged by, and the ADK custom metrics they may name.

The file is validated with the mirror of ADK's ``EvalConfig`` (so a threshold may be ``0.8`` or ``"0.8"``, a
criterion an object with camelCase or snake_case keys), then each criterion ADK knows with the criterion model ADK
reads it with (``match_type`` as ``"IN_ORDER"``, ``"in-order"``, ``"In Order"`` or ``1``…). toolpath is stricter
than ADK where ADK would silently evaluate nothing: an unknown key at the top level, an empty ``criteria``, and a
threshold on one of ADK's efficiency metrics are errors here; an unknown criterion name, or an unknown key inside
a criterion, is an error of :func:`toolpath.evaluation.evalsets.criteria.resolve_criteria`, which knows
toolpath's metrics (and their options) as well as ADK's. A ``multiRunConfig`` (google-adk 2.14 and later) is an
error too, as toolpath does not apply it (``null``, as ADK writes it unset, is fine); ``parallelism`` (2.15)
changes no figure and is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_snake

from toolpath.errors import DatasetError
from toolpath.evaluation.evalsets import adk_models as schema
from toolpath.evaluation.evalsets.json_errors import explain, json_kind, read_json
from toolpath.metrics.trajectory_match import MatchType

CONFIG_NAME = "test_config.json"
DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
_TOP_LEVEL = tuple(schema.EvalConfig.model_fields)


@dataclass
class EvalConfig:
    """A ``test_config.json``: criterion name -> threshold, or an object of ``threshold`` and options with
    snake_case keys; and criterion name -> ``module.function`` for ADK custom metrics."""

    criteria: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_CRITERIA))
    custom_metrics: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    user_simulator: schema.LlmBackedUserSimulatorConfig | schema.LlmAudioUserSimulatorConfig | None = None
    """``user_simulator_config``, as ADK reads it (for eval cases with a ``conversation_scenario``)."""


def load_criteria(path: str | Path) -> dict[str, Any]:
    """The ``criteria`` of a ``test_config.json`` (see :func:`load_config`)."""
    return load_config(path).criteria


def load_config(path: str | Path) -> EvalConfig:
    path = Path(path)
    data, text = read_json(path)
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: $: expected an object, got {json_kind(data)}")
    for key in data:
        if key not in _TOP_LEVEL and to_snake(key) not in _TOP_LEVEL:
            raise DatasetError(f"{path}: $.{key}: unknown field (expected one of: {', '.join(_TOP_LEVEL)})")
    try:
        parsed = schema.EvalConfig.model_validate_json(text)
    except ValidationError as exc:
        where, message = explain(exc, data, schema.EvalConfig)
        raise DatasetError(f"{path}: {where}: {message}") from None
    if not parsed.criteria:
        raise DatasetError(f"{path}: $: no criteria (ADK would evaluate nothing; give a 'criteria' object)")
    if parsed.multi_run_config is not None:  # null, as ADK writes it unset, is fine
        raise DatasetError(
            f"{path}: $.multiRunConfig: google-adk's multi-run config (runs per case, cross-run scoring) is not "
            "applied by toolpath; remove it (toolpath's --runs / runs= runs each case more than once)"
        )
    custom = {name: config.code_config.name for name, config in (parsed.custom_metrics or {}).items()}
    criteria = {name: _criterion(path, name, value, custom) for name, value in parsed.criteria.items()}
    return EvalConfig(criteria, custom, path, parsed.user_simulator_config)


def canonical_criteria(criteria: Mapping[str, Any], custom: Mapping[str, str], source: object) -> dict[str, Any]:
    """Criteria given in Python (not read from a file) read as a ``test_config.json``'s are: ADK's spellings
    and camelCase keys accepted, values as ADK's criterion models read them. Idempotent."""
    data = {"criteria": dict(criteria)}
    try:
        parsed = schema.EvalConfig.model_validate(data)
    except ValidationError as exc:
        where, message = explain(exc, data, schema.EvalConfig)
        raise DatasetError(f"{source}: {where}: {message}") from None
    return {name: _criterion(source, name, value, dict(custom)) for name, value in parsed.criteria.items()}


def _criterion(path: object, name: str, value: float | schema.BaseCriterion, custom: dict[str, str]) -> Any:
    where = f"$.criteria.{name}"
    if name in schema.EFFICIENCY_METRICS:
        raise DatasetError(
            f"{path}: {where}: {name} does not take a threshold: it reports a value and never passes or fails; "
            "remove it from criteria (toolpath reports it for every case, as ADK does)"
        )
    if isinstance(value, float):
        return value
    given = value.model_dump(exclude_unset=True)  # what the file set, extras under the key it used
    if name in custom or name not in schema.ADK_CRITERIA:
        return {_snake(key) if name not in custom else key: item for key, item in given.items()}
    model = schema.ADK_CRITERIA[name]
    try:
        typed = model.model_validate(value.model_dump())
    except ValidationError as exc:
        inner, message = explain(exc, value.model_dump(), model)
        if inner.endswith("match_type"):
            given_type = value.model_dump().get("match_type", value.model_dump().get("matchType"))
            message = (
                f"expected EXACT, IN_ORDER or ANY_ORDER (any case, '-' or ' ' for '_') or 0, 1, 2; got {given_type!r}"
            )
        raise DatasetError(f"{path}: {where}{inner.removeprefix('$')}: {message}") from None
    out: dict[str, Any] = {}
    for key, item in given.items():
        snake = _snake(key)
        if snake in model.model_fields:  # ADK's value, as ADK's criterion model read it
            item = getattr(typed, snake)
            item = MatchType[item.name] if isinstance(item, schema.MatchType) else _plain(item)
        out[snake] = item  # a key ADK's model does not define: judged by toolpath.evaluation.evalsets.criteria
    return out


def _snake(key: str) -> str:
    return to_snake(key)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
