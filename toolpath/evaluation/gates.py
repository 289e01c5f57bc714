"""Whether a scored dataset passes its gates, for CI: each metric's mean against the user's threshold
(``--threshold metric=value``), else against the metric's own pass mark (its catalog threshold), judged by
:func:`toolpath.evaluation.catalog.passes` and its direction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import describe_rule, passes

__all__ = ["MissedGate", "check_gate_names", "missed_gates"]


@dataclass(frozen=True)
class MissedGate:
    """A metric whose mean missed its pass mark: ``mean`` is ``None`` when no row was scored."""

    name: str
    mean: float | None
    rule: Mapping[str, Any]
    given: bool
    """The user gave the threshold (``--threshold``); otherwise it is the metric's own pass mark."""

    def describe(self) -> str:
        shown = "no score" if self.mean is None else f"mean {self.mean:.3f}"
        whose = "--threshold" if self.given else "its pass mark"
        return f"{self.name}: {shown}, needed {describe_rule(self.rule)} ({whose})"


def check_gate_names(thresholds: Mapping[str, float], names: Sequence[str]) -> None:
    """A threshold for a metric that is not scored would gate nothing: an error before any work."""
    unknown = [name for name in thresholds if name not in names]
    if unknown:
        raise ConfigError(
            f"--threshold {', '.join(unknown)}: not among the metrics scored ({', '.join(names) or 'none'})"
        )


def missed_gates(
    summary: Mapping[str, Any],
    names: Sequence[str],
    rules: Mapping[str, Mapping[str, Any]],
    thresholds: Mapping[str, float] | None = None,
) -> list[MissedGate]:
    """The metrics of ``names`` whose mean (``summary["<name>/mean"]``) misses its threshold: the user's
    (``thresholds``), else the metric's own (``rules``). A metric with no pass mark only measures; one the user
    gave a threshold and that scored no row fails."""
    thresholds = thresholds or {}
    missed = []
    for name in names:
        rule = dict(rules.get(name) or {"threshold": None})
        given = name in thresholds
        if given:
            rule["threshold"] = thresholds[name]
        if rule.get("threshold") is None:
            continue
        mean = summary.get(f"{name}/mean")
        if mean is None and not given:
            continue  # nothing scored: said on its own, as "nothing scored by"
        if not passes(mean, **rule):
            missed.append(MissedGate(name, mean, rule, given))
    return missed
