"""How a stored prompt finds the turn it replays: as it is, or normalised (case, Unicode form, whitespace and outer
punctuation aside). Online scoring finds its golden references so (``match`` in ``online.toml``), and recorded
sessions pair with the eval cases they played so (:mod:`toolpath.evaluation.evalsets.recorded_cases`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from enum import StrEnum


class PromptMatch(StrEnum):
    """How a stored prompt finds its golden row (``match`` in ``online.toml``)."""

    EXACT = "exact"
    NORMALIZED = "normalized"
    """As :func:`normalize_prompt` leaves them: case, spacing and outer punctuation aside."""


def normalize_prompt(text: str) -> str:
    """Prompt text for ``match = "normalized"``: NFKC, case-folded, whitespace collapsed, outer punctuation off."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", text).strip(" \t\n.!?;:,\"'")


def prompt_key(match: PromptMatch) -> Callable[[str], str]:
    """What a prompt is looked up by under ``match``: its normalised text, or the text as it is."""
    return normalize_prompt if match == PromptMatch.NORMALIZED else str
