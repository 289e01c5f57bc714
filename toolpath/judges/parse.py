"""Reading a judge model's reply: JSON, even inside a fenced block or with prose around it."""

from __future__ import annotations

import json
import re
from typing import Any

from toolpath.errors import InternalSignal

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


class JudgeParseError(InternalSignal, ValueError):
    """The reply holds no JSON object; ``raw`` keeps what the model said."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


def parse_reply(text: str | None) -> dict[str, Any]:
    """The first JSON object in ``text``: the whole reply, a fenced block, or the first balanced ``{…}``."""
    if not text or not text.strip():
        raise JudgeParseError("empty reply", text or "")
    candidates = [text.strip(), *(block.strip() for block in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return value[0]
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise JudgeParseError("no JSON object in the reply", text)


def brief(raw: str, limit: int = 200) -> str:
    """A reply shortened for an explanation."""
    raw = " ".join(raw.split())
    return raw if len(raw) <= limit else raw[: limit - 1] + "…"
