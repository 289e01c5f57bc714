"""The golden references online scoring compares a stored turn with, found by its prompt."""

from __future__ import annotations

from typing import Any

from toolpath.evaluation.like_with_like import RedactedReferences
from toolpath.evaluation.prompt_match import PromptMatch, prompt_key
from toolpath.redact import Redactor


class References(RedactedReferences):
    """Golden rows by prompt (exact or normalised)."""

    def __init__(
        self, dataset: str | None, match: PromptMatch, rules: Redactor | None = None, store: Any = None
    ) -> None:
        """``rules``: the store's redaction rules; each reference is redacted by them (with ``store``'s pseudonym
        key, read when first needed) to be compared with stored values."""
        super().__init__(prompt_key(match), rules, store)
        self.match = match
        if dataset:
            from toolpath.datasets import load_rows

            for row in load_rows(dataset):
                if isinstance(row.get("prompt"), str):
                    self.by_prompt.setdefault(self._key(row["prompt"]), row)
