"""Online scoring's settings: ``online.toml``, a mapping with its keys (``toolpath.init(online={...})``), or a
:class:`OnlineConfig` made in code, checked into one typed config; each bad key or value is one
:class:`~toolpath.errors.ConfigError` naming it. What the config asks to score are its :attr:`OnlineConfig.specs`:
one :class:`EvaluatorSpec` per ``[[evaluator]]`` table, or the one a flat ``online.toml`` declares with the same
keys at its top level."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.online.evaluator_specs import (
    EVALUATOR_KEYS,
    EvaluatorSpec,
    evaluator_spec,
    number,
    refusal,
    whole,
)
from toolpath.evaluation.online.google_evaluator import online_evaluator_config
from toolpath.evaluation.online.references import is_eval_set_path
from toolpath.evaluation.prompt_match import PromptMatch
from toolpath.store.job_status import SHED_POLICIES, ShedPolicy

__all__ = ["EvaluatorSpec", "OnlineConfig"]

FLAT_EVALUATOR = ("default", "1")
"""The name and version of the one evaluator a flat ``online.toml`` declares, unless it names them."""


@dataclass
class OnlineConfig:
    """Online scoring's settings, as ``online.toml`` holds them (:mod:`toolpath.evaluation.online`): the
    evaluators (``evaluator``, the ``[[evaluator]]`` tables, or the flat form's evaluator keys) and what they
    share (references, thresholds, workers, backlog, export, judge)."""

    metrics: list[str]
    sample_rate: float = 1.0
    agent_names: list[str] | None = None
    failures_only: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)
    name: str = FLAT_EVALUATOR[0]
    version: str = FLAT_EVALUATOR[1]
    target: str = "turn"
    tool_called: list[str] | None = None
    min_latency_seconds: float | None = None
    max_latency_seconds: float | None = None
    max_per_hour: int | None = None
    concurrency: int | None = None
    budget: dict[str, int] = field(default_factory=dict)
    idle_seconds: float | None = None
    aggregate: dict[str, Any] = field(default_factory=dict)
    evaluator: list[dict[str, Any]] = field(default_factory=list)
    """The ``[[evaluator]]`` tables; with them, the evaluator keys above stay at their defaults."""
    reference_dataset: str | None = None
    match: PromptMatch = PromptMatch.NORMALIZED
    thresholds: dict[str, float] = field(default_factory=dict)
    workers: int = 2
    batch_size: int | None = None
    """Jobs a worker claims, scores and closes at once (``None``: :func:`default_batch`)."""
    max_backlog: int | None = 10_000
    shed: ShedPolicy = ShedPolicy.OLDEST
    lease_seconds: float = 120.0
    poll_seconds: float = 0.5
    otlp_endpoint: str | None = None
    judge_traces: str | None = None
    """An OTLP/HTTP endpoint the judge's requests are traced to, as a service of their own (off: ``None``)."""
    judge: dict[str, Any] = field(default_factory=dict)
    specs: tuple[EvaluatorSpec, ...] = field(init=False, repr=False)
    """The evaluators declared, checked: one per ``[[evaluator]]`` table, or the flat form's one."""

    def __post_init__(self) -> None:
        _check_types(self)
        self.specs = _specs(self)
        if self.match not in tuple(PromptMatch):
            raise ConfigError(f"online: match must be 'exact' or 'normalized', got {self.match!r}")
        self.match = PromptMatch(self.match)  # the TOML's string
        if self.shed not in SHED_POLICIES:
            raise ConfigError(f"online: shed must be one of {', '.join(SHED_POLICIES)}, got {self.shed!r}")
        self.shed = ShedPolicy(self.shed)  # the TOML's string
        if self.workers < 1 or (self.batch_size is not None and self.batch_size < 1):
            raise ConfigError("online: workers and batch_size must be at least 1")

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any] | OnlineConfig) -> OnlineConfig:
        """From an ``online.toml`` path, Google's ``OnlineEvaluator`` resource as a ``.json`` file
        (:mod:`~toolpath.evaluation.online.google_evaluator`), a mapping with the same keys, or a config (returned as
        is)."""
        if isinstance(source, OnlineConfig):
            return source
        where = "online config"
        if isinstance(source, str | Path) and Path(source).suffix.lower() == ".json":
            where, source = str(source), online_evaluator_config(source)  # Google's OnlineEvaluator resource
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
            data = _beside(data, Path(source).parent)
        else:
            data = source
        known = {f.name for f in fields(cls) if f.init}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if "metrics" not in data and not data.get("evaluator") and not is_eval_set_path(data.get("reference_dataset")):
            raise ConfigError(
                f"{where}: 'metrics' is required (or [[evaluator]] tables, or an eval set as reference_dataset)"
            )
        data = {"metrics": [], **data}
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        except ConfigError as exc:
            raise ConfigError(f"{where}: {str(exc).removeprefix('online: ')}") from None


