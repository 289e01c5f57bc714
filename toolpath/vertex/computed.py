"""Vertex AI's computation-based metric classes with Vertex AI's constructors, scored by toolpath's metrics:
``Rouge`` (:func:`toolpath.metrics.text.rouge`) and ``TrajectorySingleToolUse``
(:class:`toolpath.metrics.builtin.TrajectorySingleToolUse`)."""

from __future__ import annotations

from typing import Any

from toolpath.metrics import builtin

__all__ = ["Rouge", "TrajectorySingleToolUse"]


class Rouge(builtin.ResponseMetric):
    """Vertex AI's ``Rouge(rouge_type=…, use_stemmer=…, split_summaries=…)``: the ``rouge`` metric of
    ``response`` against ``reference`` (``rouge/score`` in the table)."""

    def __init__(self, *, rouge_type: str, use_stemmer: Any = False, split_summaries: Any = False) -> None:
        made = builtin.rouge(rouge_type, use_stemmer, split_summaries)
        assert isinstance(made, builtin.ResponseMetric)
        super().__init__(made.name, made.fn, made.params)

    @property
    def metric_name(self) -> str:
        return self.name

    @property
    def rouge_type(self) -> str:
        return str(dict(self.params)["rouge_type"])

    @property
    def use_stemmer(self) -> bool:
        return bool(dict(self.params)["use_stemmer"])

    @property
    def split_summaries(self) -> bool:
        return bool(dict(self.params)["split_summaries"])

    def __str__(self) -> str:
        return self.name


class TrajectorySingleToolUse(builtin.TrajectorySingleToolUse):
    """Vertex AI's ``TrajectorySingleToolUse(tool_name)``: 1 if the predicted trajectory calls ``tool_name``."""

    def __init__(self, tool_name: str) -> None:
        super().__init__(tool_name)

    @property
    def metric_name(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name
