"""The metric mechanism: the :class:`Metric` interface, custom metrics, and metric specs from the command line.

Which names exist is :mod:`toolpath.evaluation.catalog`'s business; this module knows none. A spec is a name
(``trajectory_precision``), a name with parameters (``trajectory_single_tool_use(tool_name=get_weather)``, values
parsed as JSON when they can be), a :class:`Metric` instance, or a plain callable
``row -> float | {"score", "explanation", ...}``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from toolpath.errors import DatasetError, InternalSignal, MetricError
from toolpath.model import TRAJECTORY_COLUMNS, MetricResult
from toolpath.trajectory import parse_trajectory

__all__ = ["RESPONSE_NOTE", "CustomMetric", "Metric", "MissingInput", "missing", "parse_spec"]

Row = Mapping[str, Any]


class Metric(ABC):
    """Scores one dataset row. Subclasses are pure: no I/O, no tracing."""

    name: str
    case_level: ClassVar[bool] = False
    """True when the metric aggregates a whole multi-turn case itself, from a row's ``invocations`` list (ADK's
    ``tool_trajectory_avg_score``, ``response_match_score``); other metrics are averaged over the invocations."""

    @abstractmethod
    def score(self, row: Row) -> MetricResult: ...


class MissingInput(InternalSignal):
    """A row lacks what a metric needs; the runner turns it into score null with this message."""


RESPONSE_NOTE = "response_note"
"""A row's reason for having no ``response`` though its agent answered (the answer had no text, such as bytes)."""


def missing(row: Row, column: str) -> MissingInput:
    """``row`` lacks ``column`` (or holds null there): the error says so, with the reason the row gives for it
    (its ``<column>_note``, such as :data:`RESPONSE_NOTE`), when it gives one."""
    note = row.get(f"{column}_note")
    return MissingInput(f"row has no {column!r}" + (f": {note}" if isinstance(note, str) and note else ""))


class CustomMetric(Metric):
    """A user function as a metric. It gets the row as plain values — trajectory cells as lists of Vertex-form
    dicts ``{"tool_name", "tool_input"}`` whatever form the dataset used, so ``call["tool_name"]`` works — and
    returns a number, ``{"score", "explanation", ...}``, ``{"<its name>": score, "explanation"?: ...}`` (as
    Vertex AI's custom metrics do) or a :class:`MetricResult`.

    Built as ``CustomMetric(fn)``, ``CustomMetric(fn, name="...")`` or, as in Vertex AI,
    ``CustomMetric(name="...", metric_function=fn)``.
    """

    def __init__(
        self,
        fn: Callable[[Row], Any] | str | None = None,
        name: str | Callable[[Row], Any] | None = None,
        *,
        metric_function: Callable[[Row], Any] | None = None,
    ) -> None:
        if isinstance(fn, str) and (callable(name) or metric_function is not None):  # Vertex: (name, function)
            fn, name = name if callable(name) else None, fn
        function = metric_function if fn is None else fn
        if metric_function is not None and fn is not None:
            raise MetricError("CustomMetric: give the function once (fn or metric_function=)")
        if not callable(function) or isinstance(function, str):
            raise MetricError("CustomMetric needs a function: CustomMetric(name='...', metric_function=fn)")
        if name is not None and not isinstance(name, str):
            raise MetricError(f"CustomMetric: name must be a string, got {type(name).__name__}")
        self.fn: Callable[[Row], Any] = function
        self.name = name or getattr(function, "__name__", None) or type(function).__name__

    def score(self, row: Row) -> MetricResult:
        value = self.fn(plain_row(row))
        if isinstance(value, MetricResult):
            return value
        if isinstance(value, Mapping):
            key = "score" if "score" in value else self.name if self.name in value else None
            if key is None:
                raise MetricError(f"custom metric {self.name!r} returned a dict without 'score' or {self.name!r}")
            explanation = value.get("explanation", value.get(f"{self.name}/explanation"))
            skip = {key, "explanation", f"{self.name}/explanation"}
            extra = {k: v for k, v in value.items() if k not in skip}
            return MetricResult(score=_as_score(value[key], self.name), explanation=explanation, details=extra)
        return MetricResult(score=_as_score(value, self.name))


def plain_row(row: Row) -> dict[str, Any]:
    """``row`` as a user's function expects it: plain values, trajectory cells as lists of Vertex-form dicts
    (a cell that is not a trajectory is left as the dataset gave it)."""
    plain = dict(row)
    for column in TRAJECTORY_COLUMNS:
        if plain.get(column) is not None:
            with contextlib.suppress(DatasetError):
                plain[column] = [call.to_item() for call in parse_trajectory(plain[column], where=column)]
    return plain


def _as_score(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MetricError(f"custom metric {name!r} returned {type(value).__name__}, not a number")
    return float(value)


_SPEC = re.compile(r"^\s*([A-Za-z_][\w.:]*)\s*(?:\((.*)\))?\s*$", re.S)


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name(key=value, ...)"`` as the name and its parameters (values parsed as JSON when they can be)."""
    match = _SPEC.match(spec)
    if match is None:
        raise MetricError(f"cannot read metric {spec!r} (expected name or name(key=value, ...))")
    name, params_text = match.group(1), match.group(2)
    return name, (_parse_params(params_text, spec) if params_text else {})


def split_metric_list(text: str) -> list[str]:
    """Split ``"a,b(x=1,y=2),c"`` on the commas outside brackets and quoted strings (so parameter values may
    be JSON lists and objects: ``rubric_based_tool_use_quality_v1(rubrics=[{"rubric_id": "a", ...}])``)."""
    current: list[str]
    parts, depth, current, quote = [], 0, [], ""
    for ch in text:
        if quote:
            quote = "" if ch == quote and (not current or current[-1] != "\\") else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        else:
            depth += ch in "([{"
            depth -= ch in ")]}"
        current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _parse_params(text: str, spec: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in split_metric_list(text):
        key, eq, raw = item.partition("=")
        if not eq or not key.strip().isidentifier():
            raise MetricError(f"metric {spec!r}: parameter {item!r} is not key=value")
        raw = raw.strip()
        try:
            params[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            params[key.strip()] = raw
    return params


def import_callable(path: str) -> Callable[[Row], Any]:
    module_name, _, attr = path.partition(":")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise MetricError(f"custom metric {path!r} cannot be imported: {exc}") from None
    if not callable(fn):
        raise MetricError(f"custom metric {path!r} is not callable")
    return fn


def invocation_mean(scores: Sequence[float]) -> float:
    """The mean of per-invocation scores as ADK's evaluators take it: added one after another, then divided
    (``sum`` of floats is compensated from Python 3.12, so it can differ in the last bit)."""
    total = 0.0
    for score in scores:
        total += score
    return total / len(scores)
