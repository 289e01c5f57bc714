"""Online evaluators as units: an :class:`EvaluatorSpec` is one evaluator ``online.toml`` declares — an
``[[evaluator]]`` table, or the flat form's keys — with its name and version (what its results name), its
metrics, its target, its filters and its limits; :func:`evaluator_spec` checks such a table, each value by type
and range, into one."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.online.references import is_eval_set_path
from toolpath.evaluation.online.sampling import JudgeBudget, Limits
from toolpath.evaluation.online.selection import Filters, TargetKind
from toolpath.model import Invocation

__all__ = ["EVALUATOR_KEYS", "Aggregate", "EvaluatorSpec", "evaluator_spec"]

EVALUATOR_KEYS = (
    "name", "version", "metrics", "target", "agent_names", "failures_only", "attributes", "tool_called",
    "min_latency_seconds", "max_latency_seconds", "sample_rate", "max_per_hour", "concurrency", "budget",
    "idle_seconds", "aggregate",
)  # fmt: skip
"""The keys of an evaluator the flat form takes at the top level."""
TABLE_KEYS = (*EVALUATOR_KEYS, "reference_dataset")
"""The keys of an ``[[evaluator]]`` table: an evaluator of sessions may have an ADK eval set of its own."""
DEFAULT_IDLE_SECONDS = 120.0
"""How long a session must have been quiet before an evaluator of sessions scores it, unless it says."""


class Aggregate(StrEnum):
    """How an evaluator of sessions makes one score of a turn metric's scores over the session's turns."""

    MEAN = "mean"
    """The mean of the turns' scores (those scored)."""
    MIN = "min"
    """The lowest."""
    LAST = "last"
    """The last turn's (none when it has none)."""


BUDGET_KEYS = ("tokens_per_hour", "tokens_per_day", "cost_per_hour", "cost_per_day")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""An evaluator's name: a label of its results, its Prometheus series and its quota rows."""
MAX_VERSION = 64


