"""toolpath: trace which tools your agent called, with what, in what order — and score it.

import toolpath

toolpath.init()            # in-process collector writing to sqlite:///toolpath.db

@toolpath.tool
def lookup(city: str) -> dict: ...

@toolpath.agent(name="bot")
def bot(prompt: str) -> str: ...

result = toolpath.evaluate("cases.jsonl", ["trajectory_exact_match"], runnable=bot)
"""

from toolpath.adapters.function import agent, tool
from toolpath.collector.store import Store
from toolpath.errors import ConfigError, DatasetError, MetricError, ToolpathError
from toolpath.evaluators import CustomMetric, EvalResult, Metric, evaluate, metric_names, register_metric
from toolpath.model import Invocation, MetricResult, Session, ToolCall
from toolpath.runtime import init
from toolpath.tracer import flush, shutdown, stats

__version__ = "0.1.0"

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
