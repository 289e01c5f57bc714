"""Helpers for users' own test suites.

    from toolpath.testing import assert_evalset

    def test_weather_agent():
        assert_evalset(my_agent, "tests/weather.evalset.json")

The ADK ``AgentEvaluator.evaluate`` habit: run an eval set (file, ``file.evalset.json:case_a,case_b``, or
folder) against the agent and fail the test, naming every failing case, criterion, threshold and score, and every
case whose agent raised (that run is not scored: the case fails, as in ADK). A
criterion toolpath does not know (a typo in ``test_config.json``) raises :class:`~toolpath.errors.ConfigError`
listing the known ones, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolpath import tracing
from toolpath.evaluation.evalsets.evaluator import FAILED, EvalSetResult, evaluate_eval_sets
from toolpath.evaluation.evalsets.files import load_eval_sets

__all__ = ["assert_evalset"]


def assert_evalset(
    agent: Any, path: str | Path, config: str | Path | None = None, runs: int = 1, *, timeout: float = 30.0
) -> EvalSetResult:
    """Run the eval set(s) at ``path`` against ``agent``; raise ``AssertionError`` if any case fails.

    Tracing is started without a store if the test has not started it. Returns the result when all pass.
    """
    eval_sets = load_eval_sets(path, config)
    tracing.current() or tracing.init(store=False)
    result = evaluate_eval_sets(eval_sets, agent, runs=runs, timeout=timeout)
    failures = []
    for case in result.cases:
        if case.status != FAILED:
            continue
        if case.error is not None:  # a run that raised: failed with no scores, as ADK's failed inference
            failures.append(f"{case.eval_set_id}/{case.eval_id}: {case.error}")
        for name, metric in case.metrics.items():
            if metric.status == FAILED:
                reason = f": {metric.explanation}" if metric.explanation else ""
                failures.append(
                    f"{case.eval_set_id}/{case.eval_id}: {name} = {metric.score:.3f} "
                    f"< threshold {metric.threshold:g}{reason}"
                )
    if failures:
        raise AssertionError(f"{len(failures)} failing criteria in {path}:\n" + "\n".join(failures))
    return result