@dataclass(frozen=True)
class EvaluatorSpec:
    """One online evaluator, declared: its name and version (what its results name), the metrics it scores,
    what it scores them on (``target``, ``filters``) and how much of the traffic and the judge it takes
    (``limits``)."""

    name: str
    version: str
    metrics: tuple[str, ...]
    target: TargetKind = TargetKind.TURN
    filters: Filters = field(default_factory=Filters)
    limits: Limits = field(default_factory=Limits)
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    """Of an evaluator of sessions: how long a session must have been quiet before it is scored."""
    aggregate: Mapping[str, tuple[Aggregate, ...]] = field(default_factory=dict)
    """Of an evaluator of sessions: each turn metric's scores over the session, made one score each way named
    (results ``metric:mean`` …)."""
    reference_dataset: str | None = None
    """Of an evaluator of sessions: an ADK eval set whose case each session is judged as (by its first user text)."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("online: an evaluator's name is empty")

    def accepts(self, invocation: Invocation) -> bool:
        """Its filters and its sample, as the store applies them when it writes ``invocation``."""
        target = invocation.session_id if self.target is TargetKind.SESSION else invocation.invocation_id
        return self.filters.admits(invocation) and self.samples(target)

    def samples(self, target_id: str) -> bool:
        """Whether the target of this id is in its sample (a hash of the id and its name)."""
        return self.limits.samples(target_id, self.name)


def kind(value: Any) -> str:
    """How a value of the wrong type is named in an error."""
    return {bool: "true/false", str: "a string", int: "a whole number", float: "a number", list: "a list",
            dict: "a table", type(None): "nothing"}.get(type(value), type(value).__name__)  # fmt: skip


def number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def whole(value: Any, least: int = 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def refusal(where: str, key: str, value: Any, wanted: str) -> ConfigError:
    """One error naming the key, the value, its type and what the key takes; ``where``: ``online: `` and, in an
    ``[[evaluator]]`` table, which one."""
    return ConfigError(f"{where}{key} = {value!r} ({kind(value)}): expected {wanted}")


def evaluator_spec(values: Mapping[str, Any], where: str = "online: ") -> EvaluatorSpec:
    """The evaluator a table of :data:`EVALUATOR_KEYS` declares (missing keys: their defaults, but ``metrics``),
    every value checked by type and range; the first bad one is a :class:`ConfigError` naming it."""
    unknown = sorted(set(values) - set(TABLE_KEYS))
    if unknown:
        raise ConfigError(f"{where}unknown key(s) {', '.join(unknown)}; known: {', '.join(TABLE_KEYS)}")

    def refuse(key: str, wanted: str) -> None:
        raise refusal(where, key, values[key], wanted)

    def names(key: str, *, optional: bool = False) -> tuple[str, ...] | None:
        value = values.get(key)
        if optional and value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise refusal(where, key, value, 'a list of names, e.g. ["a", "b"]')
        return tuple(value)

    if "metrics" not in values:
        raise ConfigError(f"{where}'metrics' is required")
    name, version = values.get("name", "default"), values.get("version", "1")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        refuse("name", "a name of letters, digits, '_', '.' and '-' (at most 64, first a letter or digit)")
    if not isinstance(version, str) or not 0 < len(version) <= MAX_VERSION:
        refuse("version", f'a string of 1 to {MAX_VERSION} characters, e.g. "2"')
    metrics = names("metrics")
    target = values.get("target", TargetKind.TURN)
    if not isinstance(target, str) or target not in tuple(TargetKind):
        refuse("target", '"turn" or "session"')
    target = TargetKind(target)
    sessions = _session_keys(values, where, target)
    agents = names("agent_names", optional=True)
    tools = names("tool_called", optional=True)
    failures_only = values.get("failures_only", False)
    if not isinstance(failures_only, bool):
        refuse("failures_only", "true or false")
    attributes = values.get("attributes", {})
    if not isinstance(attributes, dict) or not all(
        isinstance(v, str | int | float | bool) for v in attributes.values()
    ):
        refuse("attributes", 'a table of attribute = value, e.g. {deployment = "prod"}')
    latency: dict[str, float | None] = {}
    for key in ("min_latency_seconds", "max_latency_seconds"):
        latency[key] = values.get(key)
        if latency[key] is not None and (not number(latency[key]) or latency[key] < 0):  # type: ignore[operator]
            refuse(key, "a number of seconds, at least 0")
    low, high = latency["min_latency_seconds"], latency["max_latency_seconds"]
    if low is not None and high is not None and low > high:
        raise ConfigError(
            f"{where}min_latency_seconds = {low} is more than max_latency_seconds = {high}: none would pass"
        )
    sample_rate = values.get("sample_rate", 1.0)
    if not number(sample_rate):
        refuse("sample_rate", "a number from 0 to 1")
    for key in ("max_per_hour", "concurrency"):
        if values.get(key) is not None and not whole(values[key]):
            refuse(key, "a whole number, at least 1")
    budget = values.get("budget", {})
    if (
        not isinstance(budget, dict)
        or set(budget) - set(BUDGET_KEYS)
        or not all(whole(v) if k.startswith("tokens") else number(v) and v > 0 for k, v in budget.items())
    ):
        refuse("budget", "a table of tokens_per_hour, tokens_per_day (whole numbers ≥ 1), cost_per_hour, cost_per_day "
               "(numbers > 0, in the model price table's currency)")  # fmt: skip
    try:
        limits = Limits(
            float(sample_rate), values.get("max_per_hour"), values.get("concurrency"), JudgeBudget(**budget)
        )
    except ConfigError as exc:  # a value of the right type out of range: said where
        raise ConfigError(where + str(exc).removeprefix("online: ")) from None
    return EvaluatorSpec(
        name,
        version,
        metrics or (),
        target,
        Filters(agents, failures_only, dict(attributes), tools, low, high),
        limits,
        **sessions,
    )


def _session_keys(values: Mapping[str, Any], where: str, target: TargetKind) -> dict[str, Any]:
    """The keys only an evaluator of sessions takes, checked: ``idle_seconds``, ``aggregate``,
    ``reference_dataset``."""
    given = [key for key in ("idle_seconds", "aggregate", "reference_dataset") if values.get(key) not in (None, {})]
    if target is TargetKind.TURN:
        if given:
            raise ConfigError(f'{where}{", ".join(given)}: only for an evaluator of sessions (target = "session")')
        return {}
    idle = values.get("idle_seconds", DEFAULT_IDLE_SECONDS)
    if idle is None:
        idle = DEFAULT_IDLE_SECONDS
    if not number(idle) or idle <= 0:
        raise refusal(where, "idle_seconds", idle, "a number of seconds, more than 0")
    wanted = 'a table of metric = "mean", "min" or "last" (or a list of them)'
    aggregate = values.get("aggregate") or {}
    if not isinstance(aggregate, dict):
        raise refusal(where, "aggregate", aggregate, wanted)
    ways: dict[str, tuple[Aggregate, ...]] = {}
    for metric, way in aggregate.items():
        listed = way if isinstance(way, list) else [way]
        if not listed or not all(isinstance(w, str) and w in tuple(Aggregate) for w in listed):
            raise refusal(where, f"aggregate.{metric}", way, wanted)
        ways[metric] = tuple(dict.fromkeys(Aggregate(w) for w in listed))
    reference = values.get("reference_dataset")
    if reference is not None and not (isinstance(reference, str) and is_eval_set_path(reference)):
        raise refusal(where, "reference_dataset", reference, "the path of an ADK eval set (*.evalset.json)")
    return {"idle_seconds": float(idle), "aggregate": ways, "reference_dataset": reference}
