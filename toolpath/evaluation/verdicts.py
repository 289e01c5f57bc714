"""How a stored run's rows pass or fail, for everything that shows a run (the HTML report, ``toolpath ui``): each
metric's rule as the run saved it (older runs: the catalog's defaults by name), each score's verdict by that rule
and its metric's direction (:func:`toolpath.evaluation.catalog.passes`), and each row's status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from toolpath.evaluation.metric_table import passes
from toolpath.model import EvalStatus


class RunKind(StrEnum):
    """What a stored run evaluated (``eval_runs.kind``), which says how its rows read."""

    DATASET = "dataset"
    """Rows of a dataset, each scored by the run's metrics and their pass rules."""
    EVALSET = "evalset"
    """ADK eval-set cases, each with its own :class:`~toolpath.model.EvalStatus`."""
    REPLAY = "replay"
    """Recorded turns run again, each :class:`ReplayStatus` against its recording."""


class ReplayStatus(StrEnum):
    """A replayed turn's ``eval_results.status``: whether its calls or response differ from its recording."""

    CHANGED = "changed"
    SAME = "same"


class Verdict(StrEnum):
    """The class of one score of a stored run where it is shown (a table cell, a row): the page's CSS class too."""

    PASS = "pass"
    FAIL = "fail"
    NA = "na"
    """No score."""
    NEUTRAL = "neutral"
    """A score with no pass mark."""
    CRASH = "crash"
    """A score of a case whose agent raised: not a measurement of anything (the UI's)."""


_CELLS: dict[str, Verdict] = {EvalStatus.PASSED: Verdict.PASS, EvalStatus.FAILED: Verdict.FAIL}
"""The cell class of an eval-set criterion's status (any other: ``na``)."""
_ROWS: dict[str, tuple[str, str]] = {
    EvalStatus.PASSED: (Verdict.PASS, "passed"),
    EvalStatus.FAILED: (Verdict.FAIL, "failed"),
}


def run_metric_names(run: Mapping[str, Any]) -> list[str]:
    """The metrics a stored run summarised (``<metric>/mean`` keys of its summary)."""
    summary = run.get("summary") or {}
    return sorted({key.rsplit("/", 1)[0] for key in summary if key.endswith("/mean")})


def run_rules(run: Mapping[str, Any], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """How each metric's scores pass, as the run saved it (older runs: the catalog's defaults by name)."""
    saved = run.get("metrics")
    stored = saved.get("rules") if isinstance(saved, Mapping) else None
    from toolpath.evaluation.catalog import metric_info  # the registry (and its metrics) only when asked

    return {n: (stored or {}).get(n) or metric_info(n).rule() for n in names}


def verdicts(
    result: Mapping[str, Any], names: Sequence[str], rules: Mapping[str, Mapping[str, Any]]
) -> dict[str, Verdict]:
    """Per metric, the class of one result's score: ``pass``, ``fail``, ``na`` (no score) or ``neutral`` (no pass
    mark). An eval-set case carries each criterion's own verdict; other rows are judged by the run's rules."""
    scores = result.get("scores") or {}
    criteria = (result.get("row") or {}).get("metrics")
    out = {}
    for name in names:
        criterion = criteria.get(name) if isinstance(criteria, Mapping) else None
        if isinstance(criterion, Mapping) and "status" in criterion:
            out[name] = _CELLS.get(str(criterion["status"]), Verdict.NA)
            continue
        verdict = passes(scores.get(name), **rules[name])
        out[name] = (
            Verdict.NA
            if scores.get(name) is None
            else Verdict.NEUTRAL
            if verdict is None
            else Verdict.PASS
            if verdict
            else Verdict.FAIL
        )
    return out


def format_score(value: Any, missing: str = "—") -> str:
    """A score as tables show it: three decimals, small values (a latency of 0.4 ms) with their digits."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2e}"
    return str(value)


def row_status(run_kind: str, result: Mapping[str, Any], cells: Mapping[str, str]) -> tuple[str, str]:
    """(css class, label) of one result row: a replayed turn changed or not, an eval-set case's status, or else
    failed when any score fails its pass mark, not scored when any is missing, passed otherwise."""
    status = result.get("status")
    if run_kind == RunKind.REPLAY:
        changed = status == ReplayStatus.CHANGED
        return (ReplayStatus.CHANGED, "changed") if changed else (ReplayStatus.SAME, "same")
    if status:
        return _ROWS.get(status, (Verdict.NA, status.lower()))
    kinds = set(cells.values())
    if Verdict.FAIL in kinds:
        return Verdict.FAIL, "failed"
    if Verdict.NA in kinds:
        return Verdict.NA, "not scored"
    return (Verdict.PASS, "passed") if Verdict.PASS in kinds else (Verdict.NEUTRAL, "scored")
