"""Vertex AI's Gen AI evaluation SDK, served by toolpath: ``vertexai.evaluation`` and
``vertexai.preview.evaluation`` code runs here with its imports changed and nothing else.

    from toolpath.vertex import EvalTask, PointwiseMetric, PointwiseMetricPromptTemplate
    from toolpath.vertex.metrics import TrajectorySingleToolUse

The names are loaded on first use, as in :mod:`toolpath`: importing this package loads no store and no SDK.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpath.vertex' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__: list[str] = []
