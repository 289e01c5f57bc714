"""Responses generated before scoring (``EvalTask.evaluate(model=…)``, ``PairwiseMetric(baseline_model=…)``):
by a function ``prompt -> text``, or by a Gemini model — a name, or Vertex AI's ``GenerativeModel`` (its model,
generation config and system instruction) — asked through google-genai with the judge's settings (credentials
from the environment, concurrency, retries; no cache: each evaluation asks afresh)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolpath.errors import ConfigError
from toolpath.judges.client import Ask, Judge, JudgeRequest, settings_from

__all__ = ["generate"]

WORKERS = 8
"""Calls of a response function at once."""

Outcome = tuple[str | None, str | None]
"""A generated text, or why there is none."""


def generate(model: Any, prompts: Sequence[str], option: str) -> list[Outcome]:
    """Each prompt's response from ``model`` (a function, a Gemini model name or a ``GenerativeModel``), in
    order; a call that fails is that prompt's error, not the run's end."""
    if callable(model) and not hasattr(model, "_model_name"):
        return _by_function(model, prompts, option)
    name, config = _gemini(model, option)
    return _by_gemini(name, config, prompts, option)


def _by_function(model: Callable[[str], Any], prompts: Sequence[str], option: str) -> list[Outcome]:
    def one(prompt: str) -> Outcome:
        try:
            return str(model(prompt)), None
        except Exception as exc:  # the model failing is this row's result
            return None, f"{option}: {type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="toolpath-vertex") as pool:
        return list(pool.map(one, prompts))


def _gemini(model: Any, option: str) -> tuple[str, str | None]:
    """The model's name and its generation config (google-genai's ``GenerateContentConfig`` as JSON)."""
    if isinstance(model, str):
        if not model.strip():
            raise ConfigError(f"{option}: empty model name")
        return model.rsplit("models/", 1)[-1], None
    name = getattr(model, "_model_name", None)
    if not isinstance(name, str):
        raise ConfigError(
            f"{option}={type(model).__name__}: give a function prompt -> text, a Gemini model name or a GenerativeModel"
        )
    config: dict[str, Any] = {}
    generation = getattr(model, "_generation_config", None)
    if generation is not None:
        config.update(generation if isinstance(generation, dict) else generation.to_dict())
    instruction = getattr(model, "_system_instruction", None)
    if instruction is not None:
        if not isinstance(instruction, str):
            raise ConfigError(f"{option}: only a text system_instruction can be sent through google-genai")
        config["system_instruction"] = instruction
    if getattr(model, "_tools", None) or getattr(model, "_safety_settings", None):
        raise ConfigError(
            f"{option}: a GenerativeModel with tools or safety settings is not supported; give a function"
        )
    return name.rsplit("models/", 1)[-1], json.dumps(config, sort_keys=True) if config else None


def _by_gemini(name: str, config: str | None, prompts: Sequence[str], option: str) -> list[Outcome]:
    judge = Judge(settings_from(None), cache=None)

    async def work(ask: Ask) -> list[Any]:
        requests = [
            JudgeRequest(prompt, name, None, 0, json_output=False, config=config, namespace="vertex-model")
            for prompt in prompts
        ]
        return list(await asyncio.gather(*(ask(r) for r in requests)))

    replies = judge.run(work)
    return [(r.text, None) if r.error is None else (None, f"{option}: {r.error}") for r in replies]
