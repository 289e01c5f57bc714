"""Online scoring's settings: ``online.toml``, a mapping with its keys (``toolpath.init(online={...})``), or a
:class:`OnlineConfig` made in code, checked into one typed config; each bad key or value is one
:class:`~toolpath.errors.ConfigError` naming it. What the config asks to score is an :class:`EvaluatorSpec`: a flat
``online.toml`` declares one."""

from __future__ import annotations

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
