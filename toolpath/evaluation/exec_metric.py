"""Custom metrics in any language: ``exec:./my_metric.sh`` is a metric whose score an executable gives.

For each row, the executable is started directly (its argv is the path alone: never a shell, so nothing in a row
or a path is interpreted), is given the row as one JSON object on its standard input (trajectory cells as lists
of ``{"tool_name", "tool_input"}``, as a Python custom metric gets them), and writes one JSON object on its
standard output: ``{"score": number or null, "explanation": "..."}``. A row it cannot score — it exits non-zero,
runs past its timeout, or writes anything else — gets score null with the reason, and the other rows go on."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from toolpath.errors import MetricError
from toolpath.metrics.base import Metric, parse_spec, plain_row
from toolpath.model import MetricResult

__all__ = ["DEFAULT_TIMEOUT", "PREFIX", "ExecMetric", "exec_metric"]

PREFIX = "exec:"
DEFAULT_TIMEOUT = 30.0
"""Seconds one row may take."""
_NAME = re.compile(r"[^\w.-]+")
_SAID = 300
"""The most characters of an executable's error output a result quotes."""


class ExecMetric(Metric):
    """A metric scored by an executable, one process per row (see the module's description)."""

    def __init__(self, path: str | Path, *, name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        given = Path(path)
        where = f"{PREFIX}{path}"
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
            raise MetricError(f"{where}: timeout must be a number of seconds from 0 to 3600, got {timeout!r}")
        if not given.is_file():
            raise MetricError(f"{where}: no such file")
        if not os.access(given, os.X_OK):
            raise MetricError(f"{where}: not executable (chmod +x it, with a #! line naming its interpreter)")
        self.path = given.resolve()  # the rows are scored wherever the process is then
        self.timeout = float(timeout)
        self.name = name or _NAME.sub("_", given.stem).strip("_") or "exec_metric"

    def score(self, row: Any) -> MetricResult:
        payload = json.dumps(plain_row(row), ensure_ascii=False, default=str)
        try:
            done = subprocess.run(  # the argv of the user's executable alone: no shell
                [str(self.path)], input=payload, capture_output=True, text=True, timeout=self.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise MetricError(f"{self.path.name} timed out after {self.timeout:g}s") from None
        except OSError as exc:
            raise MetricError(f"{self.path.name} could not start: {exc.strerror or exc}") from None
        if done.returncode != 0:
            said = done.stderr.strip()[-_SAID:]
            raise MetricError(f"{self.path.name} exited with {done.returncode}" + (f": {said}" if said else ""))
        return _result(self.path.name, done.stdout)


def _result(name: str, stdout: str) -> MetricResult:
    try:
        reply = json.loads(stdout)
    except json.JSONDecodeError:
        shown = stdout.strip()[:_SAID] or "nothing"
        raise MetricError(f"{name} wrote {shown!r}, not a JSON object with a score") from None
    if not isinstance(reply, dict) or "score" not in reply:
        raise MetricError(f"{name} wrote {json.dumps(reply)[:_SAID]}, not a JSON object with a score")
    score, explanation = reply["score"], reply.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        explanation = json.dumps(explanation)
    if score is None:
        return MetricResult.not_evaluated(explanation or f"{name} gave no score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise MetricError(f"{name} gave score {score!r}, not a finite number")
    details = {k: v for k, v in reply.items() if k not in ("score", "explanation")}
    return MetricResult(score=float(score), explanation=explanation, details=details)


def exec_metric(spec: str) -> ExecMetric:
    """``exec:PATH`` or ``exec:PATH(name=…, timeout=…)`` as its metric."""
    body = spec.strip()[len(PREFIX) :]
    path, params = body, dict[str, Any]()
    if body.endswith(")") and "(" in body:
        path, _, inner = body.partition("(")
        _, params = parse_spec(f"x({inner}")
    unknown = set(params) - {"name", "timeout"}
    if unknown:
        raise MetricError(f"{spec}: takes name= and timeout=, not {', '.join(sorted(unknown))}")
    if not path.strip():
        raise MetricError(f"{spec}: give the executable's path, e.g. exec:./my_metric.sh")
    return ExecMetric(path.strip(), name=params.get("name"), timeout=params.get("timeout", DEFAULT_TIMEOUT))
