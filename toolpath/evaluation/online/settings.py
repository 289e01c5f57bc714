"""Online scoring's settings: ``online.toml``, a mapping with its keys (``toolpath.init(online={...})``), or a
:class:`OnlineConfig` made in code, checked into one typed config; each bad key or value is one
:class:`~toolpath.errors.ConfigError` naming it. What the config asks to score is an :class:`EvaluatorSpec`: a flat
``online.toml`` declares one."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.online.references import is_eval_set_path
from toolpath.evaluation.online.sampling import Limits, check_rate
from toolpath.evaluation.online.selection import Filters, TargetKind
from toolpath.evaluation.prompt_match import PromptMatch
from toolpath.model import Invocation
from toolpath.store.job_status import SHED_POLICIES, ShedPolicy

__all__ = ["EvaluatorSpec", "OnlineConfig"]

FLAT_EVALUATOR = ("default", "1")
"""The name and version of the one evaluator a flat ``online.toml`` declares."""


@dataclass(frozen=True)
class EvaluatorSpec:
    """One online evaluator, declared: its name and version (what its results can name), the metrics it scores,
    what it scores them on (``target``, ``filters``) and how much of the traffic it takes (``limits``)."""

    name: str
    version: str
    metrics: tuple[str, ...]
    target: TargetKind = TargetKind.TURN
    filters: Filters = field(default_factory=Filters)
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("online: an evaluator's name is empty")

    def accepts(self, invocation: Invocation) -> bool:
        """Its filters and its sample, as the store applies them when it writes ``invocation``."""
        return self.filters.admits(invocation) and self.limits.samples(invocation.invocation_id)


@dataclass
class OnlineConfig:
    """Online scoring's settings, as ``online.toml`` holds them (:mod:`toolpath.evaluation.online`)."""

    metrics: list[str]
    sample_rate: float = 1.0
    agent_names: list[str] | None = None
    failures_only: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)
    reference_dataset: str | None = None
    match: PromptMatch = PromptMatch.NORMALIZED
    thresholds: dict[str, float] = field(default_factory=dict)
    workers: int = 2
    batch_size: int = 16
    max_backlog: int | None = 10_000
    shed: ShedPolicy = ShedPolicy.OLDEST
    lease_seconds: float = 120.0
    poll_seconds: float = 0.5
    otlp_endpoint: str | None = None
    judge: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_types(self)
        if not self.metrics and not is_eval_set_path(self.reference_dataset):  # an eval set brings its criteria
            raise ConfigError("online: 'metrics' names no metric")
        check_rate(self.sample_rate)
        if self.match not in tuple(PromptMatch):
            raise ConfigError(f"online: match must be 'exact' or 'normalized', got {self.match!r}")
        self.match = PromptMatch(self.match)  # the TOML's string
        if self.shed not in SHED_POLICIES:
            raise ConfigError(f"online: shed must be one of {', '.join(SHED_POLICIES)}, got {self.shed!r}")
        self.shed = ShedPolicy(self.shed)  # the TOML's string
        if self.workers < 1 or self.batch_size < 1:
            raise ConfigError("online: workers and batch_size must be at least 1")

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any] | OnlineConfig) -> OnlineConfig:
        """From an ``online.toml`` path, a mapping with the same keys, or a config (returned as is)."""
        if isinstance(source, OnlineConfig):
            return source
        where = "online config"
        if isinstance(source, str | Path):
            where = str(source)
            try:
                data: Mapping[str, Any] = tomllib.loads(Path(source).read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ConfigError(f"{where}: no such file") from None
            except IsADirectoryError:
                raise ConfigError(f"{where}: is a folder; give the online.toml file in it") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{where}: cannot read ({exc})") from None
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{where}: not valid TOML ({exc})") from None
            base = Path(source).parent
            if isinstance(data.get("reference_dataset"), str) and not Path(data["reference_dataset"]).is_absolute():
                data = {**data, "reference_dataset": str(base / data["reference_dataset"])}
        else:
            data = source
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if "metrics" not in data and not is_eval_set_path(data.get("reference_dataset")):
            raise ConfigError(f"{where}: 'metrics' is required (or an eval set as reference_dataset)")
        data = {"metrics": [], **data}
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        except ConfigError as exc:
            raise ConfigError(f"{where}: {str(exc).removeprefix('online: ')}") from None

    @property
    def evaluator(self) -> EvaluatorSpec:
        """The one evaluator this config declares: its metrics on each turn, behind its filters and sample."""
        name, version = FLAT_EVALUATOR
        agents = tuple(self.agent_names) if self.agent_names is not None else None
        return EvaluatorSpec(
            name,
            version,
            tuple(self.metrics),
            TargetKind.TURN,
            Filters(agents, self.failures_only, dict(self.attributes)),
            Limits(self.sample_rate),
        )


def _kind(value: Any) -> str:
    return {bool: "true/false", str: "a string", int: "a whole number", float: "a number", list: "a list",
            dict: "a table", type(None): "nothing"}.get(type(value), type(value).__name__)  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_types(config: OnlineConfig) -> None:
    """Each value of the right type and range, whatever wrote it (TOML, a mapping, Python): ``failures_only =
    "no"`` would otherwise be true, ``agent_names = "bot"`` match an agent named ``b``, ``metrics = "x"`` be the
    letters of x. One :class:`ConfigError` naming the key, the value and what it takes."""

    def refuse(key: str, value: Any, wanted: str) -> None:
        raise ConfigError(f"online: {key} = {value!r} ({_kind(value)}): expected {wanted}")

    def names(key: str, value: Any, *, optional: bool = False) -> None:
        if optional and value is None:
            return
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            refuse(key, value, 'a list of names, e.g. ["a", "b"]')

    names("metrics", config.metrics)
    names("agent_names", config.agent_names, optional=True)
    if not _number(config.sample_rate):
        refuse("sample_rate", config.sample_rate, "a number from 0 to 1")
    if not isinstance(config.failures_only, bool):
        refuse("failures_only", config.failures_only, "true or false")
    if not isinstance(config.attributes, dict) or not all(
        isinstance(v, str | int | float | bool) for v in config.attributes.values()
    ):
        refuse("attributes", config.attributes, 'a table of attribute = value, e.g. {deployment = "prod"}')
    if not isinstance(config.thresholds, dict) or not all(_number(v) for v in config.thresholds.values()):
        refuse("thresholds", config.thresholds, "a table of metric = finite number, e.g. {trajectory_recall = 0.8}")
    for key in ("reference_dataset", "otlp_endpoint"):
        if getattr(config, key) is not None and not isinstance(getattr(config, key), str):
            refuse(key, getattr(config, key), "a string")
    if not isinstance(config.judge, dict):
        refuse("judge", config.judge, "a table of judge settings")
    for key in ("workers", "batch_size"):
        value = getattr(config, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            refuse(key, value, "a whole number, at least 1")
    if config.max_backlog is not None and (
        not isinstance(config.max_backlog, int) or isinstance(config.max_backlog, bool) or config.max_backlog < 1
    ):
        refuse("max_backlog", config.max_backlog, "a whole number, at least 1")
    if not _number(config.lease_seconds) or config.lease_seconds < 1:
        refuse("lease_seconds", config.lease_seconds, "a number of seconds, at least 1")
    if not _number(config.poll_seconds) or config.poll_seconds < MIN_POLL_SECONDS:
        refuse("poll_seconds", config.poll_seconds, f"a number of seconds, at least {MIN_POLL_SECONDS}")
    for key in ("match", "shed"):
        if not isinstance(getattr(config, key), str):
            refuse(key, getattr(config, key), "a string")


MIN_POLL_SECONDS = 0.01
"""How often an idle worker looks for jobs, at the most (0 would spin a core waiting)."""