def _beside(data: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """``data`` with its relative ``reference_dataset`` paths (its own, its ``[[evaluator]]`` tables') read from
    ``base``, the folder of the file that names them."""

    def placed(table: Any) -> Any:
        path = table.get("reference_dataset") if isinstance(table, dict) else None
        if isinstance(path, str) and not Path(path).is_absolute():
            return {**table, "reference_dataset": str(base / path)}
        return table

    out: dict[str, Any] = placed(dict(data))
    if isinstance(out.get("evaluator"), list):
        out["evaluator"] = [placed(table) for table in out["evaluator"]]
    return out


def _specs(config: OnlineConfig) -> tuple[EvaluatorSpec, ...]:
    """The evaluators ``config`` declares: its ``[[evaluator]]`` tables, each checked, their names distinct; or,
    without tables, the one its top-level evaluator keys declare."""
    defaults = {f.name: f.default for f in fields(OnlineConfig) if f.name in EVALUATOR_KEYS}
    defaults |= {"metrics": [], "attributes": {}, "budget": {}, "aggregate": {}}
    flat = {key: getattr(config, key) for key in EVALUATOR_KEYS}
    if not config.evaluator:
        if not config.metrics and not is_eval_set_path(config.reference_dataset):  # an eval set brings criteria
            raise ConfigError("online: 'metrics' names no metric")
        if config.target == "session" and is_eval_set_path(config.reference_dataset):  # its cases, whole
            flat["reference_dataset"] = config.reference_dataset
        return (evaluator_spec(flat),)
    given = [key for key in EVALUATOR_KEYS if flat[key] != defaults[key]]
    if given:
        raise ConfigError(
            f"online: {', '.join(given)} at the top level beside [[evaluator]] tables: an evaluator's keys go in "
            "its table (the top level holds what they share: references, thresholds, workers, backlog, judge)"
        )
    if is_eval_set_path(config.reference_dataset):
        raise ConfigError(
            "online: an eval set as reference_dataset brings the criteria of one evaluator: use the flat form "
            "(metrics at the top level), not [[evaluator]] tables"
        )
    specs: list[EvaluatorSpec] = []
    for index, table in enumerate(config.evaluator, start=1):
        if not isinstance(table, dict):
            raise refusal("online: ", f"evaluator #{index}", table, "a table ([[evaluator]])")
        shown = repr(table["name"]) if isinstance(table.get("name"), str) and table["name"] else f"#{index}"
        if "name" not in table:
            raise ConfigError(f"online: evaluator {shown}: 'name' is required (it labels the evaluator's results)")
        spec = evaluator_spec(table, f"online: evaluator {shown}: ")
        if not spec.metrics and spec.reference_dataset is None:  # an eval set brings criteria
            raise ConfigError(f"online: evaluator {shown}: 'metrics' names no metric")
        if any(spec.name == other.name for other in specs):
            raise ConfigError(f"online: two evaluators are named {spec.name!r}: each needs a name of its own")
        specs.append(spec)
    return tuple(specs)


def _check_types(config: OnlineConfig) -> None:
    """Each value of the right type and range, whatever wrote it (TOML, a mapping, Python): ``failures_only =
    "no"`` would otherwise be true, ``agent_names = "bot"`` match an agent named ``b``, ``metrics = "x"`` be the
    letters of x. One :class:`ConfigError` naming the key, the value and what it takes."""

    def refuse(key: str, value: Any, wanted: str) -> None:
        raise refusal("online: ", key, value, wanted)

    if not isinstance(config.evaluator, list):
        refuse("evaluator", config.evaluator, "[[evaluator]] tables")
    if not isinstance(config.thresholds, dict) or not all(number(v) for v in config.thresholds.values()):
        refuse("thresholds", config.thresholds, "a table of metric = finite number, e.g. {trajectory_recall = 0.8}")
    if config.judge_traces is not None and not (
        isinstance(config.judge_traces, str) and config.judge_traces.startswith(("http://", "https://"))
    ):
        refuse("judge_traces", config.judge_traces, 'an OTLP/HTTP endpoint, e.g. "http://127.0.0.1:4318"')
    for key in ("reference_dataset", "otlp_endpoint"):
        if getattr(config, key) is not None and not isinstance(getattr(config, key), str):
            refuse(key, getattr(config, key), "a string")
    if not isinstance(config.judge, dict):
        refuse("judge", config.judge, "a table of judge settings")
    for key in ("workers", "batch_size"):
        value = getattr(config, key)
        if not whole(value) and not (key == "batch_size" and value is None):
            refuse(key, value, "a whole number, at least 1")
    if config.max_backlog is not None and not whole(config.max_backlog):
        refuse("max_backlog", config.max_backlog, "a whole number, at least 1")
    if not number(config.lease_seconds) or config.lease_seconds < 1:
        refuse("lease_seconds", config.lease_seconds, "a number of seconds, at least 1")
    if not number(config.poll_seconds) or config.poll_seconds < MIN_POLL_SECONDS:
        refuse("poll_seconds", config.poll_seconds, f"a number of seconds, at least {MIN_POLL_SECONDS}")
    for key in ("match", "shed"):
        if not isinstance(getattr(config, key), str):
            refuse(key, getattr(config, key), "a string")


JUDGED_BATCH = 16
"""Turns a worker scores at once when a judge scores them (a batch's results are stored together, so a judged
batch waits for its slowest call)."""
COMPUTED_BATCH = 64
"""Turns a worker scores at once when only computations do: a batch's claim, reads and writes are shared by its
turns, so a larger one costs less CPU a turn (in process, five metrics: about 150 µs a turn in batches of 16, 90 in
batches of 64: docs/performance.md)."""


def default_batch(judged: bool) -> int:
    """The ``batch_size`` a config that names none gets: :data:`JUDGED_BATCH` when a judge scores its turns
    (``judged``), else :data:`COMPUTED_BATCH`."""
    return JUDGED_BATCH if judged else COMPUTED_BATCH


MIN_POLL_SECONDS = 0.01
"""How often an idle worker looks for jobs, at the most (0 would spin a core waiting)."""
