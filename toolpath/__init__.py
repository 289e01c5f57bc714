"""toolpath: trace which tools your agent called, with what, in what order — and score it.

    import toolpath

    toolpath.init()            # in-process collector writing to sqlite:///toolpath.db

    @toolpath.tool
    def lookup(city: str) -> dict: ...

    @toolpath.agent(name="bot")
    def bot(prompt: str) -> str: ...

    result = toolpath.evaluate("cases.jsonl", ["trajectory_exact_match"], runnable=bot)

The public names are loaded on first use (PEP 562), so ``import toolpath`` — and ``@toolpath.tool`` in a
serverless agent — loads neither SQLAlchemy nor the OpenTelemetry SDK until something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolpath.errors import ConfigError, DatasetError, MetricError, ToolpathError

_LAZY = {
    "agent": "toolpath.adapters.function",
    "tool": "toolpath.adapters.function",
    "Store": "toolpath.store.store",
    "CustomMetric": "toolpath.metrics.base",
    "Metric": "toolpath.metrics.base",
    "metric_names": "toolpath.evaluation.catalog",
    "register_metric": "toolpath.evaluation.catalog",
    "EvalResult": "toolpath.evaluation.runner",
    "evaluate": "toolpath.evaluation.runner",
    "Invocation": "toolpath.model",
    "MetricResult": "toolpath.model",
    "Session": "toolpath.model",
    "ToolCall": "toolpath.model",
    "init": "toolpath.tracing",
    "flush": "toolpath.tracing",
    "shutdown": "toolpath.tracing",
    "stats": "toolpath.tracing",
}

if TYPE_CHECKING:
    __version__: str
    from toolpath.adapters.function import agent, tool
    from toolpath.evaluation.catalog import metric_names, register_metric
    from toolpath.evaluation.runner import EvalResult, evaluate
    from toolpath.metrics.base import CustomMetric, Metric
    from toolpath.model import Invocation, MetricResult, Session, ToolCall
    from toolpath.store.store import Store
    from toolpath.tracing import flush, init, shutdown, stats


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata when asked: importlib.metadata costs start-up
        globals()[name] = _version()
        return globals()[name]
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolpath' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("toolpath")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])


__all__ = [
    "ConfigError",
    "CustomMetric",
    "DatasetError",
    "EvalResult",
    "Invocation",
    "Metric",
    "MetricError",
    "MetricResult",
    "Session",
    "Store",
    "ToolCall",
    "ToolpathError",
    "agent",
    "evaluate",
    "flush",
    "init",
    "metric_names",
    "register_metric",
    "shutdown",
    "stats",
    "tool",
]
