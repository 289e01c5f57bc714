"""Vertex AI's ``CustomOutputConfig`` on toolpath's judge: the judge's replies kept as they are
(``return_raw_output``) and read by the user's ``parsing_fn`` (a list of the samples' raw texts -> a dict whose
``score`` and ``explanation`` are the result and whose other keys become ``<metric>/<key>`` columns), as
Vertex AI's evaluation returns them. The prompt is the template alone: no answer format is added."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from toolpath.judges.client import Ask, JudgeRequest
from toolpath.judges.vertex import TemplateMetric
from toolpath.metrics.base import Row, missing
from toolpath.model import MetricResult

__all__ = ["judge_raw", "wants_raw_output"]


def wants_raw_output(config: Any) -> bool:
    return config is not None and bool(
        getattr(config, "return_raw_output", False) or getattr(config, "parsing_fn", None)
    )


async def judge_raw(metric: TemplateMetric, config: Any, row: Row, ask: Ask) -> MetricResult:
    """One row judged with raw replies; a pairwise template gets the baseline as Response A and the candidate
    as Response B, as Vertex AI shows them (no swapping: the parser reads the positions)."""
    if metric.pairwise:
        responses = {"Response A": _text(row, "baseline_model_response"), "Response B": _text(row, "response")}
    else:
        responses = {"AI-generated Response": _text(row, "response")}
    prompt = metric.template.render(row, responses)
    settings: dict[str, Any] = {}
    if metric.system_instruction is not None:
        settings["system_instruction"] = metric.system_instruction
    if metric.temperature is not None:
        settings["temperature"] = metric.temperature
    given = json.dumps(settings, sort_keys=True) if settings else None
    requests = [
        JudgeRequest(prompt, metric.model, metric.temperature, sample, json_output=False, config=given)
        for sample in range(metric.num_samples)
    ]
    replies = await asyncio.gather(*(ask(request) for request in requests))
    raw = [reply.text or "" for reply in replies if reply.error is None]
    errors = [f"sample {i + 1}: {reply.error}" for i, reply in enumerate(replies) if reply.error is not None]
    if not raw:
        return MetricResult(None, "; ".join(errors), {"judge_errors": errors})
    parse = getattr(config, "parsing_fn", None)
    if parse is None:
        return MetricResult(None, "the judge's raw output is kept (return_raw_output); no score", {"raw_output": raw})
    try:
        parsed = parse(raw)
    except Exception as exc:  # the user's parser failing is this row's error
        return MetricResult(None, f"parsing_fn failed: {type(exc).__name__}: {exc}", {"raw_output": raw})
    if not isinstance(parsed, Mapping):
        return MetricResult(None, f"parsing_fn returned {type(parsed).__name__}, not a dict", {"raw_output": raw})
    score = parsed.get("score")
    try:
        value = None if score is None else float(score)
    except (TypeError, ValueError):
        return MetricResult(None, f"parsing_fn's score {score!r} is not a number", dict(parsed))
    details = {k: v for k, v in parsed.items() if k not in ("score", "explanation")}
    if errors:
        details["judge_errors"] = errors
    explanation = parsed.get("explanation")
    return MetricResult(value, None if explanation is None else str(explanation), details)


def _text(row: Row, column: str) -> str:
    value = row.get(column)
    if value is None:
        raise missing(row, column)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
